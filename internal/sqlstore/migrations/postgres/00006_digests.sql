-- +goose Up
-- The weekly digest: who receives each group's, and each digest sent or
-- being sent, recorded before it goes out so that it goes out once
-- whatever the number of processes. Times are milliseconds since the
-- Unix epoch.
CREATE TABLE digest_recipients (
    group_id   TEXT NOT NULL REFERENCES groups (group_id),
    address    TEXT NOT NULL,
    token      TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (group_id, address)
);

-- A row is a claim: whoever inserted or renewed it sends the digest, until
-- retry_at; then, unless sent_at is set, another may claim it again.
CREATE TABLE digest_sends (
    group_id   TEXT NOT NULL REFERENCES groups (group_id),
    week       TEXT NOT NULL,
    address    TEXT NOT NULL,
    attempts   INTEGER NOT NULL,
    retry_at   BIGINT NOT NULL,
    sent_at    BIGINT,
    last_error TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (group_id, week, address)
);

-- +goose Down
DROP TABLE digest_sends;
DROP TABLE digest_recipients;
