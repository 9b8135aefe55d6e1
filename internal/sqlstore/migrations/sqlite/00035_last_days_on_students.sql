-- +goose Up
-- A student's last days of use live on their enrolment (a row of counts
-- of one student, rollup.EncodeLastDays), NULL until their first event:
-- a new student's first event writes them in the row that enrols and
-- numbers them, where a row of last days per chunk of students cost
-- PostgreSQL's writes a row read and written more. Migration 36 moves
-- the rows of span 3 there. students_updated, on name and ordinal,
-- leaves the roster's version alone when only last days change.
ALTER TABLE students ADD COLUMN last_days BLOB;

-- +goose Down
ALTER TABLE students DROP COLUMN last_days;
