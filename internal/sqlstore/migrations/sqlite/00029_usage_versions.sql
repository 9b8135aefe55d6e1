-- +goose Up
-- usage_versions counts the writes of each group's rollups, whatever
-- writes them (appends and folds, erasures, rebuilds, retention cuts:
-- the triggers below), so that a process may keep what it made of a
-- school's rollups (a district's figures) and learn with one small read
-- of many schools which were written since. A group's row goes with the
-- group: one made again under its id counts anew, and is told apart from
-- the old one by its creation.
CREATE TABLE usage_versions (
    group_id TEXT PRIMARY KEY,
    version  INTEGER NOT NULL
) WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER group_rollups_inserted AFTER INSERT ON group_rollups BEGIN
    INSERT INTO usage_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER group_rollups_updated AFTER UPDATE ON group_rollups BEGIN
    INSERT INTO usage_versions (group_id, version) VALUES (NEW.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER group_rollups_deleted AFTER DELETE ON group_rollups BEGIN
    INSERT INTO usage_versions (group_id, version) VALUES (OLD.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER group_rollups_deleted;
DROP TRIGGER group_rollups_updated;
DROP TRIGGER group_rollups_inserted;
DROP TABLE usage_versions;
