package httpapi_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/lti/ltitest"
	"groupanalytics/internal/stores/storetest"
)

// ltiEnv is a school (north) with a roster's class (sec-1, of students s1
// and s2; another, sec-2, of s3) and an LMS registered for it through the
// admin API: a platform of the test's own.
func ltiEnv(t *testing.T, e *testEnv) *ltitest.Platform {
	t.Helper()
	ltiSchool(t, e)
	p := ltitest.Start(t, "ga-tool", "dep-1")
	p.ToolLogin, p.ToolLaunch, p.Now = e.server.URL+"/lti/login", e.server.URL+"/lti/launch", e.clock.Now
	e.mustCall("POST", "/v1/admin/groups/north/lti-platforms", e.token(), `{"id": "north-canvas", "name": "Canvas", "issuer": "`+p.Issuer+
		`", "clientId": "ga-tool", "deploymentIds": ["dep-1"], "authUrl": "`+p.AuthURL()+`", "tokenUrl": "`+p.TokenURL()+`", "jwksUrl": "`+p.JWKSURL()+`"}`,
		http.StatusCreated)
	return p
}

// ltiSchool is ltiEnv's school, without an LMS.
func ltiSchool(t *testing.T, e *testEnv) {
	t.Helper()
	e.school("north", "UTC")
	for _, st := range []string{"s1", "s2", "s3"} {
		e.enrol("north", st, "Student "+st)
	}
	for class, members := range map[string][]string{"sec-1": {"s1", "s2"}, "sec-2": {"s3"}} {
		if _, err := e.platform.CreateClass(ctx, analytics.Class{GroupID: "north", ID: class, Name: "Class " + class, Members: members}); err != nil {
			t.Fatal(err)
		}
	}
	e.send(session("north", "s1", "2026-11-20T10:00:00Z"), session("north", "s3", "2026-11-20T11:00:00Z"))
}

var (
	teacher = ltitest.Person{ID: "u-teach", Name: "Tess Teach", Email: "tess@north.example", SourcedID: "t-1", Roles: []string{ltitest.Instructor}}
	admin   = ltitest.Person{ID: "u-admin", Name: "Ada Admin", Email: "ada@north.example", Roles: []string{ltitest.InstitutionAdmin}}
	learner = ltitest.Person{ID: "u-learn", Name: "Lee Learn", Email: "lee@north.example", SourcedID: "s1", Roles: []string{ltitest.Learner}}
	course  = ltitest.Course{ID: "course-7", Title: "Biology 7", SectionSourcedID: "sec-1"}
)

var sessionMeta = regexp.MustCompile(`<meta name="groupanalytics-session" content="(gal_[A-Z0-9]+)"`)

// launch launches the tool from platform p as person in c, in browser b:
// its login, the platform's answer, and the form it posts; it returns
// the launch's answer.
func launch(t *testing.T, b *browser, p *ltitest.Platform, person ltitest.Person, c ltitest.Course) response {
	t.Helper()
	return launchFrom(t, b, p, p.LoginURL(person, c, false))
}

// launchFrom launches the tool from the platform's login address.
func launchFrom(t *testing.T, b *browser, p *ltitest.Platform, loginURL string) response {
	t.Helper()
	page := b.get(loginURL, false)
	if page.status != http.StatusOK {
		t.Fatalf("the login went to %d: %s", page.status, page.body)
	}
	return b.post(p.ToolLaunch, ltitest.Posted(t, strings.NewReader(string(page.body))))
}

// post posts a form, as the platform's page does.
func (b *browser) post(u string, form url.Values) response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req, true)
}

// launchedToken is the session token of a launch's page, or "".
func launchedToken(r response) string {
	if m := sessionMeta.FindSubmatch(r.body); m != nil {
		return string(m[1])
	}
	return ""
}

