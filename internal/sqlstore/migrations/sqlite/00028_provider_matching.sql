-- +goose Up
-- How a sign-in provider's people are matched to the staff: by their
-- verified email (match_claim empty), or by the claim that holds their
-- roster id; and the claims it must send with these values (a JSON
-- object), such as a tenant's id where the issuer serves many.
ALTER TABLE sign_in_providers ADD COLUMN match_claim TEXT NOT NULL DEFAULT '';
ALTER TABLE sign_in_providers ADD COLUMN required_claims TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE sign_in_providers DROP COLUMN required_claims;
ALTER TABLE sign_in_providers DROP COLUMN match_claim;
