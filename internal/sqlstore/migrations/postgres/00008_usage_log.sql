-- +goose Up
-- The write-behind log of a usage store on ClickHouse: events acknowledged
-- to the platform and not yet written to ClickHouse, which takes them in
-- large batches behind it. Unused by the SQL usage store.
CREATE TABLE usage_log (
    id           BIGSERIAL PRIMARY KEY,
    group_id     TEXT NOT NULL REFERENCES groups (group_id),
    event_id     TEXT NOT NULL,
    student_id   TEXT NOT NULL,
    student_name TEXT NOT NULL,
    occurred_at  BIGINT NOT NULL, -- Unix milliseconds
    metric       SMALLINT NOT NULL,
    logged_at    BIGINT NOT NULL, -- Unix milliseconds
    UNIQUE (group_id, event_id)
);

-- +goose Down
DROP TABLE usage_log;