// TestLTILaunch: an instructor launching from a course that is a
// roster's class sees that class, as its teacher would; an instructor of
// a course that is none gets a class made for it; an administrator sees
// the school; a learner sees a page saying the reports are for staff,
// and nothing opens. Each answer of a launch's session names the person
// and the LMS in the access log. The page is framed by the platform only.
// The tool's keys are published at /lti/jwks.
func TestLTILaunch(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		p := ltiEnv(t, e)
		asTeacher := launch(t, newBrowser(t, e.server.URL), p, teacher, course)
		token := launchedToken(asTeacher)
		if asTeacher.status != http.StatusOK || token == "" {
			t.Fatalf("the instructor's launch: %d %s", asTeacher.status, asTeacher.body)
		}
		if csp := asTeacher.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors "+p.Issuer) {
			t.Errorf("the launch's page may be framed by %q, want the platform", csp)
		}
		if cache := asTeacher.header.Get("Cache-Control"); cache != "no-store" {
			t.Errorf("the launch's page, holding a session's token, is cached: %q", cache)
		}
		me := e.do("GET", "/api/me", token, "").json(t)
		if me["kind"] != "teacher" || strings.Join(stringsOf(me["classIds"]), ",") != "sec-1" {
			t.Errorf("the instructor's /api/me: %v, want the class sec-1 alone", me)
		}
		person, _ := me["person"].(map[string]any)
		if person["email"] != teacher.Email || person["provider"] != "lti:north-canvas" || me["csrfToken"] != nil {
			t.Errorf("the instructor's person: %v", me)
		}
		if r := e.reportRequest("live-lecture", token, "classId=sec-1&startDate=2026-11-20&endDate=2026-11-20", ""); r.status != http.StatusOK {
			t.Errorf("the course's class's report: %d %s", r.status, r.body)
		}
		if r := e.reportRequest("live-lecture", token, "classId=sec-2&startDate=2026-11-20&endDate=2026-11-20", ""); r.status == http.StatusOK {
			t.Errorf("another class's report opened to the course's instructor")
		}
		if r := e.reportRequest("chat", token, "students=true", ""); r.status != http.StatusOK || strings.Contains(string(r.body), `"s3"`) {
			t.Errorf("the instructor's student reports: %d, or another class's student in them: %s", r.status, r.body)
		}
		entries := e.mustCall("GET", "/v1/admin/groups/north/access-log", e.token(), "", http.StatusOK)["entries"].([]any)
		last, _ := entries[0].(map[string]any)
		if who, _ := last["person"].(map[string]any); who["email"] != teacher.Email || who["provider"] != "lti:north-canvas" {
			t.Errorf("the access log's entry of the launch's answer: %v, want the person and the LMS", last)
		}

		// A course no roster's class is: a class of the school made for it.
		other := launch(t, newBrowser(t, e.server.URL), p, teacher, ltitest.Course{ID: "course-9", Title: "Art 9"})
		me = e.do("GET", "/api/me", launchedToken(other), "").json(t)
		ids := stringsOf(me["classIds"])
		if len(ids) != 1 || !strings.HasPrefix(ids[0], "lms-") {
			t.Fatalf("a course no class is: %v", me)
		}
		if c, err := e.platform.Class(ctx, "north", ids[0]); err != nil || c.Name != "Art 9 (from Canvas)" {
			t.Errorf("the class made for the course: %+v, %v", c, err)
		}
		if again := e.do("GET", "/api/me", launchedToken(launch(t, newBrowser(t, e.server.URL), p, teacher, ltitest.Course{ID: "course-9", Title: "Art 9"})), "").json(t); strings.Join(stringsOf(again["classIds"]), ",") != ids[0] {
			t.Errorf("the course launched again: %v, want the same class %s", again, ids[0])
		}

		// An administrator: the school.
		asAdmin := launch(t, newBrowser(t, e.server.URL), p, admin, course)
		if me := e.do("GET", "/api/me", launchedToken(asAdmin), "").json(t); me["kind"] != "school" || me["school"].(map[string]any)["id"] != "north" {
			t.Errorf("the administrator's /api/me: %v", me)
		}
		// The tool's keys: made once, the same at each ask.
		keys := e.do("GET", "/lti/jwks", "", "").json(t)["keys"].([]any)
		again := e.do("GET", "/lti/jwks", "", "").json(t)["keys"].([]any)
		if len(keys) != 1 || keys[0].(map[string]any)["kty"] != "RSA" || keys[0].(map[string]any)["kid"] != again[0].(map[string]any)["kid"] {
			t.Errorf("the tool's keys: %v, then %v", keys, again)
		}
		// A learner: a page, and nothing opens.
		asLearner := launch(t, newBrowser(t, e.server.URL), p, learner, course)
		if asLearner.status != http.StatusForbidden || !strings.Contains(string(asLearner.body), "for your school") || launchedToken(asLearner) != "" {
			t.Errorf("the learner's launch: %d %s", asLearner.status, asLearner.body)
		}
	})
}

