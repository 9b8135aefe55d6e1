// Package ltitest runs an LTI 1.3 platform on loopback for tests, as a
// learning management system is to the tool: it publishes its keys (and
// rotates them), sends a browser to the tool's login, checks the tool's
// authorization request as the Security Framework says, and answers with
// the form that posts a signed id_token back; a course's page frames the
// tool and keeps the platform's storage for it. A test may change what it
// signs, or how, to try what an attacker would. services.go has LTI
// Advantage: Names and Role Provisioning, deep linking's return, Dynamic
// Registration.
package ltitest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"html"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Roles, as platforms send them.
const (
	Instructor         = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
	TeachingAssistant  = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
	Learner            = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	InstitutionAdmin   = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"
	InstitutionStudent = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"
)

// Person is who launches: the platform's id for them, their name and
// email, their roster id, and their roles in the course.
type Person struct {
	ID, Name, Email, SourcedID string
	Roles                      []string
}

// Course is where they launch from: the platform's context, and the
// roster's class it is a section of (lis.course_section_sourcedid).
type Course struct {
	ID, Title, SectionSourcedID string
}

// Platform is a running platform.
type Platform struct {
	Issuer       string
	ClientID     string
	DeploymentID string
	// ToolLogin and ToolLaunch are the tool's addresses; the platform
	// sends the browser to the first, and posts to the second only.
	ToolLogin, ToolLaunch string
	// Now is the platform's clock, which stamps its id_tokens.
	Now func() time.Time
	// ToolJWKS is the tool's keyset address, whose keys must sign the
	// client assertions its token endpoint takes.
	ToolJWKS string
	// PageSize is how many members a page of Names and Role Provisioning
	// holds.
	PageSize int
	// RegistrationToken is the token a tool's dynamic registration must
	// bear; NoDeploymentOnRegistration answers it without a deployment id.
	RegistrationToken          string
	NoDeploymentOnRegistration bool
	// Configure changes the platform's OpenID configuration as it is read.
	Configure func(config map[string]any)
	// Storage offers the platform's storage (LTI Client Side
	// postMessages) in its logins, as its course page keeps it.
	Storage bool

	t       testing.TB
	server  *httptest.Server
	mu      sync.Mutex
	keys    []signingKey // the first signs; all are published
	pending map[string]pendingLaunch
	tamper  func(claims map[string]any)
	sign    func(claims map[string]any) string
	members map[string][]Member // by course id
	tokens  map[string]bool     // the access tokens given
	asked   []string            // the scopes asked for tokens
	links   []Link              // placed by deep linking, in order
	tool    map[string]any      // the tool's registration, once it registered
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

type pendingLaunch struct {
	person  Person
	course  Course
	message string
	link    *Link // the placed link launched, if one is
}

// Start runs a platform for a tool registered with these client and
// deployment ids, stopped when the test ends.
func Start(t testing.TB, clientID, deploymentID string) *Platform {
	t.Helper()
	p := &Platform{ClientID: clientID, DeploymentID: deploymentID, Now: time.Now, PageSize: 100, t: t, pending: map[string]pendingLaunch{},
		members: map[string][]Member{}, tokens: map[string]bool{}}
	p.Rotate()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /auth", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /nrps/{course}", p.memberships)
	mux.HandleFunc("POST /deep-link-return", p.deepLinkReturn)
	mux.HandleFunc("GET /.well-known/openid-configuration", p.configuration)
	mux.HandleFunc("POST /register", p.register)
	mux.HandleFunc("GET /course", p.coursePage)
	p.server = httptest.NewServer(mux)
	t.Cleanup(p.server.Close)
	p.Issuer = p.server.URL
	return p
}

// AuthURL and JWKSURL are the platform's endpoints, to register it.
func (p *Platform) AuthURL() string { return p.Issuer + "/auth" }
func (p *Platform) JWKSURL() string { return p.Issuer + "/jwks" }

// TokenURL is where its services' tokens would be asked for.
func (p *Platform) TokenURL() string { return p.Issuer + "/token" }

