-- +goose Up
-- roster_versions counts the changes to each group's students and to
-- their ordinals, whatever writes them (the triggers below, once per
-- statement), so that a process may keep a group's students between
-- reports and learn with one small read that another write, in any
-- process, made them stale.
CREATE TABLE roster_versions (
    group_id TEXT PRIMARY KEY,
    version  BIGINT NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION bump_roster_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO roster_versions (group_id, version)
        SELECT group_id, 1 FROM (SELECT DISTINCT group_id FROM changed) AS g ORDER BY group_id
        ON CONFLICT (group_id) DO UPDATE SET version = roster_versions.version + 1;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER students_inserted AFTER INSERT ON students REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER students_renamed AFTER UPDATE ON students REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER students_deleted AFTER DELETE ON students REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER ordinals_inserted AFTER INSERT ON usage_students REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER ordinals_deleted AFTER DELETE ON usage_students REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();

-- +goose Down
DROP TRIGGER ordinals_deleted ON usage_students;
DROP TRIGGER ordinals_inserted ON usage_students;
DROP TRIGGER students_deleted ON students;
DROP TRIGGER students_renamed ON students;
DROP TRIGGER students_inserted ON students;
DROP FUNCTION bump_roster_versions();
DROP TABLE roster_versions;