// TestLTINamesAndRoles: a class made for a course takes its members from
// the platform's Names and Role Provisioning, with a token asked with the
// tool's signed assertion, page by page: its active learners that are the
// school's students, by their roster id or else their platform id. It
// takes them again at a launch a day later, not before; a roster's class
// keeps the roster's members; a platform that refuses the tool's token
// leaves the class as it was, and the launch opens all the same.
func TestLTINamesAndRoles(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		p := ltiEnv(t, e)
		p.ToolJWKS, p.PageSize = e.server.URL+"/lti/jwks", 2
		art := ltitest.Course{ID: "course-9", Title: "Art 9"}
		learners := []ltitest.Member{
			{UserID: "u-1", PersonSourcedID: "s1", Roles: []string{ltitest.Learner}, Status: "Active"},
			{UserID: "s2", Roles: []string{ltitest.Learner}}, // no roster id: the platform's id is the student's
			{UserID: "u-3", PersonSourcedID: "s3", Roles: []string{ltitest.Learner}, Status: "Inactive"},
			{UserID: "u-4", PersonSourcedID: "nobody", Roles: []string{ltitest.Learner}},
			{UserID: teacher.ID, PersonSourcedID: teacher.SourcedID, Roles: []string{ltitest.Instructor}},
		}
		p.SetMembers(art.ID, learners)
		p.SetMembers(course.ID, learners)
		members := func(token string) string {
			t.Helper()
			ids := stringsOf(e.do("GET", "/api/me", token, "").json(t)["classIds"])
			if len(ids) != 1 {
				t.Fatalf("the launch's classes: %v", ids)
			}
			c, err := e.platform.Class(ctx, "north", ids[0])
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(c.Members, ",")
		}
		token := launchedToken(launch(t, newBrowser(t, e.server.URL), p, teacher, art))
		if got := members(token); got != "s1,s2" {
			t.Errorf("the course's class's members: %q, want s1,s2 (s3 inactive, nobody no student, the instructor no learner)", got)
		}
		if scopes := p.Scopes(); len(scopes) != 1 || scopes[0] != "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly" {
			t.Errorf("the tokens asked: %v", scopes)
		}
		if r := e.reportRequest("chat", token, "students=true", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"s2"`) || strings.Contains(string(r.body), `"s3"`) {
			t.Errorf("the class's student report: %d %s", r.status, r.body)
		}

		learners[2].Status = "Active"
		p.SetMembers(art.ID, learners)
		if got := members(launchedToken(launch(t, newBrowser(t, e.server.URL), p, teacher, art))); got != "s1,s2" || len(p.Scopes()) != 1 {
			t.Errorf("launched again at once: members %q after %d tokens, want no second sync", got, len(p.Scopes()))
		}
		e.clock.Set(e.clock.Now().Add(25 * time.Hour))
		if got := members(launchedToken(launch(t, newBrowser(t, e.server.URL), p, teacher, art))); got != "s1,s2,s3" {
			t.Errorf("launched a day later: members %q, want s1,s2,s3", got)
		}

		// A roster's class: the roster's members stay.
		asked := len(p.Scopes())
		if got := members(launchedToken(launch(t, newBrowser(t, e.server.URL), p, teacher, course))); got != "s1,s2" || len(p.Scopes()) != asked {
			t.Errorf("the roster's class: members %q, %d tokens asked, want the roster's and none", got, len(p.Scopes())-asked)
		}

		// The platform refuses the tool's assertion: the launch opens, the
		// class is as it was.
		p.ToolJWKS = p.JWKSURL() // the platform's own keys: not the tool's
		bio := ltitest.Course{ID: "course-10", Title: "Bio 10"}
		p.SetMembers(bio.ID, learners)
		r := launch(t, newBrowser(t, e.server.URL), p, teacher, bio)
		if r.status != http.StatusOK || members(launchedToken(r)) != "" {
			t.Errorf("a refused token: the launch %d, the class's members %q", r.status, members(launchedToken(r)))
		}
	})
}

// TestLTIStaffMatching: a launch's person whose roster id is a staff
// member's is that member: the access log names them as the school knows
// them, and removing them ends the session. Matching by email is the
// platform's choice: off, an administrator whose email is a teacher's
// opens the school as the LMS says; on, the school's records win, and
// the launch is refused rather than opening more than a teacher's.
func TestLTIStaffMatching(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		p := ltiEnv(t, e)
		bulk := map[string]string{"orgs": "bulk", "academicSessions": "bulk", "classes": "bulk", "users": "bulk", "roles": "bulk", "enrollments": "bulk"}
		e.importRoster("/v1/admin/groups/north/roster", e.token(), sisExport(), bulk) // its teacher rortiz@lakeview.example, tch-1, of bio-7b
		if _, err := e.platform.AddStaff(ctx, analytics.Staff{GroupID: "north", Email: admin.Email, Name: "Ada Teacher", Role: analytics.RoleTeacher,
			ClassIDs: []string{"bio-7b"}}); err != nil {
			t.Fatal(err)
		}
		inLMS := ltitest.Person{ID: "u-r", Name: "R. in the LMS", Email: "r@lms.example", SourcedID: "tch-1", Roles: []string{ltitest.Instructor}}
		biology := ltitest.Course{ID: "c-bio", Title: "Biology", SectionSourcedID: "bio-7b"}
		token := launchedToken(launch(t, newBrowser(t, e.server.URL), p, inLMS, biology))
		person, _ := e.do("GET", "/api/me", token, "").json(t)["person"].(map[string]any)
		if person["email"] != "rortiz@lakeview.example" {
			t.Errorf("the matched instructor's person: %v", person)
		}
		if r := e.reportRequest("chat", token, "students=true", ""); r.status != http.StatusOK {
			t.Fatalf("the matched instructor's report: %d %s", r.status, r.body)
		}
		entries := e.mustCall("GET", "/v1/admin/groups/north/access-log", e.token(), "", http.StatusOK)["entries"].([]any)
		if who, _ := entries[0].(map[string]any)["person"].(map[string]any); who["email"] != "rortiz@lakeview.example" {
			t.Errorf("the access log names %v, want the staff member", who)
		}
		staff, err := e.platform.StaffOf(ctx, "north", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range staff {
			if m.SourcedID == "tch-1" {
				if err := e.platform.RemoveStaff(ctx, m.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		if r := e.do("GET", "/api/me", token, ""); r.status == http.StatusOK {
			t.Errorf("the session of a staff member removed: %d %s", r.status, r.body)
		}

		// By email: only where the platform lets it.
		if me := e.do("GET", "/api/me", launchedToken(launch(t, newBrowser(t, e.server.URL), p, admin, course)), "").json(t); me["kind"] != "school" {
			t.Errorf("an administrator not matched by email: %v", me)
		}
		q := ltitest.Start(t, "ga-tool-2", "dep-1")
		q.ToolLogin, q.ToolLaunch, q.Now = e.server.URL+"/lti/login", e.server.URL+"/lti/launch", e.clock.Now
		e.mustCall("POST", "/v1/admin/groups/north/lti-platforms", e.token(), `{"id": "north-moodle", "issuer": "`+q.Issuer+`", "clientId": "ga-tool-2",
			"deploymentIds": ["dep-1"], "authUrl": "`+q.AuthURL()+`", "tokenUrl": "`+q.TokenURL()+`", "jwksUrl": "`+q.JWKSURL()+`", "matchEmail": true}`, http.StatusCreated)
		if r := launch(t, newBrowser(t, e.server.URL), q, admin, course); r.status != http.StatusForbidden || launchedToken(r) != "" ||
			!strings.Contains(string(r.body), "list you as a teacher") {
			t.Errorf("an LMS administrator the school lists as a teacher: %d %s", r.status, r.body)
		}
	})
}

// dataOf reads the data-name attributes of a page's element of this id.
func dataOf(t *testing.T, page []byte, id string) map[string]string {
	t.Helper()
	tag := regexp.MustCompile(`<[a-z]+ [^>]*id="` + id + `"[^>]*>`).Find(page)
	if tag == nil {
		t.Fatalf("no element %q in:\n%s", id, page)
	}
	data := map[string]string{}
	for _, m := range regexp.MustCompile(`data-([a-z]+)="([^"]*)"`).FindAllSubmatch(tag, -1) {
		data[string(m[1])] = html.UnescapeString(string(m[2]))
	}
	return data
}

