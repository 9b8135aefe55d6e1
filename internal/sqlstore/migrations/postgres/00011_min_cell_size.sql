-- +goose Up
-- A school's minCellSize: its group reports' figures that fewer students
-- make up are hidden (0: off).
ALTER TABLE groups ADD COLUMN min_cell_size INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE groups DROP COLUMN min_cell_size;
