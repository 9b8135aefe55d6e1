-- +goose Up
-- A student's ordinal (their number in the rollups' student sets) lives
-- on their enrolment rather than in a table of its own: a new student's
-- first event writes one row, not two, and reading a student's name and
-- number is one lookup. NULL until their first event. A student is never
-- numbered without being enrolled (an event enrols its student, and
-- erasure removes both), so every usage_students row has its student.
ALTER TABLE students ADD COLUMN ordinal INTEGER;

UPDATE students SET ordinal = (SELECT u.ordinal FROM usage_students u
    WHERE u.group_id = students.group_id AND u.student_id = students.student_id);

-- Defensive: a numbered student without an enrolment keeps their number.
INSERT INTO students (group_id, student_id, name, ordinal)
    SELECT u.group_id, u.student_id, u.student_id, u.ordinal FROM usage_students u
    WHERE EXISTS (SELECT 1 FROM groups g WHERE g.group_id = u.group_id)
        AND NOT EXISTS (SELECT 1 FROM students s WHERE s.group_id = u.group_id AND s.student_id = u.student_id);

DROP TABLE usage_students;

-- Numbering a student changes the group's roster as renaming does.
DROP TRIGGER students_renamed;
-- +goose StatementBegin
CREATE TRIGGER students_updated AFTER UPDATE OF name, ordinal ON students BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER students_updated;
-- +goose StatementBegin
CREATE TRIGGER students_renamed AFTER UPDATE OF name ON students BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
CREATE TABLE usage_students (
    group_id   TEXT NOT NULL,
    student_id TEXT NOT NULL,
    ordinal    INTEGER NOT NULL,
    PRIMARY KEY (group_id, student_id)
) WITHOUT ROWID;
INSERT INTO usage_students (group_id, student_id, ordinal)
    SELECT group_id, student_id, ordinal FROM students WHERE ordinal IS NOT NULL;
-- +goose StatementBegin
CREATE TRIGGER ordinals_inserted AFTER INSERT ON usage_students BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ordinals_deleted AFTER DELETE ON usage_students BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (OLD.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
ALTER TABLE students DROP COLUMN ordinal;