// unseal opens a sealed launch's token with the secret its login kept in
// the platform's storage, as lti.js does.
func unseal(t *testing.T, sealed, secret string) string {
	t.Helper()
	hash := sha256.Sum256([]byte(secret))
	pad := sha256.Sum256(append(hash[:], "groupanalytics lti seal"...))
	raw, err := hex.DecodeString(sealed)
	if err != nil || len(raw) > len(pad) {
		t.Fatalf("a sealed token %q", sealed)
	}
	for i := range raw {
		raw[i] ^= pad[i]
	}
	return string(raw)
}

// TestLTILaunchWithPlatformStorage: a login offered the platform's
// storage answers with a page that keeps its secret there; a launch that
// comes back with the login's cookie opens as any, and one without it
// opens sealed: its page holds no token, only the token sealed by the
// secret, which opens it and nothing else. A login offered no storage
// whose launch comes without the cookie is refused with a link that
// begins it again in a new window.
func TestLTILaunchWithPlatformStorage(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	p := ltiEnv(t, e)
	p.Storage = true
	login := func(b *browser) (map[string]string, response) {
		t.Helper()
		page := b.get(p.LoginURL(teacher, course, false), false)
		data := dataOf(t, page.body, "lti-login")
		if page.status != http.StatusOK || data["target"] != "_parent" || data["origin"] != p.Issuer || !strings.HasPrefix(data["key"], "state_") ||
			!strings.HasPrefix(data["auth"], p.AuthURL()+"?") || data["value"] == "" {
			t.Fatalf("the login's page: %d %v", page.status, data)
		}
		if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors "+p.Issuer) || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("the login's page's policy: %q", csp)
		}
		return data, page
	}
	// The cookie kept: the launch opens as any.
	b := newBrowser(t, e.server.URL)
	data, _ := login(b)
	if r := b.post(p.ToolLaunch, ltitest.Posted(t, strings.NewReader(string(b.get(data["auth"], false).body)))); r.status != http.StatusOK || launchedToken(r) == "" {
		t.Errorf("a launch with the login's cookie: %d %s", r.status, r.body)
	}
	// No cookie: sealed.
	data, _ = login(newBrowser(t, e.server.URL))
	cookieless := newBrowser(t, e.server.URL)
	r := cookieless.post(p.ToolLaunch, ltitest.Posted(t, strings.NewReader(string(cookieless.get(data["auth"], false).body))))
	sealed := regexp.MustCompile(`<meta name="groupanalytics-session" content="" data-sealed="([0-9a-f]+)" data-key="([^"]+)" data-target="_parent" data-origin="([^"]+)">`).FindSubmatch(r.body)
	if r.status != http.StatusOK || sealed == nil || strings.Contains(string(r.body), "gal_") || string(sealed[2]) != data["key"] || string(sealed[3]) != p.Issuer {
		t.Fatalf("a launch without the cookie: %d %s", r.status, r.body)
	}
	token := unseal(t, string(sealed[1]), data["value"])
	if me := e.do("GET", "/api/me", token, "").json(t); me["kind"] != "teacher" {
		t.Errorf("the unsealed token's /api/me: %v", me)
	}
	other, _ := login(newBrowser(t, e.server.URL))
	if wrong := unseal(t, string(sealed[1]), other["value"]); regexp.MustCompile(`^gal_[A-Z0-9]+$`).MatchString(wrong) {
		t.Errorf("another login's secret opened the sealed token: %q", wrong)
	}

	// No storage and no cookie: a new window.
	p.Storage = false
	first := newBrowser(t, e.server.URL).get(p.LoginURL(teacher, course, false), false)
	refused := newBrowser(t, e.server.URL).post(p.ToolLaunch, ltitest.Posted(t, strings.NewReader(string(first.body))))
	again := regexp.MustCompile(`<a class="button" href="([^"]+)" target="_blank" rel="noopener">Open it in a new window</a>`).FindSubmatch(refused.body)
	if refused.status != http.StatusForbidden || again == nil || !strings.HasPrefix(html.UnescapeString(string(again[1])), e.server.URL+"/lti/login?") {
		t.Fatalf("a launch without the cookie, offered no storage: %d %s", refused.status, refused.body)
	}
	w := newBrowser(t, e.server.URL)
	if r := w.post(p.ToolLaunch, ltitest.Posted(t, strings.NewReader(string(w.get(html.UnescapeString(string(again[1])), false).body)))); r.status != http.StatusOK || launchedToken(r) == "" {
		t.Errorf("the launch begun again in a new window: %d %s", r.status, r.body)
	}
}

