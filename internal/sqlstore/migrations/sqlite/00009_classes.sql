-- +goose Up
-- A group's classes, and which of its students are in each. A membership
-- goes with its class and with its student (erased).
CREATE TABLE classes (
    group_id   TEXT NOT NULL REFERENCES groups (group_id),
    class_id   TEXT NOT NULL,
    name       TEXT NOT NULL,
    start_date TEXT,
    end_date   TEXT,
    PRIMARY KEY (group_id, class_id)
);

CREATE TABLE class_members (
    group_id   TEXT NOT NULL,
    class_id   TEXT NOT NULL,
    student_id TEXT NOT NULL,
    PRIMARY KEY (group_id, class_id, student_id),
    FOREIGN KEY (group_id, class_id) REFERENCES classes (group_id, class_id) ON DELETE CASCADE,
    FOREIGN KEY (group_id, student_id) REFERENCES students (group_id, student_id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE INDEX class_members_by_student ON class_members (group_id, student_id);

-- +goose Down
DROP TABLE class_members;
DROP TABLE classes;
