// Package lti is the tool's side of LTI 1.3 (1EdTech's Core and Security
// Framework): a launch's login sent to the platform, and the id_token it
// posts back checked as the specification requires; the person's roles;
// the tool's own keys. The JOSE is go-jose's.
package lti

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"groupanalytics/internal/analytics"
)

// The claims' names.
const (
	claim             = "https://purl.imsglobal.org/spec/lti/claim/"
	MessageLaunch     = "LtiResourceLinkRequest"
	MessageDeepLink   = "LtiDeepLinkingRequest"
	version           = "1.3.0"
	roleInstructor    = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
	roleTA            = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
	roleCourseAdmin   = "http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator"
	roleInstitutional = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"
	roleSystemAdmin   = "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"
)

// LoginRequest is a third-party-initiated login, as the platform sends
// the browser to the tool's login address.
type LoginRequest struct {
	Issuer, LoginHint, TargetLinkURI, MessageHint, ClientID, DeploymentID string
	StorageTarget                                                         string // the frame of the platform's storage, if offered
}

// LoginRequestOf reads a login's parameters, from the query or a form.
func LoginRequestOf(v url.Values) LoginRequest {
	return LoginRequest{Issuer: v.Get("iss"), LoginHint: v.Get("login_hint"), TargetLinkURI: v.Get("target_link_uri"),
		MessageHint: v.Get("lti_message_hint"), ClientID: v.Get("client_id"), DeploymentID: v.Get("lti_deployment_id"),
		StorageTarget: v.Get("lti_storage_target")}
}

// AuthRedirect is the address of the platform's authorization endpoint
// that the login sends the browser to: an OpenID Connect implicit flow
// whose id_token the platform posts to redirectURI, with this state and
// nonce.
func AuthRedirect(p analytics.LTIPlatform, r LoginRequest, redirectURI, state, nonce string) string {
	q := url.Values{"scope": {"openid"}, "response_type": {"id_token"}, "response_mode": {"form_post"}, "prompt": {"none"},
		"client_id": {p.ClientID}, "redirect_uri": {redirectURI}, "login_hint": {r.LoginHint}, "state": {state}, "nonce": {nonce}}
	if r.MessageHint != "" {
		q.Set("lti_message_hint", r.MessageHint)
	}
	sep := "?"
	if strings.Contains(p.AuthURL, "?") {
		sep = "&"
	}
	return p.AuthURL + sep + q.Encode()
}

// Launch is what a checked id_token says.
type Launch struct {
	Subject, Name, Email, Nonce     string
	MessageType, DeploymentID       string
	TargetLinkURI                   string
	Roles                           []string
	ContextID, ContextTitle         string
	PersonSourcedID                 string // lis.person_sourcedid: the roster's id
	CourseSectionSourcedID          string // lis.course_section_sourcedid: the roster's class
	MembershipsURL                  string // Names and Role Provisioning's, if offered
	DocumentTarget                  string // iframe, window, or none said
	DeepLinkReturnURL, DeepLinkData string
	DeepLinkTypes                   []string // the content items' types the platform accepts
	View                            string   // the custom parameter view: what a placed link opens
	Expires                         time.Time
}

// Role is what the launch's roles open: LTIAdministrator for an
// administrator of the institution or the system (or of the course), the
// widest; LTIInstructor for an instructor or a teaching assistant; ""
// for a learner or anyone else.
func (l Launch) Role() string {
	switch {
	case slices.ContainsFunc(l.Roles, func(r string) bool { return r == roleInstitutional || r == roleSystemAdmin || r == roleCourseAdmin }):
		return analytics.LTIAdministrator
	case slices.Contains(l.Roles, roleInstructor) || slices.Contains(l.Roles, roleTA):
		return analytics.LTIInstructor
	}
	return ""
}

// Refusal is why a launch is refused, said to the person; the error it
// wraps is for the service's log.
type Refusal struct {
	Reason string
	Err    error
	// NewWindow, when set, is an address that begins the launch again in
	// a new window, where the browser keeps the tool's cookie.
	NewWindow string
}

func (r *Refusal) Error() string {
	if r.Err == nil {
		return r.Reason
	}
	return r.Reason + ": " + r.Err.Error()
}

func (r *Refusal) Unwrap() error { return r.Err }

func refuse(reason string, err error) error { return &Refusal{Reason: reason, Err: err} }

// maxAge bounds how old a launch's id_token may be (its iat), and skew
// how far the platform's clock may be ahead.
const (
	maxAge = 10 * time.Minute
	skew   = time.Minute
)

// algorithms are the signatures a launch may have: asymmetric only, so
// that neither "none" nor a key the platform shares passes.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.ES256}

