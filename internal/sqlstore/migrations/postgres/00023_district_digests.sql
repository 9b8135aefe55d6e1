-- +goose Up
-- A district's weekly digest: who receives it, and each one sent or being
-- sent, as a group's (00006). Deleting the district deletes both.
CREATE TABLE district_digest_recipients (
    district_id TEXT NOT NULL REFERENCES districts (district_id),
    address     TEXT NOT NULL,
    token       TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (district_id, address)
);

CREATE TABLE district_digest_sends (
    district_id TEXT NOT NULL REFERENCES districts (district_id),
    week        TEXT NOT NULL,
    address     TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    retry_at    BIGINT NOT NULL,
    sent_at     BIGINT,
    last_error  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (district_id, week, address)
);

-- +goose Down
DROP TABLE district_digest_sends;
DROP TABLE district_digest_recipients;
