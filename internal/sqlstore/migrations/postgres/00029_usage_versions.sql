-- +goose Up
-- usage_versions counts the writes of each group's rollups, whatever
-- writes them (appends, erasures, rebuilds, retention cuts: the triggers
-- below, once per statement), so that a process may keep what it made of
-- a school's rollups (a district's figures) and learn with one small read
-- of many schools which were written since. A group's row goes with the
-- group: one made again under its id counts anew, and is told apart from
-- the old one by its creation.
CREATE TABLE usage_versions (
    group_id TEXT PRIMARY KEY,
    version  BIGINT NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION bump_usage_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_versions (group_id, version)
        SELECT group_id, 1 FROM (SELECT DISTINCT group_id FROM changed) AS g ORDER BY group_id
        ON CONFLICT (group_id) DO UPDATE SET version = usage_versions.version + 1;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER group_rollups_inserted AFTER INSERT ON group_rollups REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_usage_versions();
CREATE TRIGGER group_rollups_updated AFTER UPDATE ON group_rollups REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_usage_versions();
CREATE TRIGGER group_rollups_deleted AFTER DELETE ON group_rollups REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_usage_versions();

-- +goose Down
DROP TRIGGER group_rollups_deleted ON group_rollups;
DROP TRIGGER group_rollups_updated ON group_rollups;
DROP TRIGGER group_rollups_inserted ON group_rollups;
DROP FUNCTION bump_usage_versions();
DROP TABLE usage_versions;
