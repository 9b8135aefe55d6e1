-- +goose Up
-- roster_versions also counts each group's students, kept by the triggers
-- that count their changes, so that adoption's enrolment of a district's
-- schools reads a row a school rather than counting their students.
ALTER TABLE roster_versions ADD COLUMN students INTEGER NOT NULL DEFAULT 0;
INSERT INTO roster_versions (group_id, version, students)
    SELECT group_id, 1, count(*) FROM students WHERE true GROUP BY group_id
    ON CONFLICT (group_id) DO UPDATE SET students = excluded.students;

DROP TRIGGER students_inserted;
DROP TRIGGER students_deleted;
-- +goose StatementBegin
CREATE TRIGGER students_inserted AFTER INSERT ON students BEGIN
    INSERT INTO roster_versions (group_id, version, students) VALUES (NEW.group_id, 1, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1, students = students + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER students_deleted AFTER DELETE ON students BEGIN
    INSERT INTO roster_versions (group_id, version, students) VALUES (OLD.group_id, 1, 0)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1, students = students - 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER students_deleted;
DROP TRIGGER students_inserted;
-- +goose StatementBegin
CREATE TRIGGER students_inserted AFTER INSERT ON students BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER students_deleted AFTER DELETE ON students BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (OLD.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
ALTER TABLE roster_versions DROP COLUMN students;
