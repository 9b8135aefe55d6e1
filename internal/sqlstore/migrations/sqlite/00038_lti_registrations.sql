-- +goose Up
-- LTI Dynamic Registration: the invitations an operator gives an LMS's
-- administrator to register it for a school or a district, by the hash of
-- their token, each taken once. Deleting the school or the district takes
-- them with it.
CREATE TABLE lti_registrations (
    token_hash  BLOB PRIMARY KEY,
    group_id    TEXT REFERENCES groups (group_id),
    district_id TEXT REFERENCES districts (district_id),
    created_at  INTEGER NOT NULL,
    CHECK ((group_id IS NULL) <> (district_id IS NULL))
);

-- +goose Down
DROP TABLE lti_registrations;
