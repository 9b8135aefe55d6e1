package cli

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// wcagTags are axe-core's rules of WCAG 2.1 levels A and AA.
const wcagTags = `["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]`

// a11yView is a view of the dashboard, as a person reaches it: how, and
// the title it must have.
type a11yView struct {
	name, title string
	open        []chromedp.Action
}

// TestDashboardAccessible: every view of the dashboard (the entry, a
// refused key, a school with its charts' tables and its access log open,
// a student, a class, a district and one of its schools, a sign-in page),
// at a desktop's size, a phone's and 320 CSS px, passes axe-core's WCAG
// 2.1 A and AA rules (axe-core 4.14.1, the test's own copy), is titled by
// what it shows, and does not scroll sideways. A keyboard walk through a
// school's and a district's views keeps focus visible, never on the
// page's body, and moves it with the view and back; each chart's table
// holds the API's figures; the charts' colours are at least 3:1 against
// their card.
func TestDashboardAccessible(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	axe, err := os.ReadFile("testdata/axe/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	_, run, eval := openBrowserFor(t, 8*time.Minute)
	base, keys := demoServer(t)
	school, district := keys[demoGroups[0].id], keys[demoDistrict.id]
	loaded := func(place string) chromedp.Action {
		return chromedp.Poll(`document.getElementById("place-name").textContent === `+jsString(place)+
			` && document.getElementById("dashboard").dataset.loaded`, nil, chromedp.WithPollingTimeout(30*time.Second))
	}
	openWith := func(key, place string) []chromedp.Action {
		// The tab keeps the last key in its session storage: forgotten first.
		return []chromedp.Action{chromedp.Navigate(base + "/"), chromedp.Evaluate(`sessionStorage.clear(); true`, nil),
			chromedp.Navigate(base + "/"), chromedp.WaitVisible("#key"), chromedp.SendKeys("#key", key),
			chromedp.Click(`#key-form button[type=submit]`), loaded(place)}
	}
	northside, lakeland := demoGroups[0].name, demoDistrict.name
	views := []a11yView{
		{"the entry", "Your school's or district's usage · groupanalytics", []chromedp.Action{chromedp.Navigate(base + "/"),
			chromedp.Evaluate(`sessionStorage.clear(); true`, nil), chromedp.Navigate(base + "/"), chromedp.WaitVisible("#key")}},
		{"a refused key", "Your school's or district's usage · groupanalytics", []chromedp.Action{chromedp.SendKeys("#key", "gak_NOTAKEYATALL"),
			chromedp.Click(`#key-form button[type=submit]`), chromedp.Poll(`document.getElementById("key-error")?.textContent`, nil)}},
		{"a school", northside + " · groupanalytics", openWith(school, northside)},
		{"its charts' tables", northside + " · groupanalytics", []chromedp.Action{
			chromedp.Evaluate(`document.querySelectorAll("#school-charts details").forEach((d) => { d.open = true; }); true`, nil)}},
		{"its access log", northside + " · groupanalytics", []chromedp.Action{chromedp.Click("#access-section summary"),
			chromedp.WaitVisible("#access tbody tr")}},
		{"a student", "", []chromedp.Action{chromedp.Click("#students tbody tr button.student"),
			chromedp.Poll(`document.getElementById("student-view").dataset.loaded`, nil)}},
		{"a class", demoClasses[0].name + " · " + northside + " · groupanalytics", []chromedp.Action{chromedp.Click("#student-back"),
			chromedp.SetValue("#class", demoClasses[0].id), chromedp.Evaluate(`document.getElementById("class").dispatchEvent(new Event("change")); true`, nil),
			chromedp.Poll(`document.getElementById("dashboard").dataset.loaded?.endsWith(`+jsString(demoClasses[0].id)+`)`, nil)}},
		{"a district", lakeland + " · groupanalytics", openWith(district, lakeland)},
		{"a school of the district", northside + " · " + lakeland + " · groupanalytics", []chromedp.Action{
			chromedp.Click(`#schools tr[data-id="` + demoGroups[0].id + `"] button.school`), loaded(lakeland + " › " + northside)}},
		{"a sign-in page", "This sign-in link is not valid · Group analytics", []chromedp.Action{chromedp.Navigate(base + "/signin/no-such")}},
	}
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1280, 800}, {"phone", 390, 844}, {"320 px", 320, 640}} {
		run(size.name, chromedp.EmulateViewport(size.width, size.height, chromedp.EmulateScale(1)), chromedp.Navigate("about:blank"))
		for _, v := range views {
			run(size.name+", "+v.name, v.open...)
			checkAccessible(t, run, eval, string(axe), size.name+", "+v.name, v.title)
		}
	}
	run("back to a desktop", chromedp.EmulateViewport(1280, 800))

	checkKeyboardWalk(t, run, eval, openWith(school, northside), openWith(district, lakeland), northside)
	checkChartTables(t, run, eval, base, school, openWith(school, northside))

	// The charts' colours against their card (white): at least 3:1.
	var colors []string
	run("a school", openWith(school, northside)...)
	eval("the charts' colours", `colors`, &colors)
	for _, c := range colors {
		if r := contrast(c, "#ffffff"); r < 3 {
			t.Errorf("the chart colour %s is %.2f:1 against the card, under 3:1", c, r)
		}
	}
}

