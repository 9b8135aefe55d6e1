-- +goose Up
-- LTI 1.3: the learning management systems registered for a school or a
-- district, the launches' logins begun (taken once), the nonces their
-- launches used (refused if used again), the sessions launches opened,
-- and the tool's own keys. Removing a platform ends its logins and
-- sessions. Only hashes of states, browsers' cookies and sessions'
-- tokens are kept. Deployment ids are space-separated.
CREATE TABLE lti_platforms (
    platform_id    TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    issuer         TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    deployment_ids TEXT NOT NULL,
    auth_url       TEXT NOT NULL,
    token_url      TEXT NOT NULL,
    jwks_url       TEXT NOT NULL,
    group_id       TEXT REFERENCES groups (group_id),
    district_id    TEXT REFERENCES districts (district_id),
    created_at     INTEGER NOT NULL,
    UNIQUE (issuer, client_id),
    CHECK ((group_id IS NULL) <> (district_id IS NULL))
);

CREATE TABLE lti_logins (
    state_hash   BLOB PRIMARY KEY,
    browser_hash BLOB NOT NULL,
    platform_id  TEXT NOT NULL REFERENCES lti_platforms (platform_id) ON DELETE CASCADE,
    nonce        TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX lti_logins_by_platform ON lti_logins (platform_id);

CREATE TABLE lti_nonces (
    platform_id TEXT NOT NULL REFERENCES lti_platforms (platform_id) ON DELETE CASCADE,
    nonce       TEXT NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (platform_id, nonce)
);

CREATE TABLE lti_sessions (
    token_hash  BLOB PRIMARY KEY,
    platform_id TEXT NOT NULL REFERENCES lti_platforms (platform_id) ON DELETE CASCADE,
    subject     TEXT NOT NULL,
    name        TEXT NOT NULL,
    email       TEXT NOT NULL,
    role        TEXT NOT NULL,
    group_id    TEXT NOT NULL,
    class_id    TEXT NOT NULL,
    district_id TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    seen_at     INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    idle_millis INTEGER NOT NULL
);
CREATE INDEX lti_sessions_by_platform ON lti_sessions (platform_id);

CREATE TABLE lti_tool_keys (
    key_id      TEXT PRIMARY KEY,
    private_pem TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

-- +goose Down
DROP TABLE lti_tool_keys;
DROP TABLE lti_sessions;
DROP TABLE lti_nonces;
DROP TABLE lti_logins;
DROP TABLE lti_platforms;
