// Package ltitest runs an LTI 1.3 platform on loopback for tests, as a
// learning management system is to the tool: it publishes its keys (and
// rotates them), sends a browser to the tool's login, checks the tool's
// authorization request as the Security Framework says, and answers with
// the form that posts a signed id_token back. A test may change what it
// signs, or how, to try what an attacker would.
package ltitest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
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

// Member is a member of a course, as Names and Role Provisioning sends
// it.
type Member struct {
	UserID          string   `json:"user_id"`
	Roles           []string `json:"roles"`
	Status          string   `json:"status,omitempty"`
	Name            string   `json:"name,omitempty"`
	Email           string   `json:"email,omitempty"`
	PersonSourcedID string   `json:"lis_person_sourcedid,omitempty"`
}

// SetMembers sets a course's members, and offers Names and Role
// Provisioning in its launches.
func (p *Platform) SetMembers(courseID string, members []Member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members[courseID] = members
}

// Scopes are the scopes the tool asked tokens for, in order.
func (p *Platform) Scopes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.asked)
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

// Link is a link a tool placed in a course by deep linking: its title,
// the address it launches, and its custom parameters.
type Link struct {
	Title  string            `json:"title"`
	URL    string            `json:"url"`
	Custom map[string]string `json:"custom"`
}

// DeepLinkData is what the platform's deep linking requests carry as
// their data, for the tool to echo.
const DeepLinkData = "ltitest-deep-link-data"

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
	return p.ToolLogin + "?" + q.Encode()
}

// LinkLoginURL is the address that launches a placed link as person from
// course.
func (p *Platform) LinkLoginURL(person Person, course Course, link Link) string {
	u, err := url.Parse(p.LoginURL(person, course, false))
	if err != nil {
		p.t.Fatal(err)
	}
	q := u.Query()
	q.Set("target_link_uri", link.URL)
	p.mu.Lock()
	launch := p.pending[q.Get("lti_message_hint")]
	launch.link = &link
	p.pending[q.Get("lti_message_hint")] = launch
	p.mu.Unlock()
	u.RawQuery = q.Encode()
	return u.String()
}

// Links are the links the tool placed, in order.
func (p *Platform) Links() []Link {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.links)
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
	delete(p.pending, q.Get("lti_message_hint"))
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

// token answers a request for a services' token as LTI Advantage says:
// client credentials, with a JWT client assertion signed by a key the
// tool publishes, issued by and for its client id, meant for this
// endpoint.
func (p *Platform) token(w http.ResponseWriter, r *http.Request) {
	fail := func(format string, args ...any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_request", "error_description": fmt.Sprintf(format, args...)})
	}
	if r.FormValue("grant_type") != "client_credentials" || r.FormValue("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		fail("grant_type or client_assertion_type")
		return
	}
	var a struct {
		Iss, Sub, Aud, Jti string
		Exp                int64
	}
	if err := p.fromTool(r.FormValue("client_assertion"), &a); err != nil {
		fail("client_assertion: %v", err)
		return
	}
	if a.Iss != p.ClientID || a.Sub != p.ClientID || a.Aud != p.TokenURL() || a.Jti == "" || a.Exp < p.Now().Unix() {
		fail("client_assertion's claims")
		return
	}
	token := rand.Text()
	p.mu.Lock()
	p.tokens[token] = true
	p.asked = append(p.asked, r.FormValue("scope"))
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": r.FormValue("scope")})
}

// fromTool reads a JWT the tool signed, with a key it publishes at
// ToolJWKS, into claims.
func (p *Platform) fromTool(raw string, claims any) error {
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return err
	}
	if len(jws.Signatures) != 1 {
		return fmt.Errorf("%d signatures", len(jws.Signatures))
	}
	resp, err := http.Get(p.ToolJWKS)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var keys jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&keys); err != nil {
		return err
	}
	found := keys.Key(jws.Signatures[0].Header.KeyID)
	if len(found) == 0 {
		return fmt.Errorf("the tool publishes no key %q", jws.Signatures[0].Header.KeyID)
	}
	payload, err := jws.Verify(&found[0])
	if err != nil {
		return err
	}
	return json.Unmarshal(payload, claims)
}

// deepLinkReturn takes the tool's LtiDeepLinkingResponse, checked as Deep
// Linking says (signed by the tool, issued by its client id for this
// platform, of the deployment, the request's data echoed, fresh), and
// places its link.
func (p *Platform) deepLinkReturn(w http.ResponseWriter, r *http.Request) {
	const c = "https://purl.imsglobal.org/spec/lti/claim/"
	var answer map[string]json.RawMessage
	if err := p.fromTool(r.FormValue("JWT"), &answer); err != nil {
		http.Error(w, "invalid JWT: "+err.Error(), http.StatusBadRequest)
		return
	}
	var (
		iss, aud, message, version, deployment, data, nonce string
		exp                                                 int64
		items                                               []struct {
			Type string `json:"type"`
			Link
		}
	)
	for name, into := range map[string]any{"iss": &iss, "aud": &aud, "exp": &exp, "nonce": &nonce, c + "message_type": &message,
		c + "version": &version, c + "deployment_id": &deployment, "https://purl.imsglobal.org/spec/lti-dl/claim/data": &data,
		"https://purl.imsglobal.org/spec/lti-dl/claim/content_items": &items} {
		if raw, ok := answer[name]; ok {
			json.Unmarshal(raw, into)
		}
	}
	if iss != p.ClientID || aud != p.Issuer || message != "LtiDeepLinkingResponse" || version != "1.3.0" || deployment != p.DeploymentID ||
		data != DeepLinkData || nonce == "" || exp < p.Now().Unix() || len(items) != 1 || items[0].Type != "ltiResourceLink" || items[0].URL == "" {
		http.Error(w, "invalid LtiDeepLinkingResponse", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.links = append(p.links, items[0].Link)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, "<!doctype html><title>Placed</title><p>The link "+html.EscapeString(items[0].Title)+" is in the course.</p>")
}

// ConfigurationURL is the address of the platform's OpenID configuration,
// which it gives a tool's registration address.
func (p *Platform) ConfigurationURL() string { return p.Issuer + "/.well-known/openid-configuration" }

// RegistrationURL is the address the platform opens to register a tool
// at its registration address: with its configuration's address and its
// registration token.
func (p *Platform) RegistrationURL(toolURL string) string {
	sep := "?"
	if strings.Contains(toolURL, "?") {
		sep = "&"
	}
	return toolURL + sep + url.Values{"openid_configuration": {p.ConfigurationURL()}, "registration_token": {p.RegistrationToken}}.Encode()
}

// Registered is the tool's registration, nil before it registered.
func (p *Platform) Registered() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tool
}