// deepLinkForm is a form of the deep linking page: where it posts, and
// its signed answer.
var deepLinkForm = regexp.MustCompile(`<form method="post" action="([^"]+)"><input type="hidden" name="JWT" value="([^"]+)">\s*<button type="submit" class="button">([^<]+)</button>`)

// TestLTIDeepLinking: an instructor's deep linking request is answered
// with the links the tool may place (the class's usage, its students who
// stopped), each a form posting a signed LtiDeepLinkingResponse that the
// platform takes; a launch of the placed link opens the students who
// stopped. An administrator's links are the school's; a learner's request
// is refused, as is one whose return address is not the platform's kind
// (http off loopback).
func TestLTIDeepLinking(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	p := ltiEnv(t, e)
	p.ToolJWKS = e.server.URL + "/lti/jwks"
	b := newBrowser(t, e.server.URL)
	page := launchFrom(t, b, p, p.LoginURL(teacher, course, true))
	forms := deepLinkForm.FindAllStringSubmatch(string(page.body), -1)
	if page.status != http.StatusOK || len(forms) != 2 || launchedToken(page) != "" {
		t.Fatalf("the deep linking page: %d, %d forms, a session %q:\n%s", page.status, len(forms), launchedToken(page), page.body)
	}
	if titles := forms[0][3] + "; " + forms[1][3]; titles != "Usage: Class sec-1; Students who stopped: Class sec-1" {
		t.Errorf("the links offered: %s", titles)
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action "+p.Issuer+";") || !strings.Contains(csp, "frame-ancestors "+p.Issuer) {
		t.Errorf("the deep linking page's policy: %q", csp)
	}
	placed, err := http.PostForm(html.UnescapeString(forms[1][1]), url.Values{"JWT": {forms[1][2]}})
	if err != nil {
		t.Fatal(err)
	}
	placed.Body.Close()
	links := p.Links()
	if placed.StatusCode != http.StatusOK || len(links) != 1 || links[0].URL != e.server.URL+"/lti/launch" || links[0].Custom["view"] != "stopped" {
		t.Fatalf("the platform took %d, placed %+v", placed.StatusCode, links)
	}
	opened := launchFrom(t, newBrowser(t, e.server.URL), p, p.LinkLoginURL(teacher, course, links[0]))
	if opened.status != http.StatusOK || !strings.Contains(string(opened.body), `data-view="stopped"`) || launchedToken(opened) == "" {
		t.Errorf("the placed link's launch: %d %s", opened.status, opened.body)
	}

	asAdmin := launchFrom(t, newBrowser(t, e.server.URL), p, p.LoginURL(admin, course, true))
	if forms := deepLinkForm.FindAllStringSubmatch(string(asAdmin.body), -1); len(forms) != 2 || forms[0][3] != "Usage: School north" {
		t.Errorf("the administrator's links: %d %s", asAdmin.status, asAdmin.body)
	}
	if r := launchFrom(t, newBrowser(t, e.server.URL), p, p.LoginURL(learner, course, true)); r.status != http.StatusForbidden || deepLinkForm.Match(r.body) {
		t.Errorf("a learner's deep linking request: %d %s", r.status, r.body)
	}
	p.Tamper(func(claims map[string]any) {
		claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"].(map[string]any)["deep_link_return_url"] = "http://lms.example/return"
	})
	if r := launchFrom(t, newBrowser(t, e.server.URL), p, p.LoginURL(teacher, course, true)); r.status != http.StatusForbidden || deepLinkForm.Match(r.body) {
		t.Errorf("a return address over http: %d %s", r.status, r.body)
	}
}

