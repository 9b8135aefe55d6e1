// Package signin is the service's side of OpenID Connect: it sends a
// person to their school's identity provider and checks who comes back.
// Discovery, the provider's keys (and their rotation) and the ID token's
// checks are go-oidc's; the code's redemption, with PKCE, is
// golang.org/x/oauth2's.
package signin

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"groupanalytics/internal/analytics"
)

// discoveryLifetime is how long a provider's discovery document is kept
// before it is read again. Its keys are go-oidc's to refresh: a token
// signed with a key it does not know makes it read them again.
const discoveryLifetime = time.Hour

// RelyingParty signs people in with the providers the operator set up.
type RelyingParty struct {
	// Client makes the requests to the providers.
	Client *http.Client

	mu         sync.Mutex
	discovered map[string]discovered // by issuer
}

type discovered struct {
	provider *oidc.Provider
	at       time.Time
}

// New returns a RelyingParty whose requests to providers time out after
// ten seconds.
func New() *RelyingParty {
	return &RelyingParty{Client: &http.Client{Timeout: 10 * time.Second}, discovered: map[string]discovered{}}
}

// Failure is why a sign-in failed, said to the person; the error it
// wraps is for the service's log.
type Failure struct {
	Reason string
	Err    error
}

func (f *Failure) Error() string {
	if f.Err == nil {
		return f.Reason
	}
	return f.Reason + ": " + f.Err.Error()
}

func (f *Failure) Unwrap() error { return f.Err }

func fail(reason string, err error) error { return &Failure{Reason: reason, Err: err} }

// provider returns the issuer's discovered configuration, read again
// after discoveryLifetime.
func (rp *RelyingParty) provider(ctx context.Context, issuer string) (*oidc.Provider, error) {
	rp.mu.Lock()
	d, ok := rp.discovered[issuer]
	rp.mu.Unlock()
	if ok && time.Since(d.at) < discoveryLifetime {
		return d.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, rp.Client), issuer)
	if err != nil {
		return nil, fail("The sign-in provider could not be reached", err)
	}
	rp.mu.Lock()
	rp.discovered[issuer] = discovered{provider: p, at: time.Now()}
	rp.mu.Unlock()
	return p, nil
}

func (rp *RelyingParty) config(p analytics.Provider, op *oidc.Provider, redirectURL string) *oauth2.Config {
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: p.ClientSecret, Endpoint: op.Endpoint(),
		RedirectURL: redirectURL, Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

// Begun is a sign-in sent to its provider: the address to send the
// browser to, and the secrets the attempt keeps until it comes back.
type Begun struct {
	URL      string
	State    string
	Nonce    string
	Verifier string
}

// Begin makes a sign-in's state, nonce and PKCE verifier and the
// provider's authorization address (with the email the person gave, if
// any, as a login hint).
func (rp *RelyingParty) Begin(ctx context.Context, p analytics.Provider, redirectURL, loginHint string) (Begun, error) {
	op, err := rp.provider(ctx, p.Issuer)
	if err != nil {
		return Begun{}, err
	}
	b := Begun{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier()}
	opts := []oauth2.AuthCodeOption{oidc.Nonce(b.Nonce), oauth2.S256ChallengeOption(b.Verifier)}
	if loginHint != "" {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", loginHint))
	}
	b.URL = rp.config(p, op, redirectURL).AuthCodeURL(b.State, opts...)
	return b, nil
}

// Identity is who the provider says signed in.
type Identity struct {
	Subject string
	Email   string // in lower case
	Name    string
	// SourcedID is their roster id, for a provider that matches by it.
	SourcedID string
}

// Finish redeems the code with the attempt's verifier, checks the ID
// token (issuer, audience, expiry, signature, and the attempt's nonce),
// and returns who signed in as the provider's rules take them (Match).
// The claims are the ID token's and, for those it lacks, userinfo's for
// the same subject.
func (rp *RelyingParty) Finish(ctx context.Context, p analytics.Provider, redirectURL string, a analytics.SignInAttempt, code string) (Identity, error) {
	op, err := rp.provider(ctx, p.Issuer)
	if err != nil {
		return Identity{}, err
	}
	ctx = oidc.ClientContext(ctx, rp.Client)
	token, err := rp.config(p, op, redirectURL).Exchange(ctx, code, oauth2.VerifierOption(a.Verifier))
	if err != nil {
		return Identity{}, fail("The sign-in provider did not accept the sign-in's code", err)
	}
	raw, _ := token.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fail("The sign-in provider sent no ID token", nil)
	}
	idToken, err := op.Verifier(&oidc.Config{ClientID: p.ClientID}).Verify(ctx, raw)
	if err != nil {
		return Identity{}, fail("The sign-in provider's ID token did not verify", err)
	}
	if idToken.Nonce != a.Nonce {
		return Identity{}, fail("The sign-in provider's ID token is not this sign-in's (its nonce differs)", nil)
	}
	claims := map[string]any{}
	if err := idToken.Claims(&claims); err != nil {
		return Identity{}, fail("The sign-in provider's ID token could not be read", err)
	}
	if lacks(p, claims) {
		info, err := op.UserInfo(ctx, oauth2.StaticTokenSource(token))
		if err != nil {
			return Identity{}, fail("The sign-in provider's user info could not be read", err)
		}
		more := map[string]any{}
		if err := info.Claims(&more); err != nil || info.Subject != idToken.Subject {
			return Identity{}, fail("The sign-in provider's user info is not the ID token's person", err)
		}
		for name, v := range more {
			if _, ok := claims[name]; !ok {
				claims[name] = v
			}
		}
	}
	return Match(p, idToken.Subject, claims)
}

