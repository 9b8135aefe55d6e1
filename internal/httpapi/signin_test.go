package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/signin/oidctest"
	"groupanalytics/internal/stores/storetest"
)

// opUsers are the provider's people: who they are there, whatever the
// service knows of them.
var opUsers = map[string]*oidctest.User{
	"u-teacher":   {ID: "u-teacher", Username: "ada", Password: "pw", FirstName: "Ada", LastName: "Teach", Email: "Ada@North.example", EmailVerified: true},
	"u-admin":     {ID: "u-admin", Username: "sam", Password: "pw", FirstName: "Sam", LastName: "Head", Email: "sam@north.example", EmailVerified: true},
	"u-district":  {ID: "u-district", Username: "dee", Password: "pw", FirstName: "Dee", LastName: "Strict", Email: "dee@north.example", EmailVerified: true},
	"u-stranger":  {ID: "u-stranger", Username: "stu", Password: "pw", FirstName: "Stu", LastName: "Ranger", Email: "stu@north.example", EmailVerified: true},
	"u-elsewhere": {ID: "u-elsewhere", Username: "eve", Password: "pw", FirstName: "Eve", LastName: "Out", Email: "eve@elsewhere.example", EmailVerified: true},
	"u-unchecked": {ID: "u-unchecked", Username: "una", Password: "pw", FirstName: "Una", LastName: "Checked", Email: "una@north.example"},
}

// claimsOf reads an ID token's claims, unchecked.
func claimsOf(t *testing.T, idToken string) map[string]any {
	t.Helper()
	parts := strings.Split(idToken, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// browser is a person's browser: its cookies, and the service's address.
type browser struct {
	t       *testing.T
	jar     *cookiejar.Jar
	service string
}

func newBrowser(t *testing.T, service string) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, jar: jar, service: service}
}

// get asks for u, following redirects except those to the service's
// sign-in callback (which it returns, to be followed by finish) and, with
// stop, any.
func (b *browser) do(req *http.Request, stop bool) response {
	b.t.Helper()
	client := &http.Client{Jar: b.jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if stop || strings.HasPrefix(req.URL.String(), b.service+"/oidc/callback") {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: body, sent: len(body)}
}

func (b *browser) get(u string, stop bool) response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req, stop)
}

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// toProvider begins a sign-in at the service with provider, and signs in
// at the provider's login page as user: it returns the address the
// provider sends the browser back to, not yet followed.
func (b *browser) toProvider(p *oidctest.Provider, provider, returnTo, user string) string {
	b.t.Helper()
	page := b.get(b.service+"/signin/"+provider+"?returnTo="+url.QueryEscape(returnTo), false)
	m := loginID.FindSubmatch(page.body)
	if page.status != http.StatusOK || m == nil {
		b.t.Fatalf("sign-in with %s: %d %s, want the provider's login page", provider, page.status, page.body)
	}
	form := url.Values{"id": {string(m[1])}, "username": {user}, "password": {"pw"}}
	req, _ := http.NewRequest(http.MethodPost, p.Issuer+"/login/username", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	back := b.do(req, false)
	callback := back.header.Get("Location")
	if back.status != http.StatusFound || !strings.HasPrefix(callback, b.service+"/oidc/callback?") {
		b.t.Fatalf("login as %s: %d %s, want a redirect to the service's callback", user, back.status, back.body)
	}
	return callback
}

// signIn signs in as user and returns the service's answer to the
// provider's redirect.
func (b *browser) signIn(p *oidctest.Provider, provider, user string) response {
	b.t.Helper()
	return b.get(b.toProvider(p, provider, "/", user), true)
}

// api asks the service's API with the browser's cookies, and the CSRF
// token when given; the answer is checked against the OpenAPI document.
func (b *browser) api(method, path, csrf string) response {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.service+path, nil)
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	r := b.do(req, true)
	openAPI().check(b.t, method, req.URL.Path, r)
	return r
}

