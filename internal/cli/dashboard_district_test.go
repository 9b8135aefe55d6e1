package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// apiAdoption is a school's row of GET /api/adoption, or the total's.
type apiAdoption struct {
	SchoolID       string
	SchoolName     string
	Enrolled       int64
	UsedEither     int64
	ShareUsed      float64
	SeatsUsedShare *float64
	OverSeats      *bool
}

// TestDistrictDashboardInBrowser drives the dashboard with the demo
// district's key: the district's totals (with their change against the
// days before) and charts equal its reports, the schools table its
// adoption, the lowest share first, sortable, searchable and downloadable;
// a school's name opens the school's view as its own key sees it, and the
// way back returns to the district; on a phone too.
func TestDistrictDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	_, run, eval := openBrowser(t)
	base, keys := demoServer(t)
	key := keys[demoDistrict.id]
	shots := os.Getenv("GROUPANALYTICS_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	loadedAs := func(place string) chromedp.Action {
		return chromedp.Poll(`document.getElementById("place-name").textContent === `+jsString(place)+
			` && document.getElementById("dashboard").dataset.loaded`, nil, chromedp.WithPollingTimeout(30*time.Second))
	}

	var loaded string
	run("open", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#key"),
		chromedp.SendKeys("#key", key), chromedp.Click(`#key-form button[type=submit]`),
		loadedAs("Lakeland District"), chromedp.AttributeValue("#dashboard", "data-loaded", &loaded, nil))
	parts := strings.Split(loaded, "/")
	period := "startDate=" + parts[0] + "&endDate=" + parts[1]
	var view struct{ Schools, Students, Access, Classes, Back bool }
	visible := `(id) => document.getElementById(id).getBoundingClientRect().height > 0`
	eval("the district's view", `(() => { const shown = `+visible+`; return {Schools: shown("schools-section"), Students: shown("students-section"),
		Access: shown("access-section"), Classes: shown("class-picker"), Back: shown("district-back")}; })()`, &view)
	if view != (struct{ Schools, Students, Access, Classes, Back bool }{Schools: true}) {
		t.Errorf("the district's view shows %+v, want its schools alone", view)
	}

	// Its totals, each with its change against the days before.
	beforeStart, beforeEnd := previousPeriod(parts[0], parts[1])
	before := "startDate=" + beforeStart + "&endDate=" + beforeEnd
	var tiles [][]string
	eval("totals", `[...document.querySelectorAll("#totals .tile")].map(t => [t.querySelector(".value").textContent,
		t.querySelector(".change").firstChild.textContent])`, &tiles)
	var wantTiles [][]string
	for _, endpoint := range []string{"live-lecture", "chat"} {
		now := apiReports(t, base, key, endpoint, period)[0]
		then := apiReports(t, base, key, endpoint, before)[0]
		for i, m := range now.Data {
			wantTiles = append(wantTiles, []string{thousands(m.Value), change(m.Value, then.Data[i].Value)})
		}
		wantTiles = append(wantTiles, []string{thousands(now.NumStudentsUsed), change(now.NumStudentsUsed, then.NumStudentsUsed)})
		// Its chart: the students line, period by period.
		var line []int64
		eval("chart", `Chart.getChart("`+endpoint+`-chart").data.datasets.at(-1).data`, &line)
		var users []int64
		for _, r := range apiReports(t, base, key, endpoint, period+"&interval="+parts[2]) {
			users = append(users, r.NumStudentsUsed)
		}
		if !reflect.DeepEqual(line, users) {
			t.Errorf("%s chart's students %v, want %v", endpoint, line, users)
		}
	}
	if !reflect.DeepEqual(tiles, wantTiles) {
		t.Errorf("the district's totals %v, want %v", tiles, wantTiles)
	}

	// The schools table: the adoption of the range, the lowest share
	// first, with the change of those who used either, and the total.
	var adoption, adoptionBefore struct {
		Total          apiAdoption
		Schools        []apiAdoption
		SchoolsLeftOut []struct{ SchoolName string }
	}
	json.Unmarshal(apiRead(t, "GET", base+"/api/adoption?"+period, key), &adoption)
	json.Unmarshal(apiRead(t, "GET", base+"/api/adoption?"+before, key), &adoptionBefore)
	row := func(a, b apiAdoption, name string) []string {
		// As the dashboard's toFixed(1) rounds: a half up, which Go's
		// %.1f would round to even (357 of 400 is 89.25%).
		share := func(f float64) string { return strconv.FormatFloat(math.Round(f*100*10)/10, 'f', 1, 64) + "%" }
		seats := "—"
		if a.SeatsUsedShare != nil {
			seats = share(*a.SeatsUsedShare)
			if *a.OverSeats {
				seats += "over seats"
			}
		}
		return []string{name, thousands(a.Enrolled), thousands(a.UsedEither), share(a.ShareUsed), seats, change(a.UsedEither, b.UsedEither)}
	}
	slices.SortStableFunc(adoption.Schools, func(a, b apiAdoption) int { return int((a.ShareUsed - b.ShareUsed) * 1e6) })
	var wantRows [][]string
	for _, s := range adoption.Schools {
		i := slices.IndexFunc(adoptionBefore.Schools, func(b apiAdoption) bool { return b.SchoolID == s.SchoolID })
		wantRows = append(wantRows, row(s, adoptionBefore.Schools[i], s.SchoolName))
	}
	wantRows = append(wantRows, row(adoption.Total, adoptionBefore.Total, "All schools"))
	schoolRows := `[...document.querySelectorAll("#schools tbody tr, #schools tfoot tr")].map(tr =>
		["schoolName", "enrolled", "usedEither", "shareUsed", "seatsUsedShare", "change"].map(f => tr.querySelector("td[data-field=" + f + "]").textContent))`
	var rows [][]string
	eval("schools", schoolRows, &rows)
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("the schools table %v,\nwant %v", rows, wantRows)
	}
	var note string
	eval("left out", `document.getElementById("schools-note").textContent`, &note)
	if len(adoption.SchoolsLeftOut) != 1 || !strings.Contains(note, "Left out of every figure here: Riverside College (no valid plan).") {
		t.Errorf("the schools left out: %q", note)
	}
	var buf []byte
	run("desktop screenshot", chromedp.FullScreenshot(&buf, 100))
	save(t, filepath.Join(shots, "dashboard-district.png"), buf)
	// Sorted by a heading, and searched.
	var order []string
	var sorted string
	run("sort by enrolled", chromedp.Click(`#schools th[data-field=enrolled] button`),
		chromedp.AttributeValue(`#schools th[data-field=enrolled]`, "aria-sort", &sorted, nil),
		chromedp.Evaluate(`[...document.querySelectorAll("#schools tbody tr")].map(tr => tr.dataset.id)`, &order))
	if sorted != "ascending" || !reflect.DeepEqual(order, []string{"lakeside-academy", "northside-high"}) {
		t.Errorf("sorted by enrolled (%s): %v", sorted, order)
	}
	run("search", chromedp.SendKeys("#school-search", "north"),
		chromedp.Evaluate(`[...document.querySelectorAll("#schools tbody tr")].map(tr => tr.dataset.id)`, &order))
	if !reflect.DeepEqual(order, []string{"northside-high"}) {
		t.Errorf("searched for north: %v", order)
	}
	// The CSV button downloads the adoption's CSV answer.
	name := fmt.Sprintf("lakeland-district-adoption-%s-to-%s.csv", parts[0], parts[1])
	got := downloaded(t, run, "#download-adoption", name)
	if want := apiRead(t, "GET", base+"/api/adoption?format=csv&"+period, key); string(got) != string(want) {
		t.Errorf("downloaded %s: %q, want %q", name, got, want)
	}

	// A school's name opens its view, as its own key sees it.
	school := keys["northside-high"]
	run("open a school", chromedp.Click(`#schools tr[data-id="northside-high"] button.school`),
		loadedAs("Lakeland District › Northside High School"))
	eval("the school's view", `(() => { const shown = `+visible+`; return {Schools: shown("schools-section"), Students: shown("students-section"),
		Access: shown("access-section"), Classes: shown("class-picker"), Back: shown("district-back")}; })()`, &view)
	if view != (struct{ Schools, Students, Access, Classes, Back bool }{Students: true, Access: true, Classes: true, Back: true}) {
		t.Errorf("a school's view through the district shows %+v", view)
	}
	var ids []string
	eval("students", `[...document.querySelectorAll("#students tbody tr")].map(tr => tr.dataset.id)`, &ids)
	var wantIDs []string
	for _, r := range apiReports(t, base, school, "chat", period+"&students=true") {
		wantIDs = append(wantIDs, r.StudentID)
	}
	if !reflect.DeepEqual(ids, wantIDs[:min(len(wantIDs), 200)]) {
		t.Errorf("the school's students through the district: %d rows, want %d as its own key sees them", len(ids), len(wantIDs))
	}
	var classes []string
	eval("classes", `[...document.getElementById("class").options].map(o => o.value)`, &classes)
	if !reflect.DeepEqual(classes, []string{"", "chem-9a", "hist-9b"}) {
		t.Errorf("the school's classes through the district: %v", classes)
	}
	var schoolTiles, ownTiles []string
	eval("school totals", `[...document.querySelectorAll("#totals .tile .value")].map(v => v.textContent)`, &schoolTiles)
	for _, endpoint := range []string{"live-lecture", "chat"} {
		r := apiReports(t, base, school, endpoint, period)[0]
		for _, m := range r.Data {
			ownTiles = append(ownTiles, thousands(m.Value))
		}
		ownTiles = append(ownTiles, thousands(r.NumStudentsUsed))
	}
	if !reflect.DeepEqual(schoolTiles, ownTiles) {
		t.Errorf("the school's totals through the district %v, its own key's %v", schoolTiles, ownTiles)
	}

	// The way back: the district again, the school's name in focus.
	var focused string
	run("back", chromedp.Click("#district-back"), loadedAs("Lakeland District"),
		chromedp.Evaluate(`document.activeElement.closest("tr")?.dataset.id ?? ""`, &focused))
	eval("the district's view again", `(() => { const shown = `+visible+`; return {Schools: shown("schools-section"), Students: shown("students-section"),
		Access: shown("access-section"), Classes: shown("class-picker"), Back: shown("district-back")}; })()`, &view)
	if view != (struct{ Schools, Students, Access, Classes, Back bool }{Schools: true}) || focused != "northside-high" {
		t.Errorf("back to the district: %+v, focus on %q", view, focused)
	}

	// On a phone: nothing wider than the screen, the schools' names and
	// the first figures in view; and a school's view.
	var overflow bool
	var figuresInView int
	run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Reload(), loadedAs("Lakeland District"), chromedp.ScrollIntoView("#schools"),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow),
		chromedp.Evaluate(`[...document.querySelectorAll("#schools tbody tr:first-child td")].filter(td => td.getBoundingClientRect().right <= window.innerWidth).length`, &figuresInView),
		chromedp.CaptureScreenshot(&buf))
	save(t, filepath.Join(shots, "dashboard-district-phone.png"), buf)
	if overflow || figuresInView < 3 {
		t.Errorf("on a phone: wider than the screen %v; %d cells of a school's row in view, want its name and two figures", overflow, figuresInView)
	}
	run("phone school", chromedp.Click(`#schools tr[data-id="lakeside-academy"] button.school`),
		loadedAs("Lakeland District › Lakeside Academy"),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow))
	if overflow {
		t.Errorf("on a phone, a school's view through the district is wider than the screen")
	}
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