// Rotate makes a new key, which signs from now on; the old ones are still
// published.
func (p *Platform) Rotate() {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append([]signingKey{{id: rand.Text()[:12], key: key}}, p.keys...)
}

// Tamper changes the claims of the id_tokens signed from now on (nil:
// none); Sign replaces how they are signed (nil: by the platform's key).
func (p *Platform) Tamper(f func(claims map[string]any)) { p.mu.Lock(); p.tamper = f; p.mu.Unlock() }
func (p *Platform) Sign(f func(claims map[string]any) string) {
	p.mu.Lock()
	p.sign = f
	p.mu.Unlock()
}

// SignWith signs claims with a new key of the test's own, which the
// platform does not publish, named kid.
func SignWith(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return sign(t, signingKey{id: kid, key: key}, claims)
}

func sign(t testing.TB, k signingKey, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.id))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (p *Platform) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	set := jose.JSONWebKeySet{}
	for _, k := range p.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.key.PublicKey, KeyID: k.id, Algorithm: string(jose.RS256), Use: "sig"})
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(set)
}

// LoginURL is the address the platform sends a browser to, to launch the
// tool as person from course (a resource link, or with deepLinking a
// deep linking request).
func (p *Platform) LoginURL(person Person, course Course, deepLinking bool) string {
	hint := rand.Text()
	message := "LtiResourceLinkRequest"
	if deepLinking {
		message = "LtiDeepLinkingRequest"
	}
	p.mu.Lock()
	p.pending[hint] = pendingLaunch{person: person, course: course, message: message}
	p.mu.Unlock()
	q := url.Values{"iss": {p.Issuer}, "login_hint": {person.ID}, "target_link_uri": {p.ToolLaunch}, "lti_message_hint": {hint},
		"client_id": {p.ClientID}, "lti_deployment_id": {p.DeploymentID}}
	if p.Storage {
		q.Set("lti_storage_target", "_parent")
	}
	return p.ToolLogin + "?" + q.Encode()
}

// authorize answers the tool's authorization request, checked as the
// Security Framework says (an implicit flow, its form posted back, to
// the registered launch address), with the form that posts the id_token.
func (p *Platform) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name, want := range map[string]string{"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
		"client_id": p.ClientID, "redirect_uri": p.ToolLaunch} {
		if q.Get(name) != want {
			http.Error(w, "invalid_request: "+name, http.StatusBadRequest)
			return
		}
	}
	p.mu.Lock()
	launch, ok := p.pending[q.Get("lti_message_hint")]
	tamper, signer, key := p.tamper, p.sign, p.keys[0]
	p.mu.Unlock()
	if !ok || q.Get("login_hint") != launch.person.ID || q.Get("nonce") == "" {
		http.Error(w, "invalid_request: login_hint", http.StatusBadRequest)
		return
	}
	claims := p.claims(launch, q.Get("nonce"))
	if tamper != nil {
		tamper(claims)
	}
	token := ""
	if signer != nil {
		token = signer(claims)
	} else {
		token = sign(p.t, key, claims)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	formPost.Execute(w, map[string]string{"Action": p.ToolLaunch, "IDToken": token, "State": q.Get("state")})
}