// Verifier checks launches against their platforms' keys, which it
// fetches from their JWKS addresses and keeps, fetching them again when
// a launch names a key it does not know (the platform rotated its keys);
// it is also the tool's client of its platforms (registration, services).
// Forged launches cannot make it fetch at will: each needs a login of its
// own, and the service counts each refusal against the address.
type Verifier struct {
	Client *http.Client
	mu     sync.Mutex
	sets   map[string]jose.JSONWebKeySet // by JWKS address
}

// NewVerifier returns a Verifier whose requests time out after ten seconds.
func NewVerifier() *Verifier {
	return &Verifier{Client: &http.Client{Timeout: 10 * time.Second}, sets: map[string]jose.JSONWebKeySet{}}
}

// key returns the platform's key of this id, fetching its keys when it
// knows no such key.
func (v *Verifier) key(ctx context.Context, p analytics.LTIPlatform, kid string) (*jose.JSONWebKey, error) {
	v.mu.Lock()
	set := v.sets[p.JWKSURL]
	v.mu.Unlock()
	if found := set.Key(kid); len(found) > 0 {
		return &found[0], nil
	}
	keys, err := v.fetch(ctx, p.JWKSURL)
	if err != nil {
		return nil, refuse("The platform's keys could not be read", err)
	}
	v.mu.Lock()
	v.sets[p.JWKSURL] = keys
	v.mu.Unlock()
	if found := keys.Key(kid); len(found) > 0 {
		return &found[0], nil
	}
	return nil, refuse("The platform signed this launch with a key it does not publish", nil)
}

func (v *Verifier) fetch(ctx context.Context, address string) (jose.JSONWebKeySet, error) {
	var keys jose.JSONWebKeySet
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, address, nil)
	if err != nil {
		return keys, err
	}
	return keys, v.getJSON(req, &keys)
}

// Verify checks a launch's id_token from platform p: its signature, by a
// key the platform publishes; its issuer, audience (and authorized party
// when it has several), expiry and issue time; its deployment, one
// registered; its message type and version. The nonce is returned for
// the caller to check against the login's, and to use once.
func (v *Verifier) Verify(ctx context.Context, p analytics.LTIPlatform, raw string, now time.Time) (Launch, error) {
	jws, err := jose.ParseSigned(raw, algorithms)
	if err != nil {
		return Launch{}, refuse("The launch's id_token is not a signed token this tool takes", err)
	}
	if len(jws.Signatures) != 1 {
		return Launch{}, refuse("The launch's id_token has more than one signature", nil)
	}
	key, err := v.key(ctx, p, jws.Signatures[0].Header.KeyID)
	if err != nil {
		return Launch{}, err
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return Launch{}, refuse("The launch's id_token did not verify", err)
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Launch{}, refuse("The launch's id_token could not be read", err)
	}
	if err := c.check(p, now); err != nil {
		return Launch{}, err
	}
	return c.launch(), nil
}

