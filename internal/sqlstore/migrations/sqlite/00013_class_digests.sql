-- +goose Up
-- A digest recipient may be a class's teacher: class_id names the class
-- whose digest they get (NULL: the school's). Deleting the class removes
-- them, rather than leave them the whole school's. SQLite adds a foreign
-- key only with a new table.
CREATE TABLE digest_recipients_new (
    group_id   TEXT NOT NULL REFERENCES groups (group_id),
    address    TEXT NOT NULL,
    token      TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    class_id   TEXT,
    PRIMARY KEY (group_id, address),
    FOREIGN KEY (group_id, class_id) REFERENCES classes (group_id, class_id) ON DELETE CASCADE
);
INSERT INTO digest_recipients_new (group_id, address, token, created_at)
    SELECT group_id, address, token, created_at FROM digest_recipients;
DROP TABLE digest_recipients;
ALTER TABLE digest_recipients_new RENAME TO digest_recipients;

-- +goose Down
CREATE TABLE digest_recipients_old (
    group_id   TEXT NOT NULL REFERENCES groups (group_id),
    address    TEXT NOT NULL,
    token      TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (group_id, address)
);
INSERT INTO digest_recipients_old SELECT group_id, address, token, created_at FROM digest_recipients;
DROP TABLE digest_recipients;
ALTER TABLE digest_recipients_old RENAME TO digest_recipients;
