package lti

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"groupanalytics/internal/analytics"
)

// NRPSScope is the scope of Names and Role Provisioning Services' reads.
const NRPSScope = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"

// Sign signs claims as a JWT with the tool's key k (RS256, named by its
// id): a service's client assertion, or a deep linking answer.
func Sign(k analytics.LTIToolKey, claims map[string]any) (string, error) {
	private, err := parsePrivate(k)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: private},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.ID))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// AccessToken asks platform p's token endpoint for a token of scope, as
// LTI Advantage's services want (OAuth 2.0 client credentials with a
// JWT client assertion, RFC 7523), signed with the tool's key k.
func (v *Verifier) AccessToken(ctx context.Context, p analytics.LTIPlatform, k analytics.LTIToolKey, scope string, now time.Time) (string, error) {
	assertion, err := Sign(k, map[string]any{"iss": p.ClientID, "sub": p.ClientID, "aud": p.TokenURL, "iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(), "jti": rand.Text()})
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion": {assertion}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	if err := v.getJSON(req, &answer); err != nil {
		return "", fmt.Errorf("the platform's token endpoint: %w", err)
	}
	if answer.AccessToken == "" {
		return "", fmt.Errorf("the platform's token endpoint gave no access token")
	}
	return answer.AccessToken, nil
}

// Member is a member of a course, as Names and Role Provisioning says.
type Member struct {
	UserID          string   `json:"user_id"`
	Roles           []string `json:"roles"`
	Status          string   `json:"status"`
	Name            string   `json:"name"`
	Email           string   `json:"email"`
	PersonSourcedID string   `json:"lis_person_sourcedid"`
}

// Learner tells whether the member is a learner of the course, and active
// (a member without a status is).
func (m Member) Learner() bool {
	return (m.Status == "" || m.Status == "Active") &&
		(slices.Contains(m.Roles, roleLearner) || slices.Contains(m.Roles, "Learner"))
}

const roleLearner = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"

// maxMemberPages bounds the pages of a course's members read: a platform
// that links to a next page for ever cannot hold a launch.
const maxMemberPages = 200

// Members reads a course's members from its memberships address, page by
// page (Link: <…>; rel="next"), with the service's token.
func (v *Verifier) Members(ctx context.Context, address, token string) ([]Member, error) {
	var members []Member
	for page := 0; address != ""; page++ {
		if page == maxMemberPages {
			return nil, fmt.Errorf("the course's members: more than %d pages", maxMemberPages)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, address, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
		var container struct {
			Members []Member `json:"members"`
		}
		next, err := v.getJSONLinked(req, &container)
		if err != nil {
			return nil, fmt.Errorf("the course's members: %w", err)
		}
		members = append(members, container.Members...)
		address = next
	}
	return members, nil
}

func (v *Verifier) getJSON(req *http.Request, into any) error {
	_, err := v.getJSONLinked(req, into)
	return err
}

// nextLink finds a Link header's rel="next" address.
var nextLink = regexp.MustCompile(`<([^>]+)>\s*;\s*rel="?next"?`)

// getJSONLinked sends req, reads its JSON answer into into, and returns
// the address of its next page, if its Link header names one.
func (v *Verifier) getJSONLinked(req *http.Request, into any) (string, error) {
	resp, err := v.Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return "", fmt.Errorf("%s %s: %s %s", req.Method, req.URL.Redacted(), resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(into); err != nil {
		return "", err
	}
	if m := nextLink.FindStringSubmatch(resp.Header.Get("Link")); m != nil {
		next, err := req.URL.Parse(m[1])
		if err != nil {
			return "", err
		}
		return next.String(), nil
	}
	return "", nil
}

// A deep link's content items are LTI resource links.
const linkType = "ltiResourceLink"

// Link is a link the tool places in a course: its title, and the custom
// parameter view that its launches carry.
type Link struct {
	Title, View string
}

// AcceptsLinks tells whether a deep linking request takes resource links
// (a platform that names no type takes any).
func (l Launch) AcceptsLinks() bool {
	return len(l.DeepLinkTypes) == 0 || slices.Contains(l.DeepLinkTypes, linkType)
}

// DeepLinkResponse is the signed LtiDeepLinkingResponse that places link
// in the course of a deep linking request l from platform p: issued by
// the tool's client id for the platform's issuer, its deployment's, the
// request's data echoed, the link launching launchURL.
func DeepLinkResponse(p analytics.LTIPlatform, l Launch, k analytics.LTIToolKey, link Link, launchURL string, now time.Time) (string, error) {
	item := map[string]any{"type": linkType, "title": link.Title, "url": launchURL}
	if link.View != "" {
		item["custom"] = map[string]string{"view": link.View}
	}
	claims := map[string]any{"iss": p.ClientID, "aud": p.Issuer, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "nonce": rand.Text(),
		claim + "message_type": "LtiDeepLinkingResponse", claim + "version": version, claim + "deployment_id": l.DeploymentID,
		"https://purl.imsglobal.org/spec/lti-dl/claim/content_items": []any{item}}
	if l.DeepLinkData != "" {
		claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"] = l.DeepLinkData
	}
	return Sign(k, claims)
}

// checkPlatformURL checks an address of a platform's that the tool sends
// to or reads from: https, or http on loopback.
func checkPlatformURL(name, address string) error {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" || u.Scheme != "https" && !(u.Scheme == "http" && analytics.Loopback(u.Hostname())) {
		return fmt.Errorf("%s %q", name, address)
	}
	return nil
}