// claims are what an id_token holds that the tool reads.
type claims struct {
	Issuer     string   `json:"iss"`
	Subject    string   `json:"sub"`
	Audience   audience `json:"aud"`
	AuthParty  string   `json:"azp"`
	Expires    float64  `json:"exp"`
	Issued     float64  `json:"iat"`
	Nonce      string   `json:"nonce"`
	Name       string   `json:"name"`
	Email      string   `json:"email"`
	Message    string   `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version    string   `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	Deployment string   `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	Target     string   `json:"https://purl.imsglobal.org/spec/lti/claim/target_link_uri"`
	Roles      []string `json:"https://purl.imsglobal.org/spec/lti/claim/roles"`
	Context    struct {
		ID    string `json:"id"`
		Label string `json:"label"`
		Title string `json:"title"`
	} `json:"https://purl.imsglobal.org/spec/lti/claim/context"`
	LIS struct {
		Person        string `json:"person_sourcedid"`
		CourseSection string `json:"course_section_sourcedid"`
	} `json:"https://purl.imsglobal.org/spec/lti/claim/lis"`
	Presentation struct {
		DocumentTarget string `json:"document_target"`
	} `json:"https://purl.imsglobal.org/spec/lti/claim/launch_presentation"`
	NRPS struct {
		URL string `json:"context_memberships_url"`
	} `json:"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"`
	DeepLinking struct {
		ReturnURL   string   `json:"deep_link_return_url"`
		Data        string   `json:"data"`
		AcceptTypes []string `json:"accept_types"`
	} `json:"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"`
	Custom map[string]any `json:"https://purl.imsglobal.org/spec/lti/claim/custom"`
}

// audience is an aud claim, a string or an array of them.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audience{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(a))
}

func (c claims) check(p analytics.LTIPlatform, now time.Time) error {
	expires, issued := time.Unix(int64(c.Expires), 0), time.Unix(int64(c.Issued), 0)
	switch {
	case c.Issuer != p.Issuer:
		return refuse("The launch comes from another platform than the one registered", fmt.Errorf("iss %q", c.Issuer))
	case !slices.Contains(c.Audience, p.ClientID):
		return refuse("The launch is meant for another tool", fmt.Errorf("aud %q", c.Audience))
	case len(c.Audience) > 1 && c.AuthParty != p.ClientID:
		return refuse("The launch is meant for another tool", fmt.Errorf("azp %q", c.AuthParty))
	case c.Expires == 0 || !now.Before(expires):
		return refuse("The launch has expired: open the tool again from your course", nil)
	case c.Issued == 0 || issued.After(now.Add(skew)) || now.Sub(issued) > maxAge:
		return refuse("The launch was not issued now: open the tool again from your course", nil)
	case c.Nonce == "" || c.Subject == "":
		return refuse("The launch has no nonce or no person", nil)
	case c.Deployment == "" || !p.TakesDeployment(c.Deployment):
		return refuse("The launch comes from a deployment of the platform that is not registered here", fmt.Errorf("deployment %q", c.Deployment))
	case c.Message != MessageLaunch && c.Message != MessageDeepLink:
		return refuse("The launch is of a kind this tool does not take", fmt.Errorf("message_type %q", c.Message))
	case c.Version != version:
		return refuse("The launch is not of LTI 1.3", fmt.Errorf("version %q", c.Version))
	case c.Message == MessageDeepLink && checkPlatformURL("deep_link_return_url", c.DeepLinking.ReturnURL) != nil:
		return refuse("The platform asked for a link without saying where to send it",
			checkPlatformURL("deep_link_return_url", c.DeepLinking.ReturnURL))
	}
	return nil
}

func (c claims) launch() Launch {
	return Launch{Subject: c.Subject, Name: c.Name, Email: strings.ToLower(c.Email), Nonce: c.Nonce, MessageType: c.Message,
		DeploymentID: c.Deployment, TargetLinkURI: c.Target, Roles: c.Roles, ContextID: c.Context.ID,
		ContextTitle: cmp.Or(c.Context.Title, c.Context.Label, c.Context.ID), PersonSourcedID: c.LIS.Person,
		CourseSectionSourcedID: c.LIS.CourseSection, MembershipsURL: c.NRPS.URL, DocumentTarget: c.Presentation.DocumentTarget,
		DeepLinkReturnURL: c.DeepLinking.ReturnURL, DeepLinkData: c.DeepLinking.Data, DeepLinkTypes: c.DeepLinking.AcceptTypes,
		View: viewOf(c.Custom), Expires: time.Unix(int64(c.Expires), 0)}
}

// viewOf is a launch's custom parameter view, when it is a string.
func viewOf(custom map[string]any) string {
	v, _ := custom["view"].(string)
	return v
}

// NewToolKey makes a new key of the tool's: RSA of 2048 bits, named by a
// random id.
func NewToolKey(now time.Time) (analytics.LTIToolKey, error) {
	private, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return analytics.LTIToolKey{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(private)
	if err != nil {
		return analytics.LTIToolKey{}, err
	}
	return analytics.LTIToolKey{ID: strings.ToLower(rand.Text()[:16]), Created: now,
		PrivatePEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}, nil
}

// The tool's keys rotate: a key signs for ToolKeyLifetime, and the next
// is published toolKeyNotice before it signs, so that a platform that
// keeps the tool's keys has it; the key before goes on being published
// until the next signs, so that what it signed still verifies.
const (
	ToolKeyLifetime = 90 * 24 * time.Hour
	toolKeyNotice   = 24 * time.Hour
)

// ToolKeys picks, from the tool's keys (newest first), the one that signs
// now and those published; due says that a new key is to be made (there
// is none, or the newest is older than ToolKeyLifetime).
func ToolKeys(keys []analytics.LTIToolKey, now time.Time) (signing analytics.LTIToolKey, published []analytics.LTIToolKey, due bool) {
	if len(keys) == 0 {
		return signing, nil, true
	}
	// The signing key: the newest published for toolKeyNotice, else the
	// oldest (a first key signs at once).
	at := len(keys) - 1
	for i, k := range keys {
		if !k.Created.After(now.Add(-toolKeyNotice)) {
			at = i
			break
		}
	}
	published = keys[:min(at+2, len(keys))]
	return keys[at], published, now.Sub(keys[0].Created) > ToolKeyLifetime
}

// PublicKeys is the tool's keys as its JWKS address publishes them: the
// public halves, each named by its id, for RS256.
func PublicKeys(keys []analytics.LTIToolKey) (jose.JSONWebKeySet, error) {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for _, k := range keys {
		private, err := parsePrivate(k)
		if err != nil {
			return set, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &private.PublicKey, KeyID: k.ID, Algorithm: string(jose.RS256), Use: "sig"})
	}
	return set, nil
}

func parsePrivate(k analytics.LTIToolKey) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(k.PrivatePEM))
	if block == nil {
		return nil, fmt.Errorf("tool key %s: not PEM", k.ID)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("tool key %s: %w", k.ID, err)
	}
	private, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("tool key %s: not an RSA key", k.ID)
	}
	return private, nil
}