// checkAccessible runs axe-core's WCAG 2.1 A and AA rules on the page as
// it is, and checks its title (when one is wanted) and that it does not
// scroll sideways.
func checkAccessible(t *testing.T, run func(string, ...chromedp.Action), eval func(string, string, any), axe, where, title string) {
	t.Helper()
	var loaded bool
	eval(where+": axe", `typeof axe === "object"`, &loaded)
	if !loaded {
		eval(where+": load axe", axe+"\n;true", &loaded)
	}
	var violations []string
	run(where+": axe.run", chromedp.Evaluate(`axe.run(document, {runOnly: {type: "tag", values: `+wcagTags+`}}).then((r) =>
		r.violations.map((v) => v.id + " (" + v.impact + "): " + v.nodes.map((n) => n.target.join(" ")).slice(0, 5).join(", ")))`, &violations, awaitPromise))
	if len(violations) > 0 {
		t.Errorf("%s: axe finds %d violation(s):\n  %s", where, len(violations), strings.Join(violations, "\n  "))
	}
	var page struct {
		Title        string
		Wide, Window float64
	}
	eval(where+": title and width", `({Title: document.title, Wide: document.documentElement.scrollWidth, Window: window.innerWidth})`, &page)
	if title != "" && page.Title != title {
		t.Errorf("%s: titled %q, want %q", where, page.Title, title)
	}
	if title == "" && (!strings.HasSuffix(page.Title, " · groupanalytics") || strings.Count(page.Title, " · ") < 2) {
		t.Errorf("%s: titled %q, which does not name what it shows", where, page.Title)
	}
	if page.Wide > page.Window {
		t.Errorf("%s: the page is %.0f px wide in a window of %.0f: it scrolls sideways", where, page.Wide, page.Window)
	}
}

// focusState tells where focus is: "body" when it is lost to the page,
// "" when on an element that shows it (a ring of 2 px or more), else the
// element that does not show it. A date input that is the active element
// without matching :focus has passed focus to its calendar button, inside
// the browser's own shadow tree, which Chromium rings itself.
const focusState = `(() => {
	const e = document.activeElement;
	if (!e || e === document.body || e === document.documentElement) {
		return "body";
	}
	if (e.type === "date" && !e.matches(":focus")) {
		return "";
	}
	const s = getComputedStyle(e);
	return s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2 ? "" : e.outerHTML.slice(0, 120);
})()`

