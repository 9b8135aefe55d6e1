package platform

import (
	"cmp"
	"context"
	"crypto/rand"
	"regexp"
	"slices"
	"strings"
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
	if len(lp.DeploymentIDs) == 0 {
		return lp, invalid("Missing deploymentIds: name the deployment the LMS gave this tool (its deployment id)")
	}
	if err := p.checkLTIPlatform(&lp); err != nil {
		return lp, err
	}
	return lp, p.Directory.AddLTIPlatform(ctx, lp)
}

// CreateLTIRegistration makes an invitation for a school's (groupID) or a
// district's (districtID) LMS to register itself by LTI Dynamic
// Registration: the token its registration address carries, usable once
// within analytics.LTIRegistrationLifetime.
func (p *Platform) CreateLTIRegistration(ctx context.Context, groupID, districtID string) (string, analytics.LTIRegistration, error) {
	if err := p.knownOwner(ctx, groupID, districtID); err != nil {
		return "", analytics.LTIRegistration{}, err
	}
	token := "gar_" + rand.Text()
	r := analytics.LTIRegistration{TokenHash: analytics.HashSecret(token), GroupID: groupID, DistrictID: districtID,
		Created: p.Now().UTC().Truncate(time.Millisecond)}
	return token, r, p.Directory.AddLTIRegistration(ctx, r)
}

// RegisterLTIPlatform records the platform an LMS registered by LTI
// Dynamic Registration, for the school or the district of the
// registration's token, taken now: its id made from its name's first
// word, and its
// deployments those it named (none: any of its client id's).
func (p *Platform) RegisterLTIPlatform(ctx context.Context, token string, lp analytics.LTIPlatform) (analytics.LTIPlatform, error) {
	if err := p.checkLTIPlatform(&lp); err != nil {
		return lp, err
	}
	r, err := p.Directory.TakeLTIRegistration(ctx, analytics.HashSecret(token), p.Now())
	if err != nil {
		return lp, err
	}
	lp.GroupID, lp.DistrictID = r.GroupID, r.DistrictID
	first, _, _ := strings.Cut(lp.Name, " ")
	lp.ID = strings.Trim(nonIDChars.ReplaceAllString(strings.ToLower(first), "-"), "-._")
	lp.ID = cmp.Or(lp.ID[:min(len(lp.ID), 40)], "lms") + "-" + strings.ToLower(rand.Text()[:6])
	return lp, p.Directory.AddLTIPlatform(ctx, lp)
}

// nonIDChars are the characters an id cannot hold.
var nonIDChars = regexp.MustCompile(`[^a-z0-9._-]+`)

// checkLTIPlatform checks what an LMS's administrator gives, or the LMS
// itself: its name (the id when none), issuer, client id, endpoints and
// deployments; it stamps it created now.
func (p *Platform) checkLTIPlatform(lp *analytics.LTIPlatform) error {
	if lp.Name == "" {
		lp.Name = lp.ID
	}
	for _, f := range []struct{ name, value string }{{"name", lp.Name}, {"clientId", lp.ClientID}} {
		if err := checkText(f.name, f.value, 1000); err != nil {
			return err
		}
	}
	if err := checkIssuer(lp.Issuer); err != nil {
		return err
	}
	for _, u := range []struct{ name, value string }{{"authUrl", lp.AuthURL}, {"tokenUrl", lp.TokenURL}, {"jwksUrl", lp.JWKSURL}} {
		if err := checkEndpoint(u.name, u.value); err != nil {
			return err
		}
	}
	for _, d := range lp.DeploymentIDs {
		if err := checkText("deploymentIds", d, 255); err != nil {
			return err
		}
	}
	lp.DeploymentIDs = slices.Compact(slices.Sorted(slices.Values(lp.DeploymentIDs)))
	lp.Created = p.Now().UTC().Truncate(time.Millisecond)
	return nil
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