// lacks tells whether claims lack one that p's rules read.
func lacks(p analytics.Provider, claims map[string]any) bool {
	needed := []string{cmp.Or(p.MatchClaim, "email")}
	for name := range p.RequiredClaims {
		needed = append(needed, name)
	}
	for _, name := range needed {
		if _, ok := claims[name]; !ok {
			return true
		}
	}
	return false
}

// Match is who claims say signed in, as p takes them: every required
// claim with its value; then the roster id of p's MatchClaim, or else a
// verified email of one of p's domains.
func Match(p analytics.Provider, subject string, claims map[string]any) (Identity, error) {
	for _, name := range slices.Sorted(maps.Keys(p.RequiredClaims)) {
		if claimText(claims[name]) != p.RequiredClaims[name] {
			return Identity{}, fail("This account is not one this sign-in takes: its "+name+" is another's", nil)
		}
	}
	id := Identity{Subject: subject, Email: strings.ToLower(claimText(claims["email"])), Name: claimText(claims["name"])}
	if p.MatchClaim != "" {
		if id.SourcedID = claimText(claims[p.MatchClaim]); id.SourcedID == "" {
			return id, fail("The sign-in provider sent no "+p.MatchClaim+", which finds you on the staff", nil)
		}
		return id, nil
	}
	_, domain, ok := strings.Cut(id.Email, "@")
	switch {
	case !ok:
		return id, fail("The sign-in provider gave no email address", nil)
	case !emailVerified(claims):
		return id, fail(fmt.Sprintf("The sign-in provider has not verified %s", id.Email), nil)
	case !slices.Contains(p.EmailDomains, domain):
		return id, fail(fmt.Sprintf("%s is not an address this sign-in takes: sign in with your school account", id.Email), nil)
	}
	return id, nil
}

// emailVerified tells whether the provider vouches for the email: its
// email_verified, or, where it sends none (Microsoft Entra ID, for an
// organisation's accounts), Entra's xms_edov, which says that the tenant
// owns the email's domain.
func emailVerified(claims map[string]any) bool {
	if v, ok := claims["email_verified"]; ok {
		return claimText(v) == "true"
	}
	return claimText(claims["xms_edov"]) == "true"
}

// claimText is a claim's value as text: a string as it is, a number
// without exponent, a boolean as true or false; "" for none.
func claimText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// CheckIssuer reads the issuer's discovery document and checks that the
// issuer it names is this one exactly, as every ID token's must be
// (OpenID Connect Discovery, section 4.3): a trailing slash the document
// lacks would make every sign-in fail later, with no word but in the log.
func (rp *RelyingParty) CheckIssuer(ctx context.Context, issuer string) error {
	where := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return analytics.Errorf(analytics.Invalid, "Invalid issuer %q: %v", issuer, err)
	}
	resp, err := rp.Client.Do(req)
	if err != nil {
		return analytics.Errorf(analytics.Invalid, "Issuer %q could not be reached (%s): check it, or skip this check where the provider is not reachable from here", issuer, where)
	}
	defer resp.Body.Close()
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) != nil || doc.Issuer == "" {
		return analytics.Errorf(analytics.Invalid, "Issuer %q has no discovery document at %s (%s): check it", issuer, where, resp.Status)
	}
	if doc.Issuer != issuer {
		return analytics.Errorf(analytics.Invalid, "Invalid issuer %q: its discovery document says the issuer is %q, which ID tokens will name: give that, exactly", issuer, doc.Issuer)
	}
	return nil
}
