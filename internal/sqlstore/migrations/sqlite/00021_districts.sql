-- +goose Up
-- Districts: each holds schools (groups), a group at most one. Deleting a
-- district leaves its schools (their district_id is cleared first) and
-- takes its keys. A district's key is named by an id unique across
-- districts, so that a school's access log can name it by id alone.
CREATE TABLE districts (
    district_id TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    time_zone   TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

ALTER TABLE groups ADD COLUMN district_id TEXT REFERENCES districts (district_id);
CREATE INDEX groups_by_district ON groups (district_id, group_id);

CREATE TABLE district_keys (
    district_id  TEXT NOT NULL REFERENCES districts (district_id),
    key_id       TEXT NOT NULL UNIQUE,
    key_hash     BLOB NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    label        TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    last_used_at INTEGER,
    PRIMARY KEY (district_id, key_id)
);

-- +goose Down
DROP TABLE district_keys;
DROP INDEX groups_by_district;
ALTER TABLE groups DROP COLUMN district_id;
DROP TABLE districts;
