-- +goose Up
-- Warehouses: where a school's or a district's daily usage files go (a
-- bucket of an S3-compatible store with the owner's credentials, or a
-- folder under the server's warehouse directory), in which format, from
-- which day; the claim of the process running its deliveries, and how the
-- last run ended.
CREATE TABLE warehouses (
    warehouse_id  TEXT PRIMARY KEY,
    group_id      TEXT REFERENCES groups (group_id),
    district_id   TEXT REFERENCES districts (district_id),
    format        TEXT NOT NULL,
    endpoint      TEXT NOT NULL,
    region        TEXT NOT NULL,
    bucket        TEXT NOT NULL,
    prefix        TEXT NOT NULL,
    access_key    TEXT NOT NULL,
    secret_key    TEXT NOT NULL,
    folder        TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    from_day      BIGINT NOT NULL,
    claimed_until BIGINT NOT NULL DEFAULT 0,
    last_run      BIGINT NOT NULL DEFAULT 0,
    last_error    TEXT NOT NULL DEFAULT '',
    failures      BIGINT NOT NULL DEFAULT 0,
    retry_at      BIGINT NOT NULL DEFAULT 0,
    CHECK ((group_id IS NULL) <> (district_id IS NULL))
);

-- A school's days of a warehouse: due (reason set: a backfill, an
-- erasure), when last delivered, and whether the schedule delivered it:
-- the schedule's days are due from the day after its last one (or the
-- warehouse's first day) to the school's yesterday.
CREATE TABLE warehouse_days (
    warehouse_id TEXT NOT NULL REFERENCES warehouses (warehouse_id),
    group_id     TEXT NOT NULL REFERENCES groups (group_id),
    day          BIGINT NOT NULL,
    reason       TEXT,
    queued_at    BIGINT NOT NULL DEFAULT 0,
    delivered_at BIGINT,
    scheduled    BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (warehouse_id, group_id, day)
);
CREATE INDEX warehouse_days_due ON warehouse_days (warehouse_id, reason);
CREATE INDEX warehouse_days_by_group ON warehouse_days (group_id);

-- +goose Down
DROP TABLE warehouse_days;
DROP TABLE warehouses;
