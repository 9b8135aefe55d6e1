-- +goose Up
-- A student's last days of use live on their enrolment (a row of counts
-- of one student, rollup.EncodeLastDays), NULL until their first event:
-- a new student's first event writes them in the row that enrols and
-- numbers them, where a row of last days per chunk of students cost each
-- write a row read and written more. Migration 36 moves the rows of span
-- 3 there.
ALTER TABLE students ADD COLUMN last_days BYTEA;

-- The roster's version counts changes of a student's name and ordinal,
-- not of their last days, which change as events arrive: a report keeps
-- the roster it read while usage comes in.
-- +goose StatementBegin
CREATE FUNCTION bump_changed_rosters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO roster_versions (group_id, version)
        SELECT group_id, 1 FROM (SELECT DISTINCT n.group_id FROM new_rows n
            JOIN old_rows o ON o.group_id = n.group_id AND o.student_id = n.student_id
            WHERE n.name IS DISTINCT FROM o.name OR n.ordinal IS DISTINCT FROM o.ordinal) AS g ORDER BY group_id
        ON CONFLICT (group_id) DO UPDATE SET version = roster_versions.version + 1;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TRIGGER students_renamed ON students;
CREATE TRIGGER students_renamed AFTER UPDATE ON students REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bump_changed_rosters();

-- +goose Down
DROP TRIGGER students_renamed ON students;
CREATE TRIGGER students_renamed AFTER UPDATE ON students REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
DROP FUNCTION bump_changed_rosters();
ALTER TABLE students DROP COLUMN last_days;
