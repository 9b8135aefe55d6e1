-- +goose Up
-- Every table holding a group's data has group_id first in its primary key.
-- Times are milliseconds since the Unix epoch, UTC; days are calendar days
-- since 1970-01-01 in the group's time zone.

-- The directory.
CREATE TABLE groups (
    group_id   TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    time_zone  TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE plans (
    group_id     TEXT NOT NULL REFERENCES groups (group_id),
    plan_id      INTEGER NOT NULL,
    starts_at    INTEGER NOT NULL,
    ends_at      INTEGER,
    cancelled_at INTEGER,
    PRIMARY KEY (group_id, plan_id)
);

CREATE TABLE api_keys (
    group_id     TEXT NOT NULL REFERENCES groups (group_id),
    key_id       TEXT NOT NULL,
    key_hash     BLOB NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    label        TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    last_used_at INTEGER,
    PRIMARY KEY (group_id, key_id)
);

CREATE TABLE students (
    group_id   TEXT NOT NULL REFERENCES groups (group_id),
    student_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    PRIMARY KEY (group_id, student_id)
) WITHOUT ROWID;

CREATE TABLE platform_tokens (
    token_id   TEXT PRIMARY KEY,
    token_hash BLOB NOT NULL UNIQUE,
    prefix     TEXT NOT NULL,
    label      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

-- The usage store.
CREATE TABLE events (
    group_id    TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    student_id  TEXT NOT NULL,
    occurred_at INTEGER NOT NULL,
    metric      INTEGER NOT NULL,
    PRIMARY KEY (group_id, event_id)
) WITHOUT ROWID;

CREATE INDEX events_by_student ON events (group_id, student_id);

-- Dense per-group numbers for students, the members of rollup student sets;
-- usage_groups hands them out.
CREATE TABLE usage_groups (
    group_id     TEXT PRIMARY KEY,
    next_ordinal INTEGER NOT NULL
);

CREATE TABLE usage_students (
    group_id   TEXT NOT NULL,
    student_id TEXT NOT NULL,
    ordinal    INTEGER NOT NULL,
    PRIMARY KEY (group_id, student_id)
) WITHOUT ROWID;

-- span 0: period is a day; span 1: period is the first day of a month.
CREATE TABLE student_rollups (
    group_id     TEXT NOT NULL,
    span         INTEGER NOT NULL,
    period       INTEGER NOT NULL,
    student_id   TEXT NOT NULL,
    sessions     INTEGER NOT NULL,
    tutor_me     INTEGER NOT NULL,
    test         INTEGER NOT NULL,
    flashcard    INTEGER NOT NULL,
    material     INTEGER NOT NULL,
    live_lecture INTEGER NOT NULL,
    main         INTEGER NOT NULL,
    PRIMARY KEY (group_id, span, period, student_id)
) WITHOUT ROWID;

CREATE TABLE group_rollups (
    group_id           TEXT NOT NULL,
    span               INTEGER NOT NULL,
    period             INTEGER NOT NULL,
    sessions           INTEGER NOT NULL,
    tutor_me           INTEGER NOT NULL,
    test               INTEGER NOT NULL,
    flashcard          INTEGER NOT NULL,
    material           INTEGER NOT NULL,
    live_lecture       INTEGER NOT NULL,
    main               INTEGER NOT NULL,
    live_lecture_users BLOB NOT NULL,
    chat_users         BLOB NOT NULL,
    PRIMARY KEY (group_id, span, period)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE group_rollups;
DROP TABLE student_rollups;
DROP TABLE usage_students;
DROP TABLE usage_groups;
DROP TABLE events;
DROP TABLE platform_tokens;
DROP TABLE students;
DROP TABLE api_keys;
DROP TABLE plans;
DROP TABLE groups;
