-- +goose Up
-- A teacher's key sees the students of its classes only. for_classes
-- marks one, so that a key whose classes were all deleted sees none
-- rather than the whole group.
ALTER TABLE api_keys ADD COLUMN for_classes BOOLEAN NOT NULL DEFAULT FALSE;

CREATE TABLE api_key_classes (
    group_id TEXT NOT NULL,
    key_id   TEXT NOT NULL,
    class_id TEXT NOT NULL,
    PRIMARY KEY (group_id, key_id, class_id),
    FOREIGN KEY (group_id, key_id) REFERENCES api_keys (group_id, key_id) ON DELETE CASCADE,
    FOREIGN KEY (group_id, class_id) REFERENCES classes (group_id, class_id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE api_key_classes;
ALTER TABLE api_keys DROP COLUMN for_classes;
