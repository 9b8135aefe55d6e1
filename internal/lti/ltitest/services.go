package ltitest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// LTI Advantage as the platform offers it: Names and Role Provisioning,
// deep linking's return, Dynamic Registration.

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
