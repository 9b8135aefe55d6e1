-- +goose Up
-- district_versions counts the changes to each district's schools and
-- their plans (the triggers below), so that a process may keep what a
-- district's key opens between requests and learn in the key's own query
-- that another write, in any process, made it stale. A district's row
-- stays when it is deleted: a district made again under its id goes on
-- counting, and never meets what was kept of the old one.
CREATE TABLE district_versions (
    district_id TEXT PRIMARY KEY,
    version     INTEGER NOT NULL
) WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER district_school_inserted AFTER INSERT ON groups WHEN NEW.district_id IS NOT NULL BEGIN
    INSERT INTO district_versions (district_id, version) VALUES (NEW.district_id, 1)
        ON CONFLICT (district_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER district_school_updated AFTER UPDATE ON groups WHEN NEW.district_id IS NOT NULL BEGIN
    INSERT INTO district_versions (district_id, version) VALUES (NEW.district_id, 1)
        ON CONFLICT (district_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER district_school_left AFTER UPDATE ON groups WHEN OLD.district_id IS NOT NULL BEGIN
    INSERT INTO district_versions (district_id, version) VALUES (OLD.district_id, 1)
        ON CONFLICT (district_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER district_school_deleted AFTER DELETE ON groups WHEN OLD.district_id IS NOT NULL BEGIN
    INSERT INTO district_versions (district_id, version) VALUES (OLD.district_id, 1)
        ON CONFLICT (district_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER district_plan_inserted AFTER INSERT ON plans BEGIN
    INSERT INTO district_versions (district_id, version)
        SELECT district_id, 1 FROM groups WHERE group_id = NEW.group_id AND district_id IS NOT NULL
        ON CONFLICT (district_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER district_plan_updated AFTER UPDATE ON plans BEGIN
    INSERT INTO district_versions (district_id, version)
        SELECT district_id, 1 FROM groups WHERE group_id = NEW.group_id AND district_id IS NOT NULL
        ON CONFLICT (district_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER district_plan_deleted AFTER DELETE ON plans BEGIN
    INSERT INTO district_versions (district_id, version)
        SELECT district_id, 1 FROM groups WHERE group_id = OLD.group_id AND district_id IS NOT NULL
        ON CONFLICT (district_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER district_plan_deleted;
DROP TRIGGER district_plan_updated;
DROP TRIGGER district_plan_inserted;
DROP TRIGGER district_school_deleted;
DROP TRIGGER district_school_left;
DROP TRIGGER district_school_updated;
DROP TRIGGER district_school_inserted;
DROP TABLE district_versions;