func (p *Platform) claims(l pendingLaunch, nonce string) map[string]any {
	const c = "https://purl.imsglobal.org/spec/lti/claim/"
	now := p.Now()
	claims := map[string]any{
		"iss": p.Issuer, "sub": l.person.ID, "aud": p.ClientID, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "nonce": nonce,
		"name": l.person.Name, "email": l.person.Email,
		c + "message_type": l.message, c + "version": "1.3.0", c + "deployment_id": p.DeploymentID, c + "target_link_uri": p.ToolLaunch,
		c + "roles": l.person.Roles, c + "resource_link": map[string]any{"id": "rl-" + l.course.ID, "title": "Usage"},
		c + "context":             map[string]any{"id": l.course.ID, "title": l.course.Title, "type": []string{"http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"}},
		c + "lis":                 map[string]any{"person_sourcedid": l.person.SourcedID, "course_section_sourcedid": l.course.SectionSourcedID},
		c + "launch_presentation": map[string]any{"document_target": "iframe", "return_url": p.Issuer + "/return"},
		c + "tool_platform":       map[string]any{"guid": "ltitest", "name": "ltitest", "product_family_code": "ltitest"},
	}
	if l.message == "LtiDeepLinkingRequest" {
		delete(claims, c+"resource_link")
		claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = map[string]any{
			"deep_link_return_url": p.Issuer + "/deep-link-return", "accept_types": []string{"ltiResourceLink"},
			"accept_presentation_document_targets": []string{"iframe", "window"}, "accept_multiple": false, "data": DeepLinkData}
	}
	if l.link != nil {
		claims[c+"target_link_uri"], claims[c+"custom"] = l.link.URL, l.link.Custom
		claims[c+"resource_link"] = map[string]any{"id": "rl-" + l.course.ID + "-" + l.link.Title, "title": l.link.Title}
	}
	p.mu.Lock()
	_, offered := p.members[l.course.ID]
	p.mu.Unlock()
	if offered {
		claims["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"] = map[string]any{
			"context_memberships_url": p.Issuer + "/nrps/" + url.PathEscape(l.course.ID), "service_versions": []string{"2.0"}}
	}
	return claims
}

// OnHost makes the platform's addresses name host (such as localhost)
// rather than 127.0.0.1, so that a browser takes it for another site
// than the tool's.
func (p *Platform) OnHost(host string) {
	p.Issuer = strings.Replace(p.server.URL, "127.0.0.1", host, 1)
}

// CoursePageURL is the address of a course's page that launches the tool
// as person in an iframe, as an LMS does, and keeps the platform's
// storage for it.
func (p *Platform) CoursePageURL(person Person, course Course) string {
	return p.Issuer + "/course?" + url.Values{"login": {p.LoginURL(person, course, false)}}.Encode()
}

func (p *Platform) coursePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	coursePage.Execute(w, r.URL.Query().Get("login"))
}

// coursePage frames the tool's login, and keeps what the tool puts in its
// storage by the tool's origin and key, as LTI Client Side postMessages
// says: lti.put_data and lti.get_data, answered to the asking origin.
var coursePage = template.Must(template.New("course").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Course</title>
<script>
const kept = new Map();
addEventListener("message", (ev) => {
  const m = ev.data || {};
  const answer = (body) => ev.source.postMessage({ message_id: m.message_id, key: m.key, ...body }, ev.origin);
  if (m.subject === "lti.put_data") {
    kept.set(ev.origin + " " + m.key, m.value);
    answer({ subject: "lti.put_data.response", value: m.value });
  } else if (m.subject === "lti.get_data") {
    answer({ subject: "lti.get_data.response", value: kept.get(ev.origin + " " + m.key) });
  }
});
</script></head>
<body><h1>Course</h1><iframe id="tool" title="Usage" src="{{.}}" style="width: 1200px; height: 800px"></iframe></body></html>
`))

var formPost = template.Must(template.New("post").Parse(`<!doctype html>
<html><body onload="document.forms[0].submit()"><form method="post" action="{{.Action}}">
<input type="hidden" name="id_token" value="{{.IDToken}}"><input type="hidden" name="state" value="{{.State}}">
</form></body></html>`))

// Posted is what the platform's form would post: its fields, read from
// the page of its answer.
func Posted(t testing.TB, page io.Reader) url.Values {
	t.Helper()
	body, err := io.ReadAll(page)
	if err != nil {
		t.Fatal(err)
	}
	fields := url.Values{}
	for _, m := range regexp.MustCompile(`name="([^"]+)" value="([^"]*)"`).FindAllStringSubmatch(string(body), -1) {
		fields.Set(m[1], html.UnescapeString(m[2]))
	}
	if fields.Get("id_token") == "" {
		t.Fatalf("the platform did not post an id_token:\n%s", strings.TrimSpace(string(body)))
	}
	return fields
}
