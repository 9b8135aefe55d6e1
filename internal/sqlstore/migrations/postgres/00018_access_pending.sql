-- +goose Up
-- Access log entries not yet folded into access_log. An answer writes its
-- entry here: one row, no index, no foreign key, committed without waiting
-- for the disk. Every serving process folds the rows into access_log within
-- a second, in one synced transaction that names only the students still
-- enrolled then (BENCHMARKS.md, the access log).
CREATE TABLE access_pending (
    group_id TEXT NOT NULL,
    entry    TEXT NOT NULL -- a JSON array: access_log's columns, the students named last
);

-- +goose Down
DROP TABLE access_pending;
