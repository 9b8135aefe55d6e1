-- +goose Up
-- The id of the last line of the access journal (the file beside the
-- store where answers write their entries first) folded into access_log,
-- written with the lines, so that a fold cut short after its commit does
-- not fold them again.
CREATE TABLE access_journal (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    last_line INTEGER NOT NULL
);

-- +goose Down
DROP TABLE access_journal;
