package platform

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// AddProvider adds an OpenID Connect provider that a school's staff
// (pr.GroupID) or a district's and its schools' (pr.DistrictID) sign in
// with: its issuer (https, or http on loopback for a test), the client
// the operator registered with it, and the email domains it may sign in.
// Unless skipDiscovery, the issuer must be its discovery document's,
// exactly.
func (p *Platform) AddProvider(ctx context.Context, pr analytics.Provider, skipDiscovery bool) (analytics.Provider, error) {
	if err := p.knownOwner(ctx, pr.GroupID, pr.DistrictID); err != nil {
		return pr, err
	}
	if !groupIDPattern.MatchString(pr.ID) {
		return pr, invalid("Invalid provider id %q: expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", pr.ID)
	}
	if pr.Name == "" {
		pr.Name = pr.ID
	}
	for _, f := range []struct{ name, value string }{{"name", pr.Name}, {"clientId", pr.ClientID}, {"clientSecret", pr.ClientSecret}} {
		if err := checkText(f.name, f.value, 1000); err != nil {
			return pr, err
		}
	}
	if err := checkIssuer(pr.Issuer); err != nil {
		return pr, err
	}
	domains, err := checkDomains(pr.EmailDomains)
	if err != nil {
		return pr, err
	}
	if err := checkMatching(pr); err != nil {
		return pr, err
	}
	if !skipDiscovery {
		if err := p.Issuers.CheckIssuer(ctx, pr.Issuer); err != nil {
			return pr, err
		}
	}
	pr.EmailDomains, pr.Created = domains, p.Now().UTC().Truncate(time.Millisecond)
	return pr, p.Directory.AddProvider(ctx, pr)
}

// checkIssuer accepts an issuer URL as OpenID Connect Discovery wants it:
// https, with no query or fragment; http only on loopback, where a test's
// provider runs.
func checkIssuer(issuer string) error {
	bad := func(why string) error { return invalid("Invalid issuer %q: %s", issuer, why) }
	if issuer == "" {
		return invalid("Missing issuer")
	}
	u, err := url.Parse(issuer)
	switch {
	case err != nil || u.Host == "" || u.User != nil:
		return bad("expected the provider's https URL, such as https://accounts.google.com")
	case u.RawQuery != "" || u.Fragment != "":
		return bad("an issuer has no query or fragment")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && analytics.Loopback(u.Hostname()):
		return nil
	}
	return bad("expected https (http only on loopback, for a test)")
}

// checkMatching checks how a provider's people are matched: by a claim
// holding their roster id only with a required claim beside it, since an
// issuer such as ClassLink's or Clever's serves every school, and a roster
// id is unique only within one.
func checkMatching(pr analytics.Provider) error {
	for name, value := range pr.RequiredClaims {
		if err := checkText("requiredClaims", name, 100); err != nil {
			return err
		}
		if err := checkText("requiredClaims."+name, value, 1000); err != nil {
			return err
		}
	}
	if pr.MatchClaim == "" {
		return nil
	}
	if err := checkText("matchClaim", pr.MatchClaim, 100); err != nil {
		return err
	}
	if len(pr.RequiredClaims) == 0 {
		return invalid("Missing requiredClaims: matching by %s, the claim of a roster id, needs a claim that names the school's or district's own accounts, such as {\"TenantId\": \"…\"}: the issuer may serve others too", pr.MatchClaim)
	}
	return nil
}

// checkDomains checks the email domains a provider may sign in (at least
// one) and returns them in lower case, sorted, each once.
func checkDomains(domains []string) ([]string, error) {
	if len(domains) == 0 {
		return nil, invalid("Missing emailDomains: name the domains of the staff's emails, such as lakeland.k12.example")
	}
	out := make([]string, len(domains))
	for i, d := range domains {
		d = strings.ToLower(d)
		if _, err := CheckAddress("staff@" + d); err != nil || strings.ContainsAny(d, "@ ") {
			return nil, invalid("Invalid emailDomains: %q is not a domain such as lakeland.k12.example", domains[i])
		}
		out[i] = d
	}
	return slices.Compact(slices.Sorted(slices.Values(out))), nil
}

// ProvidersOf lists a school's sign-in providers (groupID) or a
// district's (districtID), by id.
func (p *Platform) ProvidersOf(ctx context.Context, groupID, districtID string) ([]analytics.Provider, error) {
	if err := p.knownOwner(ctx, groupID, districtID); err != nil {
		return nil, err
	}
	return p.Directory.ProvidersOf(ctx, groupID, districtID)
}

// RemoveProvider takes a sign-in provider away.
func (p *Platform) RemoveProvider(ctx context.Context, providerID string) error {
	if !groupIDPattern.MatchString(providerID) {
		return analytics.Errorf(analytics.NotFound, "Sign-in provider %q not found", providerID)
	}
	return p.Directory.RemoveProvider(ctx, providerID)
}
