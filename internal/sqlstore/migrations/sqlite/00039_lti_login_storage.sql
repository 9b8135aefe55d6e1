-- +goose Up
-- A launch's login remembers the platform's storage it was offered (LTI
-- client-side postMessages: the frame to keep its state in, where the
-- browser keeps no cookie of the tool in the LMS's page) and its
-- parameters, to begin it again in a new window. A platform may match
-- its people to the school's staff by their email as well as their
-- roster id; a launch's session matched to a staff member ends with them.
ALTER TABLE lti_logins ADD COLUMN storage_target TEXT NOT NULL DEFAULT '';
ALTER TABLE lti_logins ADD COLUMN login_query TEXT NOT NULL DEFAULT '';
ALTER TABLE lti_platforms ADD COLUMN match_email INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lti_sessions ADD COLUMN staff_id TEXT REFERENCES staff (staff_id) ON DELETE CASCADE;
CREATE INDEX lti_sessions_by_staff ON lti_sessions (staff_id);

-- +goose Down
DROP INDEX lti_sessions_by_staff;
ALTER TABLE lti_sessions DROP COLUMN staff_id;
ALTER TABLE lti_platforms DROP COLUMN match_email;
ALTER TABLE lti_logins DROP COLUMN login_query;
ALTER TABLE lti_logins DROP COLUMN storage_target;
