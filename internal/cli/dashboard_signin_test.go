package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/signin/oidctest"
)

// TestSignInDashboardInBrowser signs in to the dashboard in Chromium as
// a teacher, a school administrator and a district administrator of the
// demo, each through the login page of a real provider on loopback: each
// sees what their role may (the teacher their class alone), named in the
// header, without a key; signing out ends the session. An administrator
// of the school whose plan ended is told so.
func TestSignInDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	_, run, eval := openBrowser(t)
	base, _, p := demoSite(t)
	school, class := demoGroups[0], demoClasses[0] // the class's students: 1 to 28
	users := map[string]*oidctest.User{}
	for i, m := range []analytics.Staff{
		{Email: "ortiz@lakeland.example", Name: "Ms Ortiz", Role: analytics.RoleTeacher, GroupID: school.id, ClassIDs: []string{class.id}},
		{Email: "head@lakeland.example", Name: "Mr Head", Role: analytics.RoleSchoolAdmin, GroupID: school.id},
		{Email: "data@lakeland.example", Name: "Dana Data", Role: analytics.RoleDistrictAdmin, DistrictID: demoDistrict.id},
		{Email: "rita@lakeland.example", Name: "Rita River", Role: analytics.RoleSchoolAdmin, GroupID: demoGroups[2].id}, // its plan ended
	} {
		if _, err := p.AddStaff(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		id := string(rune('a' + i))
		users[id] = &oidctest.User{ID: id, Username: strings.Split(m.Email, "@")[0], Password: "pw", FirstName: m.Name, Email: m.Email, EmailVerified: true}
	}
	op := oidctest.Start(t, users, "ga-dashboard", base+"/oidc/callback")
	if _, err := p.AddProvider(context.Background(), analytics.Provider{ID: "lakeland-accounts", Name: "Lakeland accounts", Issuer: op.Issuer,
		ClientID: "ga-dashboard", ClientSecret: oidctest.ClientSecret, DistrictID: demoDistrict.id, EmailDomains: []string{"lakeland.example"}}, false); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("GROUPANALYTICS_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}

	var form []byte
	run("the sign-in form", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#signin-email"), chromedp.FullScreenshot(&form, 100))
	if err := os.WriteFile(filepath.Join(shots, "dashboard-sign-in.png"), form, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, header, place string
		classes             string // the class picker's options
	}{
		{"ortiz", "Ms Ortiz · Teacher", school.name, "All your classes|Chemistry 9A (28 students)"},
		{"head", "Mr Head · School administrator", school.name, "Whole school|Chemistry 9A (28 students)|History 9B (30 students)"},
		{"data", "Dana Data · District administrator", demoDistrict.name, ""},
	} {
		run(c.user+" signs in", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#signin-email"),
			chromedp.SendKeys("#signin-email", c.user+"@lakeland.example"), chromedp.Click(`#signin-form button[type=submit]`),
			chromedp.WaitVisible("#username"), chromedp.SendKeys("#username", c.user), chromedp.SendKeys("#password", "pw"),
			chromedp.Click(`button[type=submit]`), chromedp.WaitVisible("#person"),
			chromedp.Poll(`document.getElementById("dashboard").dataset.loaded !== undefined`, nil, chromedp.WithPollingTimeout(30*time.Second)))
		var seen struct{ Header, Place, Classes, Key string }
		eval(c.user+"'s view", `({Header: document.getElementById("person").textContent, Place: document.getElementById("place-name").textContent,
			Classes: document.getElementById("class-picker").hidden ? "" : [...document.getElementById("class").options].map((o) => o.textContent).join("|"),
			Key: sessionStorage.getItem("groupanalytics-key") || ""})`, &seen)
		if seen.Header != c.header || seen.Place != c.place || seen.Classes != c.classes || seen.Key != "" {
			t.Errorf("%s signed in sees %+v, want header %q, place %q, classes %q and no key", c.user, seen, c.header, c.place, c.classes)
		}
		switch c.user {
		case "ortiz":
			var buf []byte
			run("screenshot", chromedp.FullScreenshot(&buf, 100))
			if err := os.WriteFile(filepath.Join(shots, "dashboard-signed-in.png"), buf, 0o644); err != nil {
				t.Fatal(err)
			}
			// On a phone, after a reload (the session is the cookie's): the
			// header's name and sign-out in view, nothing wider than it.
			var fits bool
			run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Reload(),
				chromedp.WaitVisible("#person"), chromedp.Poll(`document.getElementById("dashboard").dataset.loaded !== undefined`, nil),
				chromedp.Evaluate(`document.documentElement.scrollWidth <= window.innerWidth &&
					[document.getElementById("person"), document.getElementById("sign-out")].every((e) => e.getBoundingClientRect().right <= window.innerWidth)`, &fits),
				chromedp.EmulateViewport(1280, 1000))
			if !fits {
				t.Errorf("signed in, on a phone: the header's name or sign-out out of view, or the page wider than the screen")
			}
		case "head":
			// The teacher's students, just shown, are in the school's
			// access log under her name.
			var who []string
			run("the access log", chromedp.Click("#access-section summary"), chromedp.WaitVisible("#access tbody tr"))
			eval("who saw", `[...document.querySelectorAll("#access tbody tr td:nth-child(2)")].map((td) => td.textContent)`, &who)
			if !slices.Equal(slices.Compact(who), []string{"head@lakeland.example (School administrator)", "ortiz@lakeland.example (Teacher)"}) {
				t.Errorf("the access log names %q, want the administrator's answers, then the teacher's", who)
			}
		}
		var after int
		run(c.user+" signs out", chromedp.Click("#sign-out"), chromedp.WaitVisible("#signin-email"),
			chromedp.Evaluate(`fetch("/api/me").then((r) => r.status)`, &after, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
				return p.WithAwaitPromise(true)
			}))
		if after != 403 {
			t.Errorf("after %s signed out, /api/me answers %d, want 403", c.user, after)
		}
	}

	// An administrator of a school whose plan ended is told so, rather
	// than shown the dashboard's key form with no word.
	var says string
	run("rita signs in", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#signin-email"),
		chromedp.SendKeys("#signin-email", "rita@lakeland.example"), chromedp.Click(`#signin-form button[type=submit]`),
		chromedp.WaitVisible("#username"), chromedp.SendKeys("#username", "rita"), chromedp.SendKeys("#password", "pw"),
		chromedp.Click(`button[type=submit]`), chromedp.WaitVisible("#signin-message"), chromedp.Text("#signin-message", &says))
	if !strings.Contains(says, "your school has no valid plan with this service now") {
		t.Errorf("a school administrator of a school without a plan sees %q", says)
	}
}
