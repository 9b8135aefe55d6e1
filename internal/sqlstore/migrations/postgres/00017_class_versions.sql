-- +goose Up
-- A group's roster is its students and its classes: the changes to its
-- classes and their members count in roster_versions too, so that a
-- process may keep a group's classes between reports as it keeps its
-- students.
CREATE TRIGGER classes_inserted AFTER INSERT ON classes REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER classes_updated AFTER UPDATE ON classes REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER classes_deleted AFTER DELETE ON classes REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER members_inserted AFTER INSERT ON class_members REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();
CREATE TRIGGER members_deleted AFTER DELETE ON class_members REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION bump_roster_versions();

-- +goose Down
DROP TRIGGER members_deleted ON class_members;
DROP TRIGGER members_inserted ON class_members;
DROP TRIGGER classes_deleted ON classes;
DROP TRIGGER classes_updated ON classes;
DROP TRIGGER classes_inserted ON classes;
