-- +goose Up
-- A receipt of each deletion done (a student erased, a group deleted):
-- what went from each store, when, at whose request. It outlives the
-- group, so it references nothing, and names students by id only.
CREATE TABLE deletion_receipts (
    receipt_id   BIGSERIAL PRIMARY KEY,
    group_id     TEXT NOT NULL,
    student_id   TEXT NOT NULL,
    action       TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    began_at     BIGINT NOT NULL,
    finished_at  BIGINT NOT NULL,
    deleted      TEXT NOT NULL
);

CREATE INDEX deletion_receipts_by_group ON deletion_receipts (group_id, receipt_id);

-- +goose Down
DROP TABLE deletion_receipts;
