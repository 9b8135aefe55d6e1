-- +goose Up
-- A group's roster is its students and its classes: the changes to its
-- classes and their members count in roster_versions too, so that a
-- process may keep a group's classes between reports as it keeps its
-- students.

-- +goose StatementBegin
CREATE TRIGGER classes_inserted AFTER INSERT ON classes BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER classes_updated AFTER UPDATE ON classes BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER classes_deleted AFTER DELETE ON classes BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (OLD.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER members_inserted AFTER INSERT ON class_members BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER members_deleted AFTER DELETE ON class_members BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (OLD.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER members_deleted;
DROP TRIGGER members_inserted;
DROP TRIGGER classes_deleted;
DROP TRIGGER classes_updated;
DROP TRIGGER classes_inserted;
