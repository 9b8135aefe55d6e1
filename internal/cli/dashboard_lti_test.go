package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
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

// TestLTILaunchInFrameWithoutCookies launches the tool in Chromium from a
// course's page of an LMS on another site, in its iframe, with the
// browser keeping no cookie at all (as Safari keeps none of a site in
// another's frame): the login keeps its secret in the LMS's storage
// (lti.put_data), the launch's page reads it back (lti.get_data) to open
// its sealed session, and the dashboard opens on the course's class,
// naming the instructor, inside the frame.
func TestLTILaunchInFrameWithoutCookies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	ctx, run, _ := openBrowserWith(t, 90*time.Second, `{"profile": {"default_content_setting_values": {"cookies": 2}}}`)
	base, _, p := demoSite(t)
	lms := ltitest.Start(t, "ga-frame", "dep-1")
	lms.OnHost("localhost") // another site than the tool's 127.0.0.1
	lms.Storage, lms.ToolLogin, lms.ToolLaunch = true, base+"/lti/login", base+"/lti/launch"
	if _, err := p.AddLTIPlatform(context.Background(), analytics.LTIPlatform{ID: "frame-lms", Name: "Frame LMS", Issuer: lms.Issuer, ClientID: "ga-frame",
		DeploymentIDs: []string{"dep-1"}, AuthURL: lms.AuthURL(), TokenURL: lms.TokenURL(), JWKSURL: lms.JWKSURL(), GroupID: demoGroups[0].id}); err != nil {
		t.Fatal(err)
	}
	instructor := ltitest.Person{ID: "u-1", Name: "Tess Teach", Email: "tess@northside.example", Roles: []string{ltitest.Instructor}}
	chemistry := ltitest.Course{ID: "c-9a", Title: "Chemistry 9A", SectionSourcedID: demoClasses[0].id}
	run("the course's page", chromedp.Navigate(lms.CoursePageURL(instructor, chemistry)))

	// The frame navigates from the login to the LMS and back: its
	// document is read afresh until the dashboard has loaded in it.
	var seen struct{ Place, Person, Loaded string }
	deadline := time.Now().Add(45 * time.Second)
	for seen.Loaded == "" && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		var frames []*cdp.Node
		run("the tool's frame", chromedp.Nodes("#tool", &frames, chromedp.ByQuery))
		var places []*cdp.Node
		if chromedp.Run(ctx, chromedp.Nodes("#dashboard[data-loaded]", &places, chromedp.ByQuery, chromedp.FromNode(frames[0]), chromedp.AtLeast(0))) != nil || len(places) == 0 {
			continue
		}
		run("the dashboard in the frame", chromedp.Text("#place-name", &seen.Place, chromedp.ByQuery, chromedp.FromNode(frames[0])),
			chromedp.Text("#person", &seen.Person, chromedp.ByQuery, chromedp.FromNode(frames[0])))
		seen.Loaded = "yes"
	}
	if want := (struct{ Place, Person, Loaded string }{demoGroups[0].name, "Tess Teach · Teacher", "yes"}); seen != want {
		t.Errorf("the launch in the frame opens %+v, want %+v", seen, want)
	}
	var cookies []*network.Cookie
	run("the browser's cookies", chromedp.ActionFunc(func(ctx context.Context) (err error) {
		cookies, err = storage.GetCookies().Do(ctx)
		return err
	}))
	if len(cookies) != 0 {
		t.Errorf("the browser kept cookies: %v", cookies)
	}
}
