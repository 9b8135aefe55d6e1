-- +goose Up
-- The OpenID Connect providers a school's or a district's staff sign in
-- with. The client secret is kept to redeem codes and is never shown.
-- Email domains are space-separated, in lower case.
CREATE TABLE sign_in_providers (
    provider_id   TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    issuer        TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    client_secret TEXT NOT NULL,
    group_id      TEXT REFERENCES groups (group_id),
    district_id   TEXT REFERENCES districts (district_id),
    email_domains TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    CHECK ((group_id IS NULL) <> (district_id IS NULL))
);

-- +goose Down
DROP TABLE sign_in_providers;
