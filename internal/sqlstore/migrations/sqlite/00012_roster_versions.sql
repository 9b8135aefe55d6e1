-- +goose Up
-- roster_versions counts the changes to each group's students and to
-- their ordinals, whatever writes them (the triggers below), so that a
-- process may keep a group's students between reports and learn with one
-- small read that another write, in any process, made them stale.
CREATE TABLE roster_versions (
    group_id TEXT PRIMARY KEY,
    version  INTEGER NOT NULL
) WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER students_inserted AFTER INSERT ON students BEGIN
    INSERT INTO roster_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER students_renamed AFTER UPDATE OF name ON students BEGIN
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

-- +goose Down
DROP TRIGGER ordinals_deleted;
DROP TRIGGER ordinals_inserted;
DROP TRIGGER students_deleted;
DROP TRIGGER students_renamed;
DROP TRIGGER students_inserted;
DROP TABLE roster_versions;
