-- +goose Up
-- The roster's id of a staff member a roster import brought (NULL for one
-- the operator added): later imports find them by it, and a bulk file
-- takes away those it no longer names.
ALTER TABLE staff ADD COLUMN sourced_id TEXT;
CREATE UNIQUE INDEX staff_from_roster ON staff (group_id, sourced_id) WHERE sourced_id IS NOT NULL AND group_id IS NOT NULL;
CREATE UNIQUE INDEX district_staff_from_roster ON staff (district_id, sourced_id) WHERE sourced_id IS NOT NULL AND district_id IS NOT NULL;

-- +goose Down
DROP INDEX district_staff_from_roster;
DROP INDEX staff_from_roster;
ALTER TABLE staff DROP COLUMN sourced_id;
