-- +goose Up
-- The access log: one entry per answer that carried student-level data.
-- The students an entry names go with their enrolment (erased), leaving
-- students_asked to tell that the entry named more; the entries go with
-- their group, or when the operator's retention has passed. Each answer
-- writes an entry: as few pages as can be (no index by time, which the
-- hourly pruning does without).
CREATE TABLE access_log (
    entry_id       INTEGER PRIMARY KEY,
    group_id       TEXT NOT NULL REFERENCES groups (group_id),
    at             INTEGER NOT NULL,
    key_id         TEXT NOT NULL,
    client         TEXT NOT NULL,
    endpoint       TEXT NOT NULL,
    format         TEXT NOT NULL,
    start_date     TEXT NOT NULL,
    end_date       TEXT NOT NULL,
    report_interval TEXT NOT NULL,
    class_ids      TEXT NOT NULL,
    students_asked INTEGER NOT NULL
);

CREATE INDEX access_log_by_group ON access_log (group_id, entry_id);

CREATE TABLE access_log_students (
    entry_id   INTEGER NOT NULL REFERENCES access_log (entry_id) ON DELETE CASCADE,
    group_id   TEXT NOT NULL,
    student_id TEXT NOT NULL,
    PRIMARY KEY (group_id, student_id, entry_id),
    FOREIGN KEY (group_id, student_id) REFERENCES students (group_id, student_id) ON DELETE CASCADE
);

CREATE INDEX access_log_students_by_entry ON access_log_students (entry_id);

-- +goose Down
DROP TABLE access_log_students;
DROP TABLE access_log;
