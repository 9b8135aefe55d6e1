-- +goose Up
-- A school's retention: how many days of usage it keeps (0: all), and the
-- cut its last retention run made (the first day kept; NULL: none ran),
-- which a run claims under the group's write lock so that processes do
-- not run the same cut twice. A retention run's receipt names its cut.
ALTER TABLE groups ADD COLUMN retention_days INTEGER NOT NULL DEFAULT 0;
ALTER TABLE groups ADD COLUMN kept_from INTEGER;
ALTER TABLE deletion_receipts ADD COLUMN kept_from INTEGER;

-- +goose Down
ALTER TABLE deletion_receipts DROP COLUMN kept_from;
ALTER TABLE groups DROP COLUMN kept_from;
ALTER TABLE groups DROP COLUMN retention_days;