// checkKeyboardWalk tabs through a school's view and a district's, every
// stop showing its focus; opening a student and going back, and a
// district's school and back, move focus to the new view's heading and
// back to the control it came from.
func checkKeyboardWalk(t *testing.T, run func(string, ...chromedp.Action), eval func(string, string, any), school, district []chromedp.Action, schoolName string) {
	t.Helper()
	// tab presses Tab up to presses times, no further than the last
	// control of the page.
	tab := func(where string, presses int) {
		t.Helper()
		var following int
		eval(where, `(() => { const a = document.activeElement;
			return [...document.querySelectorAll("a[href], button, input, select, summary, [tabindex]:not([tabindex='-1'])")]
				.filter((e) => !e.disabled && e.getClientRects().length && (a === document.body || a.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING))
				.filter((e) => { const closed = e.parentElement?.closest("details:not([open])"); return !closed || (e.tagName === "SUMMARY" && e.parentElement === closed); })
				.length; })()`, &following)
		for i := range min(presses, following) {
			var state string
			run(where, chromedp.KeyEvent(kb.Tab), chromedp.Evaluate(focusState, &state))
			if state != "" {
				t.Errorf("%s, tab %d: focus %s", where, i+1, map[bool]string{true: "lost to the page's body", false: "not shown on " + state}[state == "body"])
				return
			}
		}
	}
	at := func(where, js string) {
		t.Helper()
		var ok bool
		eval(where, js, &ok)
		if !ok {
			var active string
			eval(where, `document.activeElement.outerHTML.slice(0, 120)`, &active)
			t.Errorf("%s: focus is on %s", where, active)
		}
	}
	run("a school", school...)
	at("a school opened with a key", `document.activeElement.id === "place-name"`)
	tab("a school's view", 40)
	// The skip link, first from the top, in view when focused.
	var skip struct {
		Text string
		Top  float64
	}
	run("the skip link", chromedp.Reload(), chromedp.Poll(`document.getElementById("dashboard").dataset.loaded`, nil), chromedp.KeyEvent(kb.Tab),
		chromedp.Evaluate(`({Text: document.activeElement.textContent, Top: document.activeElement.getBoundingClientRect().top})`, &skip))
	if skip.Text != "Skip to the content" || skip.Top < 0 {
		t.Errorf("the first stop from the top is %+v, want the skip link in view", skip)
	}
	run("a student by the keyboard", chromedp.Focus("#students tbody tr button.student"), chromedp.KeyEvent(kb.Enter),
		chromedp.Poll(`document.getElementById("student-view").dataset.loaded`, nil))
	var student string
	eval("the student", `document.getElementById("student-view").dataset.loaded`, &student)
	at("a student opened", `document.activeElement.id === "student-heading"`)
	tab("a student's view", 15)
	run("back", chromedp.Focus("#student-back"), chromedp.KeyEvent(kb.Enter))
	at("back to the school", `document.activeElement.closest("tr")?.dataset.id === `+jsString(student))

	run("a district", district...)
	tab("a district's view", 40)
	run("a school by the keyboard", chromedp.Focus(`#schools tbody tr button.school`), chromedp.KeyEvent(kb.Enter),
		chromedp.Poll(`document.getElementById("place-name").textContent.endsWith(`+jsString(schoolName)+`) || document.getElementById("district-back").hidden === false`, nil),
		chromedp.Poll(`document.getElementById("dashboard").dataset.loaded`, nil))
	var opened string
	eval("the school opened", `document.getElementById("place-name").textContent`, &opened)
	at("a district's school opened", `document.activeElement.id === "place-name"`)
	run("back to the district", chromedp.Focus("#district-back"), chromedp.KeyEvent(kb.Enter),
		chromedp.Poll(`document.getElementById("district-back").hidden && document.getElementById("dashboard").dataset.loaded`, nil))
	at("back to the district", `document.activeElement.classList.contains("school") && `+jsString(opened)+`.endsWith(document.activeElement.textContent)`)
}

// checkChartTables: each chart's table holds, period by period, the
// figures of the API's interval reports: each metric drawn, then the
// students who used it.
func checkChartTables(t *testing.T, run func(string, ...chromedp.Action), eval func(string, string, any), base, key string, open []chromedp.Action) {
	t.Helper()
	run("a school", open...)
	var loaded string
	eval("the range", `document.getElementById("dashboard").dataset.loaded`, &loaded)
	parts := strings.Split(loaded, "/")
	for _, endpoint := range []string{"live-lecture", "chat"} {
		var rows [][]string
		eval(endpoint+"'s table", `[...document.querySelectorAll("#`+endpoint+`-chart-table tbody tr")].map((tr) => [...tr.cells].slice(1).map((c) => c.textContent))`, &rows)
		reports := apiReports(t, base, key, endpoint, "startDate="+parts[0]+"&endDate="+parts[1]+"&interval="+parts[2])
		if len(rows) != len(reports) {
			t.Fatalf("%s's table has %d rows, the API %d periods", endpoint, len(rows), len(reports))
		}
		skip := map[string]int{"chat": 1}[endpoint]
		for p, r := range reports {
			var want []string
			for _, m := range r.Data[skip:] {
				want = append(want, thousands(m.Value))
			}
			want = append(want, thousands(r.NumStudentsUsed))
			if fmt.Sprint(rows[p]) != fmt.Sprint(want) {
				t.Errorf("%s's table, period %d: %v, want %v", endpoint, p+1, rows[p], want)
			}
		}
	}
}

// contrast is the WCAG contrast ratio of two colours written #rrggbb.
func contrast(a, b string) float64 {
	lum := func(hex string) float64 {
		var c [3]float64
		for i := range c {
			v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
			s := float64(v) / 255
			if s <= 0.03928 {
				c[i] = s / 12.92
			} else {
				c[i] = math.Pow((s+0.055)/1.055, 2.4)
			}
		}
		return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	}
	x, y := lum(a), lum(b)
	return (math.Max(x, y) + 0.05) / (math.Min(x, y) + 0.05)
}
