-- +goose Up
-- A digest recipient may be a class's teacher: class_id names the class
-- whose digest they get (NULL: the school's). Deleting the class removes
-- them, rather than leave them the whole school's.
ALTER TABLE digest_recipients ADD COLUMN class_id TEXT,
    ADD FOREIGN KEY (group_id, class_id) REFERENCES classes (group_id, class_id) ON DELETE CASCADE;

-- +goose Down
ALTER TABLE digest_recipients DROP COLUMN class_id;
