-- +goose Up
-- Where each group's usage lives when the usage store is sharded
-- (ClickHouse), the number of its last write, and the intent of a write
-- that has not committed. Unused by the SQL usage store.
CREATE TABLE usage_placements (
    group_id TEXT PRIMARY KEY REFERENCES groups (group_id),
    shard    TEXT NOT NULL,
    seq      INTEGER NOT NULL DEFAULT 0,
    intent   TEXT
);

-- +goose Down
DROP TABLE usage_placements;