// TestLTIDynamicRegistration: an address made for a school with the admin
// API, opened by the LMS with its configuration and registration token,
// registers the tool with the LMS (its login, launch and keys, a course
// navigation link, deep linking, Names and Role Provisioning) and records
// the platform the LMS made for the school; its page tells the LMS it is
// done. A launch then opens the course's class. The address is used once.
func TestLTIDynamicRegistration(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		ltiSchool(t, e)
		p := ltitest.Start(t, "dyn-client", "dep-9")
		p.RegistrationToken, p.Now = "platform-registration-token", e.clock.Now
		made := e.mustCall("POST", "/v1/admin/groups/north/lti-registrations", e.token(), "", http.StatusCreated)
		address, _ := made["url"].(string)
		if !strings.HasPrefix(address, e.server.URL+"/lti/register?token=gar_") || made["expiresAt"] != "2026-11-28T12:00:00.000Z" || made["groupId"] != "north" {
			t.Fatalf("the registration address: %v", made)
		}
		page := newBrowser(t, e.server.URL).get(p.RegistrationURL(address), false)
		if page.status != http.StatusOK || !strings.Contains(string(page.body), `<script src="/assets/lti-registered.js">`) {
			t.Fatalf("the registration's page: %d %s", page.status, page.body)
		}
		if csp := page.header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors "+p.Issuer) {
			t.Errorf("the registration's page may be framed by %q, want the LMS", csp)
		}
		reg := p.Registered()
		config, _ := reg["https://purl.imsglobal.org/spec/lti-tool-configuration"].(map[string]any)
		messages, _ := config["messages"].([]any)
		if reg["initiate_login_uri"] != e.server.URL+"/lti/login" || reg["jwks_uri"] != e.server.URL+"/lti/jwks" ||
			reg["scope"] != "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly" || len(messages) != 2 ||
			!strings.Contains(fmt.Sprint(messages), "course_navigation") || !strings.Contains(fmt.Sprint(messages), "LtiDeepLinkingRequest") {
			t.Errorf("the tool's registration: %v", reg)
		}
		platforms := e.mustCall("GET", "/v1/admin/groups/north/lti-platforms", e.token(), "", http.StatusOK)["platforms"].([]any)
		if len(platforms) != 1 {
			t.Fatalf("the school's platforms: %v", platforms)
		}
		got := platforms[0].(map[string]any)
		if !strings.HasPrefix(got["id"].(string), "ltitest-") || got["issuer"] != p.Issuer || got["clientId"] != "dyn-client" ||
			strings.Join(stringsOf(got["deploymentIds"]), ",") != "dep-9" || got["tokenUrl"] != p.TokenURL() || got["jwksUrl"] != p.JWKSURL() {
			t.Errorf("the platform registered: %v", got)
		}
		if r := launch(t, newBrowser(t, e.server.URL), p, teacher, course); r.status != http.StatusOK || launchedToken(r) == "" {
			t.Errorf("a launch of the registered LMS: %d %s", r.status, r.body)
		}
		if again := newBrowser(t, e.server.URL).get(p.RegistrationURL(address), false); again.status != http.StatusBadRequest ||
			!strings.Contains(string(again.body), "used already") {
			t.Errorf("the address used again: %d %s", again.status, again.body)
		}
	})
}

