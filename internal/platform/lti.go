package platform

import (
	"context"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
)

// AddLTIPlatform registers a learning management system for a school
// (p.GroupID) or a district (p.DistrictID), by hand: what its
// administrator reads off the LMS (issuer, client id, deployments) and
// where its login, token and keys are (https, or http on loopback for a
// test).
func (p *Platform) AddLTIPlatform(ctx context.Context, lp analytics.LTIPlatform) (analytics.LTIPlatform, error) {
	if err := p.knownOwner(ctx, lp.GroupID, lp.DistrictID); err != nil {
		return lp, err
	}
	if !groupIDPattern.MatchString(lp.ID) {
		return lp, invalid("Invalid platform id %q: expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", lp.ID)
	}
	if lp.Name == "" {
		lp.Name = lp.ID
	}
	for _, f := range []struct{ name, value string }{{"name", lp.Name}, {"clientId", lp.ClientID}} {
		if err := checkText(f.name, f.value, 1000); err != nil {
			return lp, err
		}
	}
	if err := checkIssuer(lp.Issuer); err != nil {
		return lp, err
	}
	for _, u := range []struct{ name, value string }{{"authUrl", lp.AuthURL}, {"tokenUrl", lp.TokenURL}, {"jwksUrl", lp.JWKSURL}} {
		if err := checkEndpoint(u.name, u.value); err != nil {
			return lp, err
		}
	}
	if len(lp.DeploymentIDs) == 0 {
		return lp, invalid("Missing deploymentIds: name the deployment the LMS gave this tool (its deployment id)")
	}
	for _, d := range lp.DeploymentIDs {
		if err := checkText("deploymentIds", d, 255); err != nil {
			return lp, err
		}
	}
	lp.DeploymentIDs = slices.Compact(slices.Sorted(slices.Values(lp.DeploymentIDs)))
	lp.Created = p.Now().UTC().Truncate(time.Millisecond)
	return lp, p.Directory.AddLTIPlatform(ctx, lp)
}

// checkEndpoint checks a platform's endpoint as checkIssuer checks an
// issuer: https, or http on loopback.
func checkEndpoint(name, value string) error {
	if value == "" {
		return invalid("Missing %s", name)
	}
	if err := checkIssuer(value); err != nil {
		return invalid("Invalid %s %q: expected the platform's https address", name, value)
	}
	return nil
}

// LTIPlatformsOf lists a school's platforms (groupID) or a district's
// (districtID), by id.
func (p *Platform) LTIPlatformsOf(ctx context.Context, groupID, districtID string) ([]analytics.LTIPlatform, error) {
	if err := p.knownOwner(ctx, groupID, districtID); err != nil {
		return nil, err
	}
	return p.Directory.LTIPlatformsOf(ctx, groupID, districtID)
}

// RemoveLTIPlatform takes a platform away: its launches' sessions end.
func (p *Platform) RemoveLTIPlatform(ctx context.Context, platformID string) error {
	if !groupIDPattern.MatchString(platformID) {
		return analytics.Errorf(analytics.NotFound, "LTI platform %q not found", platformID)
	}
	return p.Directory.RemoveLTIPlatform(ctx, platformID)
}
