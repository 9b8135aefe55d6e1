-- +goose Up
-- district_versions counts the changes to each district's schools and
-- their plans (the triggers below), so that a process may keep what a
-- district's key opens between requests and learn in the key's own query
-- that another write, in any process, made it stale. A district's row
-- stays when it is deleted: a district made again under its id goes on
-- counting, and never meets what was kept of the old one.
CREATE TABLE district_versions (
    district_id TEXT PRIMARY KEY,
    version     BIGINT NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION bump_district_version(district TEXT) RETURNS void LANGUAGE sql AS $$
    INSERT INTO district_versions (district_id, version) SELECT district, 1 WHERE district IS NOT NULL
        ON CONFLICT (district_id) DO UPDATE SET version = district_versions.version + 1;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION district_school_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM bump_district_version(NEW.district_id);
    ELSE
        PERFORM bump_district_version(OLD.district_id);
        IF TG_OP = 'UPDATE' AND NEW.district_id IS DISTINCT FROM OLD.district_id THEN
            PERFORM bump_district_version(NEW.district_id);
        END IF;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION district_plan_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM bump_district_version((SELECT district_id FROM groups WHERE group_id = OLD.group_id));
    ELSE
        PERFORM bump_district_version((SELECT district_id FROM groups WHERE group_id = NEW.group_id));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER district_school_changed AFTER INSERT OR UPDATE OR DELETE ON groups
    FOR EACH ROW EXECUTE FUNCTION district_school_changed();
CREATE TRIGGER district_plan_changed AFTER INSERT OR UPDATE OR DELETE ON plans
    FOR EACH ROW EXECUTE FUNCTION district_plan_changed();

-- +goose Down
DROP TRIGGER district_plan_changed ON plans;
DROP TRIGGER district_school_changed ON groups;
DROP FUNCTION district_plan_changed();
DROP FUNCTION district_school_changed();
DROP FUNCTION bump_district_version(TEXT);
DROP TABLE district_versions;
