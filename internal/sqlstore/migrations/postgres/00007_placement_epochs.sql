-- +goose Up
-- A placement's epoch, drawn at random when the group is first placed:
-- a group deleted and created again under its id is another group, whose
-- writes are numbered anew, and no state a process keeps of the old one
-- may stand for it.
ALTER TABLE usage_placements ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE usage_placements DROP COLUMN epoch;