// TestLTIDynamicRegistrationRefusals: a registration the LMS refuses (its
// token wrong), or whose configuration names an issuer of another site,
// records nothing and leaves the address usable; an address past its
// week, or opened without a configuration, registers nothing; a
// district's address registers the LMS for the district, and an LMS that
// names no deployment takes its client id's.
func TestLTIDynamicRegistrationRefusals(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	ltiSchool(t, e)
	p := ltitest.Start(t, "dyn-client", "dep-9")
	p.RegistrationToken, p.Now = "platform-registration-token", e.clock.Now
	address := e.mustCall("POST", "/v1/admin/groups/north/lti-registrations", e.token(), "", http.StatusCreated)["url"].(string)
	platforms := func() int {
		return len(e.mustCall("GET", "/v1/admin/groups/north/lti-platforms", e.token(), "", http.StatusOK)["platforms"].([]any))
	}
	registerWith := func(u string) response { return newBrowser(t, e.server.URL).get(u, false) }

	if r := registerWith(address); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "Paste this address into your LMS") {
		t.Errorf("the address opened without the LMS's configuration: %d %s", r.status, r.body)
	}
	good := p.RegistrationToken
	p.RegistrationToken = "another"
	u := p.RegistrationURL(address)
	p.RegistrationToken = good
	if r := registerWith(strings.Replace(u, "registration_token=another", "registration_token=forged", 1)); r.status != http.StatusForbidden ||
		!strings.Contains(string(r.body), "The LMS did not register this tool") || platforms() != 0 {
		t.Errorf("a registration the LMS refused: %d %s; %d platforms", r.status, r.body, platforms())
	}
	p.Configure = func(config map[string]any) { config["issuer"] = "https://lms.example" }
	if r := registerWith(p.RegistrationURL(address)); r.status != http.StatusForbidden || platforms() != 0 {
		t.Errorf("a configuration of another site's issuer: %d %s; %d platforms", r.status, r.body, platforms())
	}
	p.Configure = nil
	if r := registerWith(p.RegistrationURL(address)); r.status != http.StatusOK || platforms() != 1 {
		t.Errorf("the address after refusals: %d %s; %d platforms", r.status, r.body, platforms())
	}

	stale := e.mustCall("POST", "/v1/admin/groups/north/lti-registrations", e.token(), "", http.StatusCreated)["url"].(string)
	e.clock.Set(e.clock.Now().Add(8 * 24 * time.Hour))
	other := ltitest.Start(t, "dyn-2", "dep-2")
	other.Now, other.RegistrationToken = e.clock.Now, "other-registration-token"
	if r := registerWith(other.RegistrationURL(stale)); r.status != http.StatusBadRequest || other.Registered() != nil {
		t.Errorf("an address past its week: %d %s", r.status, r.body)
	}

	e.district("metro", "UTC", "north")
	other.NoDeploymentOnRegistration = true
	if r := registerWith(other.RegistrationURL(e.mustCall("POST", "/v1/admin/districts/metro/lti-registrations", e.token(), "", http.StatusCreated)["url"].(string))); r.status != http.StatusOK {
		t.Fatalf("a district's registration: %d %s", r.status, r.body)
	}
	got := e.mustCall("GET", "/v1/admin/districts/metro/lti-platforms", e.token(), "", http.StatusOK)["platforms"].([]any)
	if len(got) != 1 || len(stringsOf(got[0].(map[string]any)["deploymentIds"])) != 0 {
		t.Fatalf("the district's platforms: %v", got)
	}
	if r := launch(t, newBrowser(t, e.server.URL), other, admin, course); r.status != http.StatusOK {
		t.Errorf("a launch of the district's LMS, of a deployment it did not name: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/v1/admin/groups/nowhere/lti-registrations", e.token(), ""); r.status != http.StatusNotFound {
		t.Errorf("a registration for no school: %d %s", r.status, r.body)
	}
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	out := make([]string, len(list))
	for i, x := range list {
		out[i], _ = x.(string)
	}
	return out
}

