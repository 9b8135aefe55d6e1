-- +goose Up
-- A group's inactiveAfter: the days without use after which a student who
-- used the service counts as stopped (analytics.LastUse.Status).
ALTER TABLE groups ADD COLUMN inactive_after INTEGER NOT NULL DEFAULT 7;

-- +goose Down
ALTER TABLE groups DROP COLUMN inactive_after;