// me returns /api/me's answer for the browser's session, and its CSRF
// token.
func (b *browser) me() (map[string]any, string) {
	b.t.Helper()
	r := b.api("GET", "/api/me", "")
	if r.status != http.StatusOK {
		b.t.Fatalf("GET /api/me: %d %s, want 200", r.status, r.body)
	}
	me := r.json(b.t)
	csrf, _ := me["csrfToken"].(string)
	return me, csrf
}

func (b *browser) sessionCookie() string {
	u, _ := url.Parse(b.service)
	for _, c := range b.jar.Cookies(u) {
		if c.Name == "ga_session" {
			return c.Value
		}
	}
	return ""
}

// signInEnv is a school (north, with a class c1 and one student in it,
// another class c2) in a district (lakeland) with another school
// (south), the staff the service knows, and the district's provider,
// whose client is registered at a provider of the test's own.
func signInEnv(t *testing.T, e *testEnv, clientID string) *oidctest.Provider {
	t.Helper()
	e.school("north", "UTC")
	e.school("south", "UTC")
	e.district("lakeland", "UTC", "north", "south")
	for _, c := range []string{"c1", "c2"} {
		if _, err := e.platform.CreateClass(ctx, analytics.Class{GroupID: "north", ID: c, Name: "Class " + c}); err != nil {
			t.Fatal(err)
		}
	}
	e.enrol("north", "s1", "Sid One")
	e.enrol("north", "s2", "Sal Two")
	if _, err := e.platform.SetClassMembers(ctx, "north", "c1", []string{"s1"}); err != nil {
		t.Fatal(err)
	}
	e.send(session("north", "s1", "2026-11-20T10:00:00Z"), session("north", "s2", "2026-11-20T10:00:00Z"))
	for _, m := range []analytics.Staff{
		{Email: "ada@north.example", Name: "Ada Teach", Role: analytics.RoleTeacher, GroupID: "north", ClassIDs: []string{"c1"}},
		{Email: "sam@north.example", Name: "Sam Head", Role: analytics.RoleSchoolAdmin, GroupID: "north"},
		{Email: "dee@north.example", Name: "Dee Strict", Role: analytics.RoleDistrictAdmin, DistrictID: "lakeland"},
		{Email: "una@north.example", Name: "Una Checked", Role: analytics.RoleSchoolAdmin, GroupID: "north"},
	} {
		if _, err := e.platform.AddStaff(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	p := oidctest.Start(t, opUsers, clientID, e.server.URL+"/oidc/callback")
	if _, err := e.platform.AddProvider(ctx, analytics.Provider{ID: "lakeland-idp", Name: "Lakeland accounts", Issuer: p.Issuer,
		ClientID: clientID, ClientSecret: oidctest.ClientSecret, DistrictID: "lakeland", EmailDomains: []string{"north.example"}}, false); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStaffSignIn: each role signs in through a real provider and sees
// what its role's key sees, and no more; the access log names the
// person; sign-out, removal and the idle lifetime end a session.
func TestStaffSignIn(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		p := signInEnv(t, e, "ga-roles-"+strings.ReplaceAll(t.Name(), "/", "-"))
		period := "startDate=2026-11-01&endDate=2026-11-21"

		teacher := newBrowser(t, e.server.URL)
		if r := teacher.signIn(p, "lakeland-idp", "ada"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
			t.Fatalf("teacher's sign-in: %d %s, want 303 to /", r.status, r.body)
		}
		cookie := teacher.sessionCookie()
		me, csrf := teacher.me()
		if me["kind"] != "teacher" || me["person"].(map[string]any)["email"] != "ada@north.example" || csrf == "" {
			t.Errorf("teacher's /api/me: %v", me)
		}
		if r := teacher.api("POST", "/api/groups/live-lecture?students=true&"+period, ""); r.status != http.StatusForbidden {
			t.Errorf("a session's report without its CSRF token: %d, want 403", r.status)
		}
		r := teacher.api("POST", "/api/groups/live-lecture?students=true&"+period, csrf)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"s1"`) || strings.Contains(string(r.body), `"s2"`) {
			t.Errorf("teacher's student report: %d %s, want s1 of their class alone", r.status, r.body)
		}
		for _, q := range []string{"classId=c2&", "schoolId=south&", "schoolId=north&students=true&", "classId=c1&schools=true&"} {
			if r := teacher.api("POST", "/api/groups/live-lecture?"+q+period, csrf); r.status == http.StatusOK {
				t.Errorf("teacher asking %q: 200 %s, want a refusal", q, r.body)
			}
		}
		// A student of her school outside her class, named: not in her answer.
		if r := teacher.api("POST", "/api/groups/live-lecture?students=true&studentId=s2&"+period, csrf); strings.Contains(string(r.body), `"s2"`) {
			t.Errorf("teacher naming a student outside her class: %d %s", r.status, r.body)
		}
		if r := teacher.api("GET", "/api/access-log", ""); r.status != http.StatusForbidden {
			t.Errorf("teacher's access log: %d, want 403 as for a teacher's key", r.status)
		}
		log := e.mustCall("GET", "/v1/admin/groups/north/access-log?limit=1", e.token(), "", http.StatusOK)
		entry := log["entries"].([]any)[0].(map[string]any)
		if person, _ := entry["person"].(map[string]any); entry["key"] != nil || person["email"] != "ada@north.example" ||
			person["role"] != "teacher" || person["provider"] != "lakeland-idp" {
			t.Errorf("the access log's entry of the teacher's answer: %v, want the person named", entry)
		}

		admin := newBrowser(t, e.server.URL)
		admin.signIn(p, "lakeland-idp", "sam")
		if me, _ := admin.me(); me["kind"] != "school" || me["school"].(map[string]any)["id"] != "north" {
			t.Errorf("school administrator's /api/me: %v", me)
		}
		district := newBrowser(t, e.server.URL)
		district.signIn(p, "lakeland-idp", "dee")
		dme, dcsrf := district.me()
		if dme["kind"] != "district" || len(dme["schools"].([]any)) != 2 {
			t.Errorf("district administrator's /api/me: %v", dme)
		}
		if r := district.api("POST", "/api/groups/chat?schools=true&"+period, dcsrf); r.status != http.StatusOK {
			t.Errorf("district administrator's per-school reports: %d %s", r.status, r.body)
		}
		// Another district's school: not hers.
		e.school("east", "UTC")
		e.district("far", "UTC", "east")
		if r := district.api("POST", "/api/groups/chat?schoolId=east&"+period, dcsrf); r.status == http.StatusOK {
			t.Errorf("district administrator asking another district's school: 200 %s", r.body)
		}

		// Signed out: the cookie, kept by an attacker, opens nothing.
		if r := teacher.api("POST", "/signout", ""); r.status != http.StatusForbidden {
			t.Errorf("sign-out without the CSRF token: %d, want 403", r.status)
		}
		if r := teacher.api("POST", "/signout", csrf); r.status != http.StatusNoContent || teacher.sessionCookie() != "" {
			t.Errorf("sign-out: %d, cookie %q", r.status, teacher.sessionCookie())
		}
		if r := e.do("GET", "/api/me", "", "", "Cookie", "ga_session="+cookie); r.status != http.StatusForbidden {
			t.Errorf("a session's cookie after sign-out: %d, want 403", r.status)
		}

		// Removed from the staff: signed out everywhere at once.
		staff, _ := e.platform.StaffOf(ctx, "north", "")
		for _, m := range staff {
			if m.Email == "sam@north.example" {
				if err := e.platform.RemoveStaff(ctx, m.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		if r := admin.api("GET", "/api/me", ""); r.status != http.StatusForbidden {
			t.Errorf("a removed staff member's session: %d, want 403", r.status)
		}

		// Used every hour, it lasts 12 hours, and no longer.
		for h := 1; h <= 12; h++ {
			e.clock.Set(testNow.Add(time.Duration(h) * time.Hour))
			want := http.StatusOK
			if h == 12 {
				want = http.StatusForbidden
			}
			if r := district.api("GET", "/api/me", ""); r.status != want {
				t.Errorf("a session used every hour, after %d hours: %d, want %d", h, r.status, want)
			}
		}
		// Left idle for over 2 hours: ended.
		again := newBrowser(t, e.server.URL)
		again.signIn(p, "lakeland-idp", "ada")
		again.me()
		e.clock.Set(testNow.Add(14*time.Hour + time.Second))
		if r := again.api("GET", "/api/me", ""); r.status != http.StatusForbidden {
			t.Errorf("a session idle for over 2 hours: %d, want 403", r.status)
		}
	})
}

// TestSignInRefusals: a sign-in that is not what it should be is refused
// with a page that names no school, and opens no session.
func TestSignInRefusals(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	p := signInEnv(t, e, "ga-refusals")
	refused := func(what string, r response, status int, says string) {
		t.Helper()
		body := string(r.body)
		if r.status != status || !strings.Contains(body, says) || strings.Contains(body, "north") && !strings.Contains(body, "@north.example") ||
			strings.Contains(body, "School ") || strings.Contains(r.header.Get("Set-Cookie"), "ga_session=gas_") {
			t.Errorf("%s: %d %s, want %d saying %q, no school named, no session", what, r.status, body, status, says)
		}
	}

	b := newBrowser(t, e.server.URL)
	refused("someone the service does not know", b.signIn(p, "lakeland-idp", "stu"), http.StatusForbidden, "Ask your school")
	refused("an email outside the provider's domains", b.signIn(p, "lakeland-idp", "eve"), http.StatusForbidden, "is not an address this sign-in takes")
	refused("an email the provider has not verified", b.signIn(p, "lakeland-idp", "una"), http.StatusForbidden, "has not verified")

	// The provider's redirect used twice (its state, and its code): the
	// second is refused.
	callback := b.toProvider(p, "lakeland-idp", "/", "ada")
	if r := b.get(callback, true); r.status != http.StatusSeeOther {
		t.Fatalf("first use of the callback: %d %s", r.status, r.body)
	}
	refused("the callback replayed", b.get(callback, true), http.StatusBadRequest, "not known")

	// Finished in a browser other than the one that began it.
	callback = b.toProvider(p, "lakeland-idp", "/", "ada")
	refused("a sign-in finished in another browser", newBrowser(t, e.server.URL).get(callback, true), http.StatusForbidden, "another browser")

	// A return address elsewhere is not followed.
	for _, to := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"} {
		r := b.get(b.toProvider(p, "lakeland-idp", to, "ada"), true)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
			t.Errorf("returnTo %q: %d to %q, want the dashboard", to, r.status, r.header.Get("Location"))
		}
	}

	// ID tokens that must not pass, each sent by the provider's token
	// endpoint in place of the real one.
	now := time.Now()
	resign := func(change func(map[string]any)) func(string) string {
		return func(idToken string) string {
			claims := claimsOf(t, idToken)
			change(claims)
			return p.Sign(t, claims)
		}
	}
	for _, c := range []struct {
		name   string
		tamper func(string) string
	}{
		{"another issuer", resign(func(c map[string]any) { c["iss"] = "https://other-idp.example" })},
		{"another audience", resign(func(c map[string]any) { c["aud"] = []string{"someone-else"} })},
		{"expired", resign(func(c map[string]any) { c["iat"], c["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix() })},
		{"another sign-in's nonce", resign(func(c map[string]any) { c["nonce"] = "replayed-nonce" })},
		{"an email without email_verified or Entra's xms_edov", resign(func(c map[string]any) { c["email"] = "ada@north.example" })},
		{"a bad signature", func(idToken string) string {
			parts := strings.Split(idToken, ".")
			claims := claimsOf(t, idToken)
			claims["email"] = "dee@north.example"
			payload, _ := json.Marshal(claims)
			return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
		}},
		{"alg none", func(idToken string) string {
			header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
			return header + "." + strings.Split(idToken, ".")[1] + "."
		}},
	} {
		p.Tamper(c.tamper)
		refused("an ID token of "+c.name, newBrowser(t, e.server.URL).signIn(p, "lakeland-idp", "ada"), http.StatusForbidden, "Sign-in failed")
	}
	// Entra ID sends no email_verified for an organisation's accounts,
	// but its xms_edov when asked: the tenant owns the domain.
	p.Tamper(resign(func(c map[string]any) { c["email"], c["xms_edov"] = "ada@north.example", true }))
	if r := newBrowser(t, e.server.URL).signIn(p, "lakeland-idp", "ada"); r.status != http.StatusSeeOther {
		t.Errorf("an email vouched for by xms_edov: %d %s", r.status, r.body)
	}
	p.Tamper(resign(func(c map[string]any) {
		c["email"], c["email_verified"], c["xms_edov"] = "ada@north.example", false, true
	}))
	refused("an email_verified false beside xms_edov", newBrowser(t, e.server.URL).signIn(p, "lakeland-idp", "ada"), http.StatusForbidden, "has not verified")
	p.Tamper(nil)
	if r := newBrowser(t, e.server.URL).signIn(p, "lakeland-idp", "ada"); r.status != http.StatusSeeOther {
		t.Errorf("an honest sign-in after them: %d %s", r.status, r.body)
	}

	// An issuer that differs from its discovery document's by a trailing
	// slash is refused when the provider is added, naming the document's.
	added := e.call("POST", "/v1/admin/districts/lakeland/sign-in-providers", e.token(), `{"id": "lakeland-slash", "issuer": "`+p.Issuer+`/", "clientId": "ga-refusals", "clientSecret": "s", "emailDomains": ["north.example"]}`)
	if want := `its discovery document says the issuer is "` + p.Issuer + `"`; added.status != http.StatusBadRequest || !strings.Contains(added.errorMessage(t), want) {
		t.Errorf("an issuer with a trailing slash: %d %s, want 400 saying %q", added.status, added.body, want)
	}

	// A link to a provider that is not (or no longer) one: it says so,
	// rather than to begin again.
	refused("a link to no provider", b.get(e.server.URL+"/signin/lakeland-old", true), http.StatusNotFound, "the link is not, or no longer, valid")

	// Staff of a school without a valid plan, and of a district none of
	// whose schools has one: a page that says so, and no session.
	for _, g := range []string{"north", "south"} {
		plans, err := e.platform.Plans(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.platform.CancelPlan(ctx, g, plans[0].ID); err != nil {
			t.Fatal(err)
		}
	}
	refused("a school administrator of a school without a plan", newBrowser(t, e.server.URL).signIn(p, "lakeland-idp", "sam"),
		http.StatusForbidden, "your school has no valid plan with this service now")
	refused("a district administrator of schools without a plan", newBrowser(t, e.server.URL).signIn(p, "lakeland-idp", "dee"),
		http.StatusForbidden, "schools has a valid plan with this service now")
	if strings.Contains(e.logs.String(), "client-secret") || strings.Contains(e.logs.String(), "gas_") {
		t.Errorf("the log holds a secret: %s", e.logs.String())
	}
}

// TestSessionIdleHonoured: with an idle lifetime of 30 seconds, a person
// who makes a request every 5 seconds for two minutes stays signed in,
// and is signed out once 30 seconds pass without one: the last use is
// written often enough for any idle lifetime.
func TestSessionIdleHonoured(t *testing.T) {
	e := newEnvWith(t, storetest.OpenKind(t, "sqlite"), func(c *httpapi.Config) { c.Sessions.Idle = 30 * time.Second })
	p := signInEnv(t, e, "ga-idle")
	b := newBrowser(t, e.server.URL)
	if r := b.signIn(p, "lakeland-idp", "sam"); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", r.status, r.body)
	}
	start := e.clock.Now()
	for step := range 25 {
		e.clock.Set(start.Add(time.Duration(step) * 5 * time.Second))
		if r := b.api("GET", "/api/me", ""); r.status != http.StatusOK {
			t.Fatalf("a request every 5 s, %d s in: %d, want 200", step*5, r.status)
		}
	}
	e.clock.Set(e.clock.Now().Add(30 * time.Second))
	if r := b.api("GET", "/api/me", ""); r.status != http.StatusForbidden {
		t.Errorf("30 s without a request: %d, want 403", r.status)
	}
}

// TestSignInByRosterID: a provider that matches people by the claim of
// their roster id finds the staff a roster import brought by it, only
// with its tenant's claim; one without a tenant claim is refused when it
// is set up.
func TestSignInByRosterID(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	token := e.token()
	e.school("sch-1", "UTC")
	bulk := map[string]string{"orgs": "bulk", "academicSessions": "bulk", "classes": "bulk", "users": "bulk", "roles": "bulk", "enrollments": "bulk"}
	e.importRoster("/v1/admin/groups/sch-1/roster", token, sisExport(), bulk)
	p := oidctest.Start(t, opUsers, "ga-roster-ids", e.server.URL+"/oidc/callback")
	provider := `{"id": "lv-classlink", "issuer": "` + p.Issuer + `", "clientId": "ga-roster-ids", "clientSecret": "` + oidctest.ClientSecret +
		`", "emailDomains": ["lakeview.example"], "matchClaim": "SourcedId"`
	if r := e.call("POST", "/v1/admin/groups/sch-1/sign-in-providers", token, provider+`}`); r.status != http.StatusBadRequest ||
		!strings.Contains(r.errorMessage(t), "Missing requiredClaims") {
		t.Errorf("matching by a roster id without a tenant's claim: %d %s, want 400", r.status, r.body)
	}
	e.mustCall("POST", "/v1/admin/groups/sch-1/sign-in-providers", token, provider+`, "requiredClaims": {"TenantId": "t1"}}`, http.StatusCreated)

	// The provider sends its person's roster id and tenant (as ClassLink
	// does), whoever they are by email.
	with := func(claims map[string]any) func(string) string {
		return func(idToken string) string {
			c := claimsOf(t, idToken)
			maps.Copy(c, claims)
			return p.Sign(t, c)
		}
	}
	p.Tamper(with(map[string]any{"SourcedId": "tch-1", "TenantId": "t1"}))
	b := newBrowser(t, e.server.URL)
	if r := b.signIn(p, "lv-classlink", "ada"); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in by roster id: %d %s", r.status, r.body)
	}
	if me, _ := b.me(); me["kind"] != "teacher" || me["person"].(map[string]any)["email"] != "rortiz@lakeview.example" {
		t.Errorf("signed in by roster id: %v, want the roster's teacher", me)
	}
	for _, c := range []struct {
		claims map[string]any
		status int
		says   string
	}{
		{map[string]any{"SourcedId": "tch-1", "TenantId": "t2"}, http.StatusForbidden, "its TenantId is another"},
		{map[string]any{"SourcedId": "tch-1"}, http.StatusForbidden, "its TenantId is another"},
		{map[string]any{"TenantId": "t1"}, http.StatusForbidden, "sent no SourcedId"},
		{map[string]any{"SourcedId": "stu-1", "TenantId": "t1"}, http.StatusForbidden, "not on the staff"},
	} {
		p.Tamper(with(c.claims))
		r := newBrowser(t, e.server.URL).signIn(p, "lv-classlink", "ada")
		if r.status != c.status || !strings.Contains(string(r.body), c.says) {
			t.Errorf("claims %v: %d %s, want %d saying %q", c.claims, r.status, r.body, c.status, c.says)
		}
	}
}
