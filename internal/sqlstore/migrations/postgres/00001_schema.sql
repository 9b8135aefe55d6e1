-- +goose Up
-- Every table holding a group's data has group_id first in its primary key,
-- and every query of those tables filters by it, so that a distributed
-- PostgreSQL (Citus) can distribute them by group_id (see the README).
-- Times are milliseconds since the Unix epoch, UTC; days are calendar days
-- since 1970-01-01 in the group's time zone.

-- The directory.
CREATE TABLE groups (
    group_id   TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    time_zone  TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE plans (
    group_id     TEXT NOT NULL REFERENCES groups (group_id),
    plan_id      BIGINT NOT NULL,
    starts_at    BIGINT NOT NULL,
    ends_at      BIGINT,
    cancelled_at BIGINT,
    PRIMARY KEY (group_id, plan_id)
);

CREATE TABLE api_keys (
    group_id     TEXT NOT NULL REFERENCES groups (group_id),
    key_id       TEXT NOT NULL,
    key_hash     BYTEA NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    label        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    last_used_at BIGINT,
    PRIMARY KEY (group_id, key_id)
);

CREATE TABLE students (
    group_id   TEXT NOT NULL REFERENCES groups (group_id),
    student_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    PRIMARY KEY (group_id, student_id)
);

CREATE TABLE platform_tokens (
    token_id   TEXT PRIMARY KEY,
    token_hash BYTEA NOT NULL UNIQUE,
    prefix     TEXT NOT NULL,
    label      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

-- The usage store.
CREATE TABLE events (
    group_id    TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    student_id  TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    metric      SMALLINT NOT NULL,
    PRIMARY KEY (group_id, event_id)
);

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
);

-- span 0: period is a day; span 1: period is the first day of a month.
CREATE TABLE student_rollups (
    group_id     TEXT NOT NULL,
    span         SMALLINT NOT NULL,
    period       INTEGER NOT NULL,
    student_id   TEXT NOT NULL,
    sessions     BIGINT NOT NULL,
    tutor_me     BIGINT NOT NULL,
    test         BIGINT NOT NULL,
    flashcard    BIGINT NOT NULL,
    material     BIGINT NOT NULL,
    live_lecture BIGINT NOT NULL,
    main         BIGINT NOT NULL,
    PRIMARY KEY (group_id, span, period, student_id)
);

CREATE TABLE group_rollups (
    group_id           TEXT NOT NULL,
    span               SMALLINT NOT NULL,
    period             INTEGER NOT NULL,
    sessions           BIGINT NOT NULL,
    tutor_me           BIGINT NOT NULL,
    test               BIGINT NOT NULL,
    flashcard          BIGINT NOT NULL,
    material           BIGINT NOT NULL,
    live_lecture       BIGINT NOT NULL,
    main               BIGINT NOT NULL,
    live_lecture_users BYTEA NOT NULL,
    chat_users         BYTEA NOT NULL,
    PRIMARY KEY (group_id, span, period)
);

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
