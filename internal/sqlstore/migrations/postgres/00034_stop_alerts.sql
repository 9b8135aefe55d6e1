-- +goose Up
-- The words to a class's digest recipients that students of the class
-- stopped: one row per student's stop (named by their last day of use, so
-- that a student who comes back and stops again stops anew) and address,
-- claimed until claimed_until while it is being sent, told_at once sent
-- (or given up, with failure), so that no stop is told twice, whatever
-- the processes and restarts.
CREATE TABLE stop_alerts (
    group_id      TEXT NOT NULL,
    class_id      TEXT NOT NULL,
    address       TEXT NOT NULL,
    student_id    TEXT NOT NULL,
    last_day      INTEGER NOT NULL,
    claimed_until BIGINT NOT NULL,
    told_at       BIGINT,
    failure       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (group_id, class_id, address, student_id, last_day),
    FOREIGN KEY (group_id, class_id) REFERENCES classes (group_id, class_id) ON DELETE CASCADE,
    FOREIGN KEY (group_id, student_id) REFERENCES students (group_id, student_id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE stop_alerts;
