-- +goose Up
-- Erasing a student is rare; ingestion is constant. The index made every
-- event a second, randomly placed B-tree insert; erasure now scans the
-- group's events instead.
DROP INDEX events_by_student;

-- +goose Down
CREATE INDEX events_by_student ON events (group_id, student_id);