func (p *Platform) configuration(w http.ResponseWriter, r *http.Request) {
	config := map[string]any{"issuer": p.Issuer, "authorization_endpoint": p.AuthURL(), "token_endpoint": p.TokenURL(),
		"jwks_uri": p.JWKSURL(), "registration_endpoint": p.Issuer + "/register", "response_types_supported": []string{"id_token"},
		"scopes_supported":                      []string{"openid", "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"},
		"token_endpoint_auth_methods_supported": []string{"private_key_jwt"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"https://purl.imsglobal.org/spec/lti-platform-configuration": map[string]any{"product_family_code": "ltitest", "version": "1",
			"messages_supported": []map[string]any{{"type": "LtiResourceLinkRequest"}, {"type": "LtiDeepLinkingRequest"}}},
	}
	if p.Configure != nil {
		p.Configure(config)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(config)
}

// register takes a tool's registration as LTI Dynamic Registration says:
// bearing the registration token, an OpenID client of the implicit flow
// and client credentials with private_key_jwt, its login, redirect and
// keys' addresses, and an LTI tool configuration with a resource link
// message. The tool's addresses become the platform's to launch it.
func (p *Platform) register(w http.ResponseWriter, r *http.Request) {
	fail := func(what string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client_metadata", "error_description": what})
	}
	if r.Header.Get("Authorization") != "Bearer "+p.RegistrationToken {
		fail("registration token")
		return
	}
	var reg struct {
		ApplicationType string   `json:"application_type"`
		ResponseTypes   []string `json:"response_types"`
		GrantTypes      []string `json:"grant_types"`
		LoginURI        string   `json:"initiate_login_uri"`
		RedirectURIs    []string `json:"redirect_uris"`
		JWKSURI         string   `json:"jwks_uri"`
		AuthMethod      string   `json:"token_endpoint_auth_method"`
		Tool            struct {
			Domain        string `json:"domain"`
			TargetLinkURI string `json:"target_link_uri"`
			Messages      []struct {
				Type string `json:"type"`
			} `json:"messages"`
		} `json:"https://purl.imsglobal.org/spec/lti-tool-configuration"`
	}
	body, _ := io.ReadAll(r.Body)
	var raw map[string]any
	if json.Unmarshal(body, &reg) != nil || json.Unmarshal(body, &raw) != nil {
		fail("not JSON")
		return
	}
	switch {
	case reg.ApplicationType != "web" || !slices.Equal(reg.ResponseTypes, []string{"id_token"}) ||
		!slices.Contains(reg.GrantTypes, "implicit") || !slices.Contains(reg.GrantTypes, "client_credentials"):
		fail("application_type, response_types or grant_types")
	case reg.LoginURI == "" || len(reg.RedirectURIs) == 0 || reg.JWKSURI == "" || reg.AuthMethod != "private_key_jwt":
		fail("initiate_login_uri, redirect_uris, jwks_uri or token_endpoint_auth_method")
	case reg.Tool.Domain == "" || reg.Tool.TargetLinkURI == "" || len(reg.Tool.Messages) == 0 || reg.Tool.Messages[0].Type != "LtiResourceLinkRequest":
		fail("the LTI tool configuration")
	default:
		p.mu.Lock()
		p.tool, p.ToolLogin, p.ToolLaunch, p.ToolJWKS = raw, reg.LoginURI, reg.RedirectURIs[0], reg.JWKSURI
		p.mu.Unlock()
		config := map[string]any{"domain": reg.Tool.Domain, "messages": raw["https://purl.imsglobal.org/spec/lti-tool-configuration"].(map[string]any)["messages"]}
		if !p.NoDeploymentOnRegistration {
			config["deployment_id"] = p.DeploymentID
		}
		raw["client_id"], raw["https://purl.imsglobal.org/spec/lti-tool-configuration"] = p.ClientID, config
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(raw)
	}
}

// memberships answers Names and Role Provisioning for a course, a page of
// PageSize members at a time, linking to the next.
func (p *Platform) memberships(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	granted := p.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	members, ok := p.members[r.PathValue("course")]
	size := p.PageSize
	p.mu.Unlock()
	switch {
	case !granted:
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	case !ok:
		http.NotFound(w, r)
		return
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	from, to := min(page*size, len(members)), min((page+1)*size, len(members))
	if to < len(members) {
		next := *r.URL
		next.RawQuery = url.Values{"page": {strconv.Itoa(page + 1)}}.Encode()
		w.Header().Set("Link", "<"+p.Issuer+next.RequestURI()+">; rel=\"next\"")
	}
	w.Header().Set("Content-Type", "application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
	json.NewEncoder(w).Encode(map[string]any{"id": p.Issuer + r.URL.Path,
		"context": map[string]any{"id": r.PathValue("course")}, "members": members[from:to]})
}

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
