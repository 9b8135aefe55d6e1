-- +goose Up
-- A launch's login remembers the platform's storage it was offered (LTI
-- client-side postMessages: the frame to keep its state in, where the
-- browser keeps no cookie of the tool in the LMS's page) and its
-- parameters, to begin it again in a new window.
ALTER TABLE lti_logins ADD COLUMN storage_target TEXT NOT NULL DEFAULT '';
ALTER TABLE lti_logins ADD COLUMN login_query TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE lti_logins DROP COLUMN login_query;
ALTER TABLE lti_logins DROP COLUMN storage_target;
