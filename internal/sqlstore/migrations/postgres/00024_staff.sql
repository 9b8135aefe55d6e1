-- +goose Up
-- Staff: the people sign-in recognises by email, each a school's (a
-- teacher, with the classes they teach, or an administrator) or a
-- district's administrator. An email is once per school or district.
-- Deleting a class takes it from its teachers; deleting a school or a
-- district takes its staff.
CREATE TABLE staff (
    staff_id    TEXT PRIMARY KEY,
    email       TEXT NOT NULL,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL,
    group_id    TEXT REFERENCES groups (group_id),
    district_id TEXT REFERENCES districts (district_id),
    created_at  BIGINT NOT NULL,
    CHECK ((group_id IS NULL) <> (district_id IS NULL))
);
CREATE UNIQUE INDEX staff_of_school ON staff (group_id, email) WHERE group_id IS NOT NULL;
CREATE UNIQUE INDEX staff_of_district ON staff (district_id, email) WHERE district_id IS NOT NULL;
CREATE INDEX staff_by_email ON staff (email);

CREATE TABLE staff_classes (
    staff_id TEXT NOT NULL REFERENCES staff (staff_id) ON DELETE CASCADE,
    group_id TEXT NOT NULL,
    class_id TEXT NOT NULL,
    PRIMARY KEY (staff_id, class_id),
    FOREIGN KEY (group_id, class_id) REFERENCES classes (group_id, class_id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE staff_classes;
DROP INDEX staff_by_email;
DROP INDEX staff_of_district;
DROP INDEX staff_of_school;
DROP TABLE staff;
