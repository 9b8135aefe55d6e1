-- +goose Up
-- roster_versions also counts each group's students, kept by the triggers
-- that count their changes, so that adoption's enrolment of a district's
-- schools reads a row a school rather than counting their students.
ALTER TABLE roster_versions ADD COLUMN students BIGINT NOT NULL DEFAULT 0;
INSERT INTO roster_versions (group_id, version, students)
    SELECT group_id, 1, count(*) FROM students GROUP BY group_id
    ON CONFLICT (group_id) DO UPDATE SET students = excluded.students;

-- +goose StatementBegin
CREATE FUNCTION count_roster_students() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO roster_versions (group_id, version, students)
        SELECT group_id, 1, CASE TG_OP WHEN 'INSERT' THEN count(*) ELSE -count(*) END
        FROM changed GROUP BY group_id ORDER BY group_id
        ON CONFLICT (group_id) DO UPDATE SET version = roster_versions.version + 1,
            students = roster_versions.students + excluded.students;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER students_inserted ON students;
DROP TRIGGER students_deleted ON students;
CREATE TRIGGER students_inserted AFTER INSERT ON students REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION count_roster_students();
CREATE TRIGGER students_deleted AFTER DELETE ON students REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION count_roster_students();

-- +goose Down
DROP TRIGGER students_deleted ON students;
DROP TRIGGER students_inserted ON students;
CREATE TRIGGER students_inserted AFTER INSERT ON students REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER students_deleted AFTER DELETE ON students REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
DROP FUNCTION count_roster_students();
ALTER TABLE roster_versions DROP COLUMN students;
