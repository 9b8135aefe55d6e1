-- +goose Up
-- The stored events whose share of the rollups is not written yet: an
-- append of a few events writes its events and one row each here, and
-- the writer folds each school's rows into the rollups about once a
-- second (or a read of the school folds them first), so that a rollup row
-- the firehose's many appends share is written once for all of them. The
-- day is cut in the group's zone under its write lock.
CREATE TABLE rollups_behind (
    seq        INTEGER PRIMARY KEY,
    group_id   TEXT NOT NULL,
    student_id TEXT NOT NULL,
    day        INTEGER NOT NULL,
    metric     INTEGER NOT NULL,
    noted_at   INTEGER NOT NULL -- Unix milliseconds
);

-- +goose Down
-- Stop the service first: a clean stop folds every row, and a row left
-- here would be missing from the rollups after this.
DROP TABLE rollups_behind;
