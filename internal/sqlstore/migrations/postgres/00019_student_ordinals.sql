-- +goose Up
-- A student's ordinal (their number in the rollups' student sets) lives
-- on their enrolment rather than in a table of its own: a new student's
-- first event writes one row, not two, and reading a student's name and
-- number is one lookup. NULL until their first event. A student is never
-- numbered without being enrolled (an event enrols its student, and
-- erasure removes both). The trigger on UPDATE of students counts the
-- numbering in roster_versions.
ALTER TABLE students ADD COLUMN ordinal INTEGER;

UPDATE students s SET ordinal = u.ordinal FROM usage_students u
    WHERE u.group_id = s.group_id AND u.student_id = s.student_id;

-- Defensive: a numbered student without an enrolment keeps their number.
INSERT INTO students (group_id, student_id, name, ordinal)
    SELECT u.group_id, u.student_id, u.student_id, u.ordinal FROM usage_students u
    WHERE EXISTS (SELECT 1 FROM groups g WHERE g.group_id = u.group_id)
        AND NOT EXISTS (SELECT 1 FROM students s WHERE s.group_id = u.group_id AND s.student_id = u.student_id);

DROP TABLE usage_students;

-- +goose Down
CREATE TABLE usage_students (
    group_id   TEXT NOT NULL,
    student_id TEXT NOT NULL,
    ordinal    INTEGER NOT NULL,
    PRIMARY KEY (group_id, student_id)
);
INSERT INTO usage_students (group_id, student_id, ordinal)
    SELECT group_id, student_id, ordinal FROM students WHERE ordinal IS NOT NULL;
CREATE TRIGGER ordinals_inserted AFTER INSERT ON usage_students REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER ordinals_deleted AFTER DELETE ON usage_students REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
ALTER TABLE students DROP COLUMN ordinal;
