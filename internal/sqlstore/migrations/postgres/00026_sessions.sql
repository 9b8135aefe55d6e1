-- +goose Up
-- Sign-in: the attempts begun and not yet finished (each taken once),
-- and the sessions of the staff signed in. Only hashes of the state, the
-- browser's cookie and the session's token are kept. Removing a staff
-- member or a provider ends their sessions.
CREATE TABLE sign_in_attempts (
    state_hash   BYTEA PRIMARY KEY,
    browser_hash BYTEA NOT NULL,
    provider_id  TEXT NOT NULL REFERENCES sign_in_providers (provider_id) ON DELETE CASCADE,
    nonce        TEXT NOT NULL,
    verifier     TEXT NOT NULL,
    return_to    TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX sign_in_attempts_by_provider ON sign_in_attempts (provider_id);

CREATE TABLE sessions (
    token_hash  BYTEA PRIMARY KEY,
    staff_id    TEXT NOT NULL REFERENCES staff (staff_id) ON DELETE CASCADE,
    provider_id TEXT NOT NULL REFERENCES sign_in_providers (provider_id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    seen_at     BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    idle_millis BIGINT NOT NULL
);
CREATE INDEX sessions_by_staff ON sessions (staff_id);
CREATE INDEX sessions_by_provider ON sessions (provider_id);

-- The access log names the person of a signed-in session's answer (its
-- key_id is then empty): their email and role then, and the provider.
ALTER TABLE access_log ADD COLUMN person_email TEXT NOT NULL DEFAULT '';
ALTER TABLE access_log ADD COLUMN person_role TEXT NOT NULL DEFAULT '';
ALTER TABLE access_log ADD COLUMN provider_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE access_log DROP COLUMN provider_id;
ALTER TABLE access_log DROP COLUMN person_role;
ALTER TABLE access_log DROP COLUMN person_email;
DROP TABLE sessions;
DROP TABLE sign_in_attempts;
