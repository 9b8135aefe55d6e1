-- +goose Up
-- How many students a plan covers (NULL: it does not say): adoption
-- reports the share of seats used, and whether more students used the
-- service than the plan covers.
ALTER TABLE plans ADD COLUMN seats INTEGER;

-- +goose Down
ALTER TABLE plans DROP COLUMN seats;
