package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/lti/ltitest"
)

// TestLTILaunchInBrowser launches the tool in Chromium from a course of
// an LMS of the test's own (its login, the platform's page that posts the
// id_token back), at a desktop's size and a phone's: the dashboard opens
// on the course's class (the demo's Chemistry 9A, the roster's class the
// course is a section of), naming the instructor, without a key; a
// reload keeps it.
func TestLTILaunchInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	_, run, eval := openBrowser(t)
	base, _, p := demoSite(t)
	lms := ltitest.Start(t, "ga-demo", "dep-1")
	lms.ToolLogin, lms.ToolLaunch = base+"/lti/login", base+"/lti/launch"
	if _, err := p.AddLTIPlatform(context.Background(), analytics.LTIPlatform{ID: "demo-lms", Name: "Demo LMS", Issuer: lms.Issuer, ClientID: "ga-demo",
		DeploymentIDs: []string{"dep-1"}, AuthURL: lms.AuthURL(), TokenURL: lms.TokenURL(), JWKSURL: lms.JWKSURL(), GroupID: demoGroups[0].id}); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("GROUPANALYTICS_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	instructor := ltitest.Person{ID: "u-1", Name: "Tess Teach", Email: "tess@northside.example", Roles: []string{ltitest.Instructor}}
	chemistry := ltitest.Course{ID: "c-9a", Title: "Chemistry 9A", SectionSourcedID: demoClasses[0].id}
	for _, size := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		emulate := chromedp.EmulateViewport(size.width, size.height)
		if size.mobile {
			emulate = chromedp.EmulateViewport(size.width, size.height, chromedp.EmulateScale(2), chromedp.EmulateMobile)
		}
		var seen struct{ Place, Person, Classes, Path, Title string }
		read := `({Place: document.getElementById("place-name").textContent, Person: document.getElementById("person").textContent,
			Classes: [...document.getElementById("class").options].map((o) => o.textContent).join("|"), Path: location.pathname, Title: document.title})`
		loaded := chromedp.Poll(`document.getElementById("dashboard").dataset.loaded`, nil, chromedp.WithPollingTimeout(30*time.Second))
		run(size.name+": the launch", emulate, chromedp.Navigate(base+"/"), chromedp.Evaluate(`sessionStorage.clear(); true`, nil),
			// The platform's page posts the id_token by itself: the
			// dashboard comes a navigation after it.
			chromedp.Navigate(lms.LoginURL(instructor, chemistry, false)), chromedp.WaitVisible("#place-name"), loaded, chromedp.Evaluate(read, &seen))
		want := struct{ Place, Person, Classes, Path, Title string }{demoGroups[0].name, "Tess Teach · Teacher",
			"All your classes|Chemistry 9A (28 students)", "/", demoGroups[0].name + " · groupanalytics"}
		if seen != want {
			t.Errorf("%s: the launch opens %+v, want %+v", size.name, seen, want)
		}
		var buf []byte
		run(size.name+": screenshot", chromedp.CaptureScreenshot(&buf))
		save(t, filepath.Join(shots, "dashboard-lti-"+size.name+".png"), buf)
		run(size.name+": a reload", chromedp.Reload(), loaded)
		var again string
		eval("after a reload", `document.getElementById("person").textContent`, &again)
		if again != want.Person {
			t.Errorf("%s: after a reload, the header says %q", size.name, again)
		}
	}
}