// TestLTILaunchRefusals: a launch that is not what it should be (another
// audience or issuer, expired, another launch's nonce, an unregistered
// deployment, a message of another version, alg none, a key the platform
// does not publish, the id_token replayed, the launch finished in another
// browser, an LMS not registered) is refused with a page that says why,
// and opens nothing. The platform's keys rotated, a launch signed by the
// new one passes; removing the platform ends its sessions.
func TestLTILaunchRefusals(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	p := ltiEnv(t, e)
	const c = "https://purl.imsglobal.org/spec/lti/claim/"
	refused := func(what string, r response, says string) {
		t.Helper()
		if r.status == http.StatusOK || launchedToken(r) != "" || !strings.Contains(string(r.body), says) {
			t.Errorf("%s: %d %s, want a refusal saying %q, no session", what, r.status, r.body, says)
		}
	}
	for _, tc := range []struct {
		name, says string
		tamper     func(claims map[string]any)
	}{
		{"another audience", "meant for another tool", func(m map[string]any) { m["aud"] = "someone-else" }},
		{"several audiences without azp", "meant for another tool", func(m map[string]any) { m["aud"] = []string{"ga-tool", "other"} }},
		{"another issuer", "another platform", func(m map[string]any) { m["iss"] = "https://evil.example" }},
		{"expired", "expired", func(m map[string]any) { m["exp"] = e.clock.Now().Add(-time.Minute).Unix() }},
		{"issued long ago", "not issued now", func(m map[string]any) { m["iat"] = e.clock.Now().Add(-time.Hour).Unix() }},
		{"another launch's nonce", "another launch", func(m map[string]any) { m["nonce"] = "replayed-nonce" }},
		{"an unregistered deployment", "deployment", func(m map[string]any) { m[c+"deployment_id"] = "dep-9" }},
		{"another version", "LTI 1.3", func(m map[string]any) { m[c+"version"] = "1.1" }},
		{"another message", "kind this tool does not take", func(m map[string]any) { m[c+"message_type"] = "LtiSubmissionReviewRequest" }},
	} {
		p.Tamper(tc.tamper)
		refused(tc.name, launch(t, newBrowser(t, e.server.URL), p, teacher, course), tc.says)
	}
	p.Tamper(nil)
	p.Sign(func(claims map[string]any) string {
		return ltitest.SignWith(t, "not-theirs", claims)
	})
	refused("a key the platform does not publish", launch(t, newBrowser(t, e.server.URL), p, teacher, course), "does not publish")
	p.Sign(func(claims map[string]any) string {
		head := `{"alg":"none","typ":"JWT"}`
		return b64(head) + "." + b64(string(mustJSON(claims))) + "."
	})
	refused("alg none", launch(t, newBrowser(t, e.server.URL), p, teacher, course), "not a signed token")
	p.Sign(nil)

	// The id_token posted twice: the second is refused (its state is
	// taken; its nonce is used).
	b := newBrowser(t, e.server.URL)
	page := b.get(p.LoginURL(teacher, course, false), false)
	form := ltitest.Posted(t, strings.NewReader(string(page.body)))
	if first := b.post(p.ToolLaunch, form); launchedToken(first) == "" {
		t.Fatalf("the first post: %d %s", first.status, first.body)
	}
	refused("the id_token replayed", b.post(p.ToolLaunch, form), "not known")
	// Finished in another browser than the one that began it.
	page = newBrowser(t, e.server.URL).get(p.LoginURL(teacher, course, false), false)
	refused("a launch finished in another browser", newBrowser(t, e.server.URL).post(p.ToolLaunch, ltitest.Posted(t, strings.NewReader(string(page.body)))), "another browser")
	// An LMS not registered.
	refused("an LMS not registered", newBrowser(t, e.server.URL).get(e.server.URL+"/lti/login?iss=https://other.example&login_hint=x&client_id=ga-tool", false),
		"not registered")

	// The platform rotates its keys: a launch signed by the new key passes.
	p.Rotate()
	rotated := launch(t, newBrowser(t, e.server.URL), p, teacher, course)
	if launchedToken(rotated) == "" {
		t.Fatalf("a launch after the platform rotated its keys: %d %s", rotated.status, rotated.body)
	}
	// Removing the platform ends its sessions.
	e.mustCall("DELETE", "/v1/admin/lti-platforms/north-canvas", e.token(), "", http.StatusNoContent)
	if r := e.do("GET", "/api/me", launchedToken(rotated), ""); r.status != http.StatusForbidden {
		t.Errorf("a session of a platform removed: %d, want 403", r.status)
	}
	if strings.Contains(e.logs.String(), "gal_") {
		t.Error("the log holds a session's token")
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
