package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
)

// chromium returns Debian's Chromium, or skips the test (fails it in CI)
// when it is missing.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("Chromium is required in CI: apt-get install chromium")
	}
	t.Skip("SKIPPED: no Chromium (apt-get install chromium)")
	return ""
}

// demoServer serves the demo data set from SQLite and returns its URL and
// the demo's keys by group.
func demoServer(t *testing.T) (string, map[string]string) {
	t.Helper()
	base, keys, _ := demoSite(t)
	return base, keys
}

// demoSite is demoServer, with the platform of its store; the server's
// address is its public one, for sign-in.
func demoSite(t *testing.T) (string, map[string]string, *platform.Platform) {
	t.Helper()
	store := storetest.Open(t, "sqlite")
	e := &env{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard}
	keys, _, err := loadDemo(e, platform.New(store, store), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	keys[bigSchool], err = loadBigSchool(e, platform.New(store, store), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A class of Lakeside's first five students, and its teacher's key.
	p := platform.New(store, store)
	students, err := p.Students(e.ctx, "lakeside-academy")
	if err != nil {
		t.Fatal(err)
	}
	analytics.SortStudents(students)
	class := analytics.Class{GroupID: "lakeside-academy", ID: "demo-class", Name: "Demo class"}
	for _, s := range students[:5] {
		class.Members = append(class.Members, s.ID)
	}
	if _, err := p.CreateClass(e.ctx, class); err != nil {
		t.Fatal(err)
	}
	if _, keys["teacher"], err = p.CreateKey(e.ctx, "lakeside-academy", "teacher", "demo-class"); err != nil {
		t.Fatal(err)
	}
	// A school of five that hides figures of fewer than ten students.
	if keys[smallSchool], err = loadSmallSchool(e, p, time.Now()); err != nil {
		t.Fatal(err)
	}
	// A school that keeps 21 days of usage.
	if _, err := p.CreateGroup(e.ctx, keptSchool, "Kept School", "UTC"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SetRetention(e.ctx, keptSchool, "21d"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddPlan(e.ctx, keptSchool, "2025-01-01", "", 0); err != nil {
		t.Fatal(err)
	}
	if _, keys[keptSchool], err = p.CreateKey(e.ctx, keptSchool, "dashboard"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = httpapi.New(httpapi.Config{Engine: report.NewEngine(store, store), Platform: p, Ready: store.Ping,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), PublicURL: "http://" + srv.Listener.Addr().String()})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, keys, p
}

// keptSchool keeps 21 days of usage: fewer than the dashboard's 28.
const keptSchool = "kept-school"

// smallSchool is a school of five students, each of whom sent one
// Tutor Me message yesterday, with a minCellSize of 10.
const smallSchool = "small-school"

func loadSmallSchool(e *env, p *platform.Platform, now time.Time) (string, error) {
	if _, err := p.CreateGroup(e.ctx, smallSchool, "Small School", "UTC"); err != nil {
		return "", err
	}
	if _, err := p.SetMinCellSize(e.ctx, smallSchool, 10); err != nil {
		return "", err
	}
	if _, err := p.AddPlan(e.ctx, smallSchool, "2025-01-01", "", 0); err != nil {
		return "", err
	}
	var batch []json.RawMessage
	for i := range 5 {
		batch = append(batch, json.RawMessage(fmt.Sprintf(`{"id": "small-%d", "groupId": %q, "studentId": "s%d", "occurredAt": %q, "kind": "chat.message_sent", "chatType": "tutor_me"}`,
			i, smallSchool, i, now.Add(-24*time.Hour).UTC().Format(time.RFC3339))))
	}
	if _, err := p.Ingest(e.ctx, batch, false); err != nil {
		return "", err
	}
	_, key, err := p.CreateKey(e.ctx, smallSchool, "dashboard")
	return key, err
}

// bigSchool is a school of 10,000 students beside the demo's: each has
// events on one day of the last 40, so that about 30% are inactive over
// the dashboard's 28 days.
const bigSchool = "big-school"

func loadBigSchool(e *env, p *platform.Platform, now time.Time) (string, error) {
	if _, err := p.CreateGroup(e.ctx, bigSchool, "Big School", "UTC"); err != nil {
		return "", err
	}
	if _, err := p.AddPlan(e.ctx, bigSchool, "2025-01-01", "", 0); err != nil {
		return "", err
	}
	_, key, err := p.CreateKey(e.ctx, bigSchool, "test")
	if err != nil {
		return "", err
	}
	var batch []json.RawMessage
	for i := range 10_000 {
		at := now.Add(-time.Duration(1+i%40) * 24 * time.Hour).Truncate(time.Hour)
		for j, kind := range []string{"tutor_me", "main", ""} {
			in := platform.EventInput{ID: fmt.Sprintf("big-%05d-%d", i, j), GroupID: bigSchool, StudentID: fmt.Sprintf("b%05d", i),
				StudentName: fmt.Sprintf("Student %05d", (i*7919)%10_000), OccurredAt: at.Format(time.RFC3339),
				Kind: analytics.KindMessageSent, ChatType: kind}
			if kind == "" {
				in.Kind = analytics.KindSessionCreated
			}
			raw, _ := json.Marshal(in)
			batch = append(batch, raw)
		}
	}
	for chunk := range slices.Chunk(batch, 5000) {
		if res, err := p.Ingest(e.ctx, chunk, true); err != nil || len(res.Rejected) > 0 {
			return "", fmt.Errorf("big school: %v %v", err, res.Rejected)
		}
	}
	return key, nil
}

// apiReport is one report of the API's answer.
type apiReport struct {
	StartDate, EndDate     string
	StudentID, StudentName string
	NumStudentsUsed        int64
	Data                   []struct {
		Title string
		Value int64
	}
}

// apiReports asks an endpoint for reports, as the dashboard would.
func apiReports(t *testing.T, base, key, endpoint, query string) []apiReport {
	t.Helper()
	body := apiGet(t, base, key, endpoint, query)
	var answer struct{ Reports []apiReport }
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatalf("%s?%s: %v: %s", endpoint, query, err, body)
	}
	return answer.Reports
}

// apiAccessLog reads the newest page of a school's access log.
func apiAccessLog(t *testing.T, base, key string) []struct{ Key struct{ Label string } } {
	t.Helper()
	var page struct {
		Entries []struct{ Key struct{ Label string } }
	}
	if err := json.Unmarshal(apiRead(t, "GET", base+"/api/access-log", key), &page); err != nil {
		t.Fatalf("the access log: %v", err)
	}
	return page.Entries
}

// apiGet asks an endpoint for reports and returns the answer's body.
func apiGet(t *testing.T, base, key, endpoint, query string) []byte {
	t.Helper()
	return apiRead(t, "POST", base+"/api/groups/"+endpoint+"?"+query, key)
}

// apiRead sends a request of the report API with the key and returns the
// body of its 200 answer.
func apiRead(t *testing.T, method, url, key string) []byte {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, body)
	}
	return body
}

// downloaded clicks the button and returns the file the browser saves
// as name, waiting up to ten seconds for it.
func downloaded(t *testing.T, run func(string, ...chromedp.Action), button, name string) []byte {
	t.Helper()
	dir := t.TempDir()
	run("download", browser.SetDownloadBehavior(browser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(dir), chromedp.Click(button))
	for range 100 {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// TestDashboardInBrowser drives the dashboard in headless Chromium against
// the demo data: a key opens it, the charts are drawn from the interval
// reports, the totals and the students table equal the API's answers, the
// table searches, sorts and singles out inactive students, the CSV download
// equals the CSV endpoint, a wrong or expired key gets a clear message, and
// it fits a phone. It saves screenshots at desktop and phone widths in
// $GROUPANALYTICS_SCREENSHOTS (default: a temporary directory).
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	base, keys := demoServer(t)
	key := keys["lakeside-academy"]
	shots := os.Getenv("GROUPANALYTICS_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	ctx, run, eval := openBrowser(t)

	// Open with the key; watch what the status line says while it loads.
	var loaded string
	run("open", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#key"),
		chromedp.Evaluate(`window.seen = []; new MutationObserver(() => seen.push(document.getElementById("status").textContent))
			.observe(document.getElementById("status"), {childList: true, subtree: true, characterData: true}); true`, nil),
		chromedp.SendKeys("#key", key), chromedp.Click(`#key-form button[type=submit]`),
		chromedp.WaitVisible(`#dashboard[data-loaded]`), chromedp.AttributeValue("#dashboard", "data-loaded", &loaded, nil))
	var seen []string
	eval("statuses", `seen`, &seen)
	// Loading is said once, not at each report (the progress bar counts
	// them), then what is shown.
	if len(seen) != 2 || seen[0] != "Loading 8 reports…" {
		t.Errorf("the status line while loading: %q, want the loading said once, then what is shown", seen)
	}
	var keyInURL, stored bool
	eval("key kept", `location.href.includes(`+strconv.Quote(key)+`)`, &keyInURL)
	eval("key stored", `sessionStorage.getItem("groupanalytics-key") === `+strconv.Quote(key)+` && localStorage.length === 0`, &stored)
	if keyInURL || !stored {
		t.Errorf("the key: in the URL %v, in session storage only %v", keyInURL, stored)
	}
	parts := strings.Split(loaded, "/")
	period := "startDate=" + parts[0] + "&endDate=" + parts[1]

	// Charts: one bar per metric (chat's total aside) and the students
	// line, period by period, as the interval reports say.
	for _, endpoint := range []string{"live-lecture", "chat"} {
		var chart [][]int64
		eval("chart", `Chart.getChart("`+endpoint+`-chart").data.datasets.map(d => d.data)`, &chart)
		reports := apiReports(t, base, key, endpoint, period+"&interval="+parts[2])
		var want [][]int64
		skip := map[string]int{"chat": 1}[endpoint]
		for m := skip; m < len(reports[0].Data); m++ {
			var series []int64
			for _, r := range reports {
				series = append(series, r.Data[m].Value)
			}
			want = append(want, series)
		}
		var users []int64
		for _, r := range reports {
			users = append(users, r.NumStudentsUsed)
		}
		if want = append(want, users); !reflect.DeepEqual(chart, want) {
			t.Errorf("%s chart %v, want %v", endpoint, chart, want)
		}
		// Each period named in the page's one date format; one that is
		// not whole (cut by the range, or not over yet) says so in its
		// label, its bars drawn as any other's (a paler colour would be
		// under 3:1 against the card).
		var labels []any
		eval("chart labels", `Chart.getChart("`+endpoint+`-chart").data.labels`, &labels)
		wantLabels, wantNoted := periodLabels(parts[0], parts[1], parts[2], reports)
		if !reflect.DeepEqual(labels, wantLabels) {
			t.Errorf("%s chart's periods %v, want %v", endpoint, labels, wantLabels)
		}
		// The line is dashed into and out of a period that is not whole, first or last.
		var dashed, wantDashed []bool
		eval("dashed line", `(() => { const line = Chart.getChart("`+endpoint+`-chart").data.datasets.at(-1);
			return line.data.slice(1).map((_, i) => Boolean(line.segment.borderDash({p0DataIndex: i, p1DataIndex: i + 1}))); })()`, &dashed)
		for i := 1; i < len(wantNoted); i++ {
			wantDashed = append(wantDashed, wantNoted[i-1] || wantNoted[i])
		}
		if !reflect.DeepEqual(dashed, wantDashed) {
			t.Errorf("%s chart's line dashed %v, want %v", endpoint, dashed, wantDashed)
		}
	}
	var status string
	eval("status", `document.getElementById("status").textContent`, &status)
	if want := usDay(parts[0]) + " – " + usDay(parts[1]) + ", by " + parts[2]; status != want {
		t.Errorf("status %q, want %q", status, want)
	}

	// Totals: every metric and the students who used it, over the range,
	// and the change against the as many days just before.
	var tiles [][]string
	eval("totals", `[...document.querySelectorAll("#totals .tile")].map(t => [t.dataset.endpoint, t.dataset.title, t.querySelector(".value").textContent, t.querySelector(".change").textContent])`, &tiles)
	beforeStart, beforeEnd := previousPeriod(parts[0], parts[1])
	before := "startDate=" + beforeStart + "&endDate=" + beforeEnd
	var wantTiles [][]string
	for _, endpoint := range []string{"live-lecture", "chat"} {
		r, b := apiReports(t, base, key, endpoint, period)[0], apiReports(t, base, key, endpoint, before)[0]
		for i, m := range r.Data {
			wantTiles = append(wantTiles, []string{endpoint, m.Title, thousands(m.Value), change(m.Value, b.Data[i].Value) + " vs 28 days before"})
		}
		wantTiles = append(wantTiles, []string{endpoint, "Students who used it", thousands(r.NumStudentsUsed), change(r.NumStudentsUsed, b.NumStudentsUsed) + " vs 28 days before"})
	}
	if !reflect.DeepEqual(tiles, wantTiles) {
		t.Errorf("totals %v, want %v", tiles, wantTiles)
	}
	// What the changes compare with, in words and dates; and that the
	// range, ending today, is not over.
	today := time.Now().Format(time.DateOnly)
	notOver := "Today, " + usDay(today) + ", is not over yet: its numbers still grow."
	wantCaption := "Each change is vs 28 days before: " + usDay(beforeStart) + " – " + usDay(beforeEnd) + ". " + notOver
	checkShown(t, ctx, "desktop", map[string]string{"#totals-caption": wantCaption, "#table-note": notOver})

	// The table: a row per student, both endpoints' metrics.
	rowsJS := `[...document.querySelectorAll("#students tbody tr")].map(tr => [...tr.cells].map(td => td.firstChild ? td.firstChild.textContent : ""))`
	var rows [][]string
	eval("table", rowsJS, &rows)
	wantRows := map[string][]string{}
	var order []string
	inactive := 0
	// Each row's last day of use and status, as GET /api/last-use says.
	var uses struct {
		Students []struct {
			StudentID, Status string
			LastUsed          *string
		}
	}
	if err := json.Unmarshal(apiRead(t, "GET", base+"/api/last-use", key), &uses); err != nil {
		t.Fatal(err)
	}
	lastUse := map[string][]string{}
	stopped := 0
	for _, u := range uses.Students {
		lastUse[u.StudentID] = []string{"never", u.Status}
		if u.LastUsed != nil {
			lastUse[u.StudentID][0] = usDay(*u.LastUsed)
		}
		if u.Status == "stopped" {
			stopped++
		}
	}
	for _, endpoint := range []string{"live-lecture", "chat"} {
		for _, r := range apiReports(t, base, key, endpoint, period+"&students=true") {
			if wantRows[r.StudentID] == nil {
				wantRows[r.StudentID] = append([]string{r.StudentName, r.StudentID}, lastUse[r.StudentID]...)
				order = append(order, r.StudentID)
			}
			for _, m := range r.Data {
				wantRows[r.StudentID] = append(wantRows[r.StudentID], strconv.FormatInt(m.Value, 10))
			}
		}
	}
	var want [][]string
	for _, id := range order {
		want = append(want, wantRows[id])
		if strings.Trim(strings.Join(wantRows[id][4:], ""), "0") == "" {
			inactive++
		}
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("table rows differ from the API's student reports:\n%v\nwant\n%v", rows, want)
	}
	if inactive == 0 || inactive == len(want) {
		t.Fatalf("the demo range has %d inactive students of %d: the check means nothing", inactive, len(want))
	}
	var shown int
	run("inactive only", chromedp.Click("#inactive-only"), chromedp.Evaluate(`document.querySelectorAll("#students tbody tr.inactive").length === document.querySelectorAll("#students tbody tr").length ? document.querySelectorAll("#students tbody tr").length : -1`, &shown))
	if shown != inactive {
		t.Errorf("inactive only: %d rows, want the %d inactive students", shown, inactive)
	}
	// Stopped: the students who used it before and not lately, as the
	// list of who stopped says.
	var stoppedShown []string
	run("stopped", chromedp.Click("#inactive-only"), chromedp.Click("#stopped-only"),
		chromedp.Evaluate(`[...document.querySelectorAll("#students tbody tr")].map(tr => tr.cells[3].textContent)`, &stoppedShown))
	if stopped == 0 || len(stoppedShown) != min(stopped, 200) || slices.ContainsFunc(stoppedShown, func(s string) bool { return s != "stopped" }) {
		t.Errorf("stopped: %d rows %v, want the %d stopped students", len(stoppedShown), stoppedShown, stopped)
	}
	run("search", chromedp.Click("#stopped-only"), chromedp.SendKeys("#search", order[3]), chromedp.Evaluate(`document.querySelectorAll("#students tbody tr").length`, &shown))
	if shown != 1 {
		t.Errorf("searching for %s: %d rows", order[3], shown)
	}
	// Sorting by Total Messages, twice: descending then ascending order.
	var totalsColumn []string
	run("sort", chromedp.Evaluate(`const s = document.getElementById("search"); s.value = ""; s.dispatchEvent(new Event("input")); true`, nil),
		chromedp.Click(`//th/button[text()="Chat: Total Messages"]`, chromedp.BySearch),
		chromedp.Click(`//th/button[text()="Chat: Total Messages"]`, chromedp.BySearch),
		chromedp.Evaluate(`[...document.querySelectorAll("#students tbody tr")].map(tr => tr.cells[6].textContent)`, &totalsColumn))
	for i := 1; i < len(totalsColumn); i++ {
		a, _ := strconv.Atoi(totalsColumn[i-1])
		b, _ := strconv.Atoi(totalsColumn[i])
		if a < b {
			t.Fatalf("sorted by Total Messages descending: %v", totalsColumn)
		}
	}

	// A student's page: their usage of both endpoints by period, beside the
	// school's average per student who used it, as the API answers.
	var student string
	for _, id := range order {
		if strings.Trim(strings.Join(wantRows[id][2:], ""), "0") != "" {
			student = id
			break
		}
	}
	run("student page", chromedp.Click(`#students tbody tr[data-id="`+student+`"] button.student`),
		chromedp.WaitVisible(`#student-view[data-loaded="`+student+`"]`))
	for _, endpoint := range []string{"live-lecture", "chat"} {
		var chart [][]float64
		eval("student chart", `Chart.getChart("student-`+endpoint+`-chart").data.datasets.map(d => d.data)`, &chart)
		mine := apiReports(t, base, key, endpoint, period+"&interval="+parts[2]+"&students=true&studentId="+student)
		school := apiReports(t, base, key, endpoint, period+"&interval="+parts[2])
		var want [][]float64
		for m := map[string]int{"chat": 1}[endpoint]; m < len(mine[0].Data); m++ {
			var series []float64
			for _, r := range mine {
				series = append(series, float64(r.Data[m].Value))
			}
			want = append(want, series)
		}
		if want = append(want, averages(school)); !reflect.DeepEqual(chart, want) {
			t.Errorf("%s's %s chart %v, want %v", student, endpoint, chart, want)
		}
	}
	// Their totals over the range, beside the school's average per
	// student who used the endpoint.
	var studentTiles [][]string
	eval("student totals", `[...document.querySelectorAll("#student-totals .tile")].map(t => [t.dataset.title, t.querySelector(".value").textContent, t.querySelector(".average").textContent])`, &studentTiles)
	var wantStudentTiles [][]string
	for _, endpoint := range []string{"live-lecture", "chat"} {
		mine := apiReports(t, base, key, endpoint, period+"&students=true&studentId="+student)[0]
		school := apiReports(t, base, key, endpoint, period)[0]
		for i, m := range school.Data {
			average := strconv.FormatFloat(averagePerStudent(m.Value, school.NumStudentsUsed), 'f', -1, 64)
			wantStudentTiles = append(wantStudentTiles, []string{m.Title, thousands(mine.Data[i].Value), "School average " + average})
		}
	}
	if !reflect.DeepEqual(studentTiles, wantStudentTiles) {
		t.Errorf("%s's totals %v, want %v", student, studentTiles, wantStudentTiles)
	}
	checkComparedWith(t, ctx, "the whole school", "School", "the school's", "the school")
	var page []byte
	run("student page screenshot", chromedp.CaptureScreenshot(&page))
	save(t, filepath.Join(shots, "dashboard-student.png"), page)
	var back bool
	run("back to the school", chromedp.Click("#student-back"), chromedp.WaitVisible("#students-section"),
		chromedp.Evaluate(`document.getElementById("student-view").hidden`, &back))
	if !back {
		t.Errorf("back to the school: the student's page is still shown")
	}

	// The CSV download is the CSV endpoint's answer.
	name := fmt.Sprintf("lakeside-academy-chat-students-%s-to-%s.csv", parts[0], parts[1])
	got := downloaded(t, run, "#download-chat", name)
	if wantCSV := apiGet(t, base, key, "chat", period+"&students=true&format=csv"); string(got) != string(wantCSV) {
		t.Errorf("downloaded %s (%d bytes) differs from the CSV endpoint's answer (%d bytes)", name, len(got), len(wantCSV))
	}

	var buf []byte
	run("desktop screenshot", chromedp.Evaluate(`window.scrollTo(0, 0)`, nil), chromedp.CaptureScreenshot(&buf))
	save(t, filepath.Join(shots, "dashboard-desktop.png"), buf)
	var overflow bool
	run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Reload(), chromedp.WaitVisible(`#dashboard[data-loaded]`),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow),
		chromedp.CaptureScreenshot(&buf))
	save(t, filepath.Join(shots, "dashboard-phone.png"), buf)
	if overflow {
		t.Errorf("on a phone the page is wider than the screen")
	}
	checkShown(t, ctx, "phone", map[string]string{"#totals-caption": wantCaption, "#table-note": notOver})
	// The table at first sight: each name with its id, and the first
	// figures, in view without scrolling; the page is the one thing that
	// scrolls down (the table's box only sideways).
	var phoneTable struct {
		IDs, Shown                  []string
		IDsVisible                  bool
		FiguresInView               int
		BoxScrollsDown              bool
		PinnedWidth, WidestHeader   float64
		NameShift, LastHeaderHidden float64
	}
	run("phone table", chromedp.ScrollIntoView("#students"), chromedp.Evaluate(`(() => {
			const wrap = document.querySelector("#students-section .table-wrap");
			const rows = [...document.querySelectorAll("#students tbody tr")].slice(0, 20);
			const sids = rows.map(tr => tr.querySelector(".sid"));
			const inView = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= innerWidth; };
			const out = {IDs: rows.map(tr => tr.dataset.id), Shown: sids.map(s => s.textContent), IDsVisible: sids.every(inView),
				FiguresInView: [...rows[0].cells].slice(2).filter(inView).length,
				BoxScrollsDown: wrap.scrollHeight > wrap.clientHeight + 1};
			// Scrolled sideways: the name stays, and each header can be read whole.
			const heads = [...document.querySelectorAll("#students thead th")];
			out.PinnedWidth = heads[0].getBoundingClientRect().width;
			out.WidestHeader = Math.max(...heads.slice(2).map(th => th.getBoundingClientRect().width));
			wrap.scrollLeft = wrap.scrollWidth;
			const cell = document.querySelector("#students tbody td");
			out.NameShift = cell.getBoundingClientRect().left - wrap.getBoundingClientRect().left;
			out.LastHeaderHidden = heads[0].getBoundingClientRect().right - heads.at(-1).getBoundingClientRect().left;
			return out;
		})()`, &phoneTable), chromedp.CaptureScreenshot(&buf))
	save(t, filepath.Join(shots, "dashboard-phone-table.png"), buf)
	if !reflect.DeepEqual(phoneTable.IDs, phoneTable.Shown) || !phoneTable.IDsVisible {
		t.Errorf("on a phone, the pinned names show ids %v (in view: %v), want %v", phoneTable.Shown, phoneTable.IDsVisible, phoneTable.IDs)
	}
	if phoneTable.FiguresInView < 1 || phoneTable.BoxScrollsDown {
		t.Errorf("on a phone, the table shows %d figures without scrolling (want at least one), its box scrolls down: %v",
			phoneTable.FiguresInView, phoneTable.BoxScrollsDown)
	}
	if phoneTable.NameShift < -1 || phoneTable.NameShift > 2 || phoneTable.LastHeaderHidden > 1 ||
		phoneTable.PinnedWidth+phoneTable.WidestHeader > 390-20 {
		t.Errorf("on a phone, scrolled sideways: the names move by %.0f px, the last header is %.0f px under them; "+
			"names %.0f px and the widest header %.0f px do not fit beside each other", phoneTable.NameShift, phoneTable.LastHeaderHidden,
			phoneTable.PinnedWidth, phoneTable.WidestHeader)
	}
	// The charts keep most of their height for the plot, the legend below.
	checkPlots := func(where string, ids ...string) {
		t.Helper()
		var plots []float64
		eval(where+": plots", `["`+strings.Join(ids, `", "`)+`"].map(id => Chart.getChart(id).chartArea.height)`, &plots)
		for i, h := range plots {
			if h < 150 {
				t.Errorf("on a phone, %s has %.0f px of plot, want at least 150", ids[i], h)
			}
		}
	}
	checkPlots("phone", "live-lecture-chart", "chat-chart")
	var studentTilesShown int
	run("phone student page", chromedp.Click(`#students tbody tr[data-id="`+student+`"] button.student`),
		chromedp.WaitVisible(`#student-view[data-loaded="`+student+`"]`), chromedp.Evaluate(`window.scrollTo(0, 0)`, nil),
		chromedp.Evaluate(`[...document.querySelectorAll("#student-totals .tile")].filter(t => t.getBoundingClientRect().height > 0).length`, &studentTilesShown),
		chromedp.CaptureScreenshot(&buf))
	save(t, filepath.Join(shots, "dashboard-phone-student.png"), buf)
	if studentTilesShown != len(wantStudentTiles) {
		t.Errorf("on a phone, the student's page shows %d totals, want %d", studentTilesShown, len(wantStudentTiles))
	}
	checkPlots("phone student page", "student-live-lecture-chart", "student-chat-chart")
	run("phone student charts", chromedp.ScrollIntoView("#student-chat-chart"), chromedp.CaptureScreenshot(&buf),
		chromedp.Click("#student-back"), chromedp.WaitVisible("#students-section"))
	save(t, filepath.Join(shots, "dashboard-phone-student-charts.png"), buf)
	// The access log in stacked rows: every field of an entry in view.
	var accessFields []struct {
		Label, Text string
		InView      bool
	}
	run("phone access log", chromedp.Evaluate(`document.getElementById("access-section").open = true; true`, nil),
		chromedp.WaitVisible(`#access-section[data-loaded]`), chromedp.ScrollIntoView("#access"),
		chromedp.Evaluate(`[...document.querySelectorAll("#access tbody tr:first-child td")].map(td => {
			const r = td.getBoundingClientRect();
			return {Label: td.dataset.label, Text: td.textContent, InView: r.height > 0 && r.left >= 0 && r.right <= innerWidth};
		})`, &accessFields), chromedp.CaptureScreenshot(&buf),
		chromedp.Evaluate(`document.getElementById("access-section").open = false; true`, nil))
	save(t, filepath.Join(shots, "dashboard-phone-access.png"), buf)
	var labels []string
	for _, f := range accessFields {
		labels = append(labels, f.Label)
		if !f.InView || f.Text == "" {
			t.Errorf("on a phone, the access log's %s (%q) is not in view", f.Label, f.Text)
		}
	}
	if want := []string{"When", "Who", "From", "What", "Days", "Students"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("on a phone, the access log's fields are %v, want %v", labels, want)
	}

	// The page's icon is its own.
	var icon string
	run("favicon", chromedp.Evaluate(`fetch(document.querySelector("link[rel=icon]").href).then(r => r.ok ? r.headers.get("Content-Type") : String(r.status))`,
		&icon, awaitPromise))
	if !strings.HasPrefix(icon, "image/svg+xml") {
		t.Errorf("favicon: %q", icon)
	}

	// A link may name the range and the interval, as the weekly digest's
	// does; then the page is opened again as it was.
	var linked []string
	run("a digest's link", chromedp.Navigate(base+"/?startDate=2026-11-02&endDate=2026-11-08&interval=day"), chromedp.WaitVisible("#start"),
		chromedp.Evaluate(`["start", "end", "interval"].map(id => document.getElementById(id).value)`, &linked),
		chromedp.Navigate(base+"/"), chromedp.WaitVisible("#start"))
	if want := []string{"2026-11-02", "2026-11-08", "day"}; !reflect.DeepEqual(linked, want) {
		t.Errorf("the form after a digest's link: %v, want %v", linked, want)
	}

	// Classes: the picker lists the school's classes; a class picked, the
	// totals and the table are the class's, as the API answers them with
	// classId; a teacher's key lists its own class only, and sees it.
	checkClass := func(who, key string, wantOptions []string) (student string) {
		t.Helper()
		var options []string
		var loaded string
		run(who+": class picker", chromedp.WaitVisible(`#dashboard[data-loaded]`), chromedp.WaitVisible("#class-picker"),
			chromedp.Evaluate(`[...document.querySelectorAll("#class option")].map(o => o.value + "|" + o.textContent)`, &options),
			chromedp.SetValue("#class", "demo-class"), chromedp.Evaluate(`document.getElementById("class").dispatchEvent(new Event("change")); true`, nil),
			chromedp.WaitVisible(`#dashboard[data-loaded$="/demo-class"]`), chromedp.AttributeValue("#dashboard", "data-loaded", &loaded, nil))
		if !reflect.DeepEqual(options, wantOptions) {
			t.Errorf("%s: class picker %q, want %q", who, options, wantOptions)
		}
		parts := strings.Split(loaded, "/")
		query := "startDate=" + parts[0] + "&endDate=" + parts[1] + "&classId=demo-class"
		var values []string
		var rows int
		eval(who+": class totals", `[...document.querySelectorAll("#totals .tile .value")].map(v => v.textContent)`, &values)
		eval(who+": class table", `document.querySelectorAll("#students tbody tr").length`, &rows)
		var want []string
		for _, endpoint := range []string{"live-lecture", "chat"} {
			r := apiReports(t, base, key, endpoint, query)[0]
			for _, m := range r.Data {
				want = append(want, thousands(m.Value))
			}
			want = append(want, thousands(r.NumStudentsUsed))
		}
		if !reflect.DeepEqual(values, want) || rows != 5 {
			t.Errorf("%s: the class's totals %v and %d rows, want %v and 5", who, values, rows, want)
		}
		// A student's page opened from the class compares them with the
		// class: its average per student who used it, named as the class's.
		eval(who+": a student of the class", `document.querySelector("#students tbody tr").dataset.id`, &student)
		run(who+": the class's student page", chromedp.Click(`#students tbody tr[data-id="`+student+`"] button.student`),
			chromedp.WaitVisible(`#student-view[data-loaded="`+student+`"]`))
		var got, wantAverages []string
		var lines [][]float64
		eval(who+": the averages", `[...document.querySelectorAll("#student-totals .tile .average")].map(a => a.textContent)`, &got)
		eval(who+": the average lines", `["live-lecture", "chat"].map(e => Chart.getChart("student-" + e + "-chart").data.datasets.at(-1).data)`, &lines)
		var wantLines [][]float64
		for _, endpoint := range []string{"live-lecture", "chat"} {
			r := apiReports(t, base, key, endpoint, query)[0]
			for _, m := range r.Data {
				wantAverages = append(wantAverages, "Demo class average "+strconv.FormatFloat(averagePerStudent(m.Value, r.NumStudentsUsed), 'f', -1, 64))
			}
			wantLines = append(wantLines, averages(apiReports(t, base, key, endpoint, query+"&interval="+parts[2])))
		}
		if !reflect.DeepEqual(got, wantAverages) || !reflect.DeepEqual(lines, wantLines) {
			t.Errorf("%s: a student's page of the class compares with %v and lines %v, want %v and %v", who, got, lines, wantAverages, wantLines)
		}
		checkComparedWith(t, ctx, who, "Demo class", "Demo class's", "Demo class")
		run(who+": back to the class", chromedp.Click("#student-back"), chromedp.WaitVisible("#students-section"))
		return student
	}
	classStudent := checkClass("the school's key", key, []string{"|Whole school", "demo-class|Demo class (5 students)"})

	// Who saw students' figures: the school's access log, as its key reads
	// it, this page's own requests of student reports included (the newest:
	// the class's student page).
	var access struct {
		Rows            int
		First, Students []string
	}
	run("the access log", chromedp.Evaluate(`document.getElementById("access-section").open = true; true`, nil),
		chromedp.WaitVisible(`#access-section[data-loaded]`),
		chromedp.Evaluate(`({Rows: document.querySelectorAll("#access tbody tr").length,
			First: [...document.querySelectorAll("#access tbody tr:first-child td")].map(td => td.textContent),
			Students: [...document.querySelectorAll("#access tbody tr td:last-child")].map(td => td.textContent)})`, &access))
	logged := apiAccessLog(t, base, key)
	if len(logged) == 0 || access.Rows != min(len(logged), 50) || len(access.First) != 6 ||
		access.First[1] != logged[0].Key.Label || access.First[5] != classStudent || !slices.Contains(access.Students, "all of demo-class") {
		t.Errorf("the access log shows %d rows, the first %q; the API has %d entries, the first %+v", access.Rows, access.First, len(logged), logged)
	}
	run("a teacher's key", chromedp.Evaluate(`document.getElementById("sign-out").click(); true`, nil), chromedp.WaitVisible("#key"),
		chromedp.SendKeys("#key", keys["teacher"]), chromedp.Click(`#key-form button[type=submit]`))
	checkClass("a teacher's key", keys["teacher"], []string{"|All your classes", "demo-class|Demo class (5 students)"})
	var accessHidden bool
	run("a teacher's key: no access log", chromedp.Evaluate(`document.getElementById("access-section").hidden`, &accessHidden))
	if !accessHidden {
		t.Error("a teacher's key is offered the school's access log")
	}

	// A school of 10,000 students stays smooth: the table shows a page of
	// 200 rows; it sorts, searches and pages. The times go to the log.
	start := time.Now()
	run("big school", chromedp.Evaluate(`document.getElementById("sign-out").click(); true`, nil), chromedp.WaitVisible("#key"),
		chromedp.SendKeys("#key", keys[bigSchool]), chromedp.Click(`#key-form button[type=submit]`),
		chromedp.WaitVisible(`#dashboard[data-loaded]`))
	loadTime := time.Since(start)
	var big struct {
		Rows                    int
		Count, Label, NextLabel string
		SortMs, SearchMs        float64
		Found                   int
	}
	run("big school's table", chromedp.Evaluate(`(() => {
			const rows = () => document.querySelectorAll("#students tbody tr").length;
			const out = {Rows: rows(), Count: document.getElementById("row-count").textContent, Label: document.getElementById("page-label").textContent};
			let t = performance.now();
			[...document.querySelectorAll("#students th button")].find(b => b.textContent.startsWith("Chat: Total Messages")).click();
			out.SortMs = performance.now() - t;
			document.getElementById("next-page").click();
			out.NextLabel = document.getElementById("page-label").textContent;
			const search = document.getElementById("search");
			search.value = "student 0042";
			t = performance.now();
			search.dispatchEvent(new Event("input"));
			out.SearchMs = performance.now() - t;
			out.Found = rows();
			search.value = ""; search.dispatchEvent(new Event("input"));
			return out;
		})()`, &big))
	t.Logf("10,000 students: charts and table in %v; sorted in %.0f ms, searched in %.0f ms", loadTime.Round(time.Millisecond), big.SortMs, big.SearchMs)
	if big.Rows != 200 || !strings.Contains(big.Count, "of 10,000 students") || big.Label != "Rows 1–200, page 1 of 50" ||
		big.NextLabel != "Rows 201–400, page 2 of 50" || big.Found != 10 {
		t.Errorf("10,000 students: %+v", big)
	}

	// A school with a minCellSize: its figures of fewer students say
	// "hidden" and why, are not compared, and the caption says so.
	var small struct {
		Values, Changes []string
		Title, Caption  string
	}
	run("small school", chromedp.Evaluate(`document.getElementById("sign-out").click(); true`, nil), chromedp.WaitVisible("#key"),
		chromedp.SendKeys("#key", keys[smallSchool]), chromedp.Click(`#key-form button[type=submit]`),
		chromedp.WaitVisible(`#dashboard[data-loaded]`),
		chromedp.Evaluate(`({
			Values: [...document.querySelectorAll("#totals .tile .value")].map(v => v.textContent),
			Changes: [...document.querySelectorAll("#totals .tile .change")].map(v => v.firstChild.textContent),
			Title: document.querySelector("#totals .tile.hidden-figure")?.title ?? "",
			Caption: document.getElementById("totals-caption").textContent,
		})`, &small))
	wantValues := []string{"0", "0", "0", "hidden", "hidden", "0", "0", "0", "0", "0", "hidden"}
	if !reflect.DeepEqual(small.Values, wantValues) || small.Changes[3] != "not compared" || small.Changes[0] != "no change" ||
		!strings.HasPrefix(small.Title, "Hidden: fewer than 10 students") || !strings.HasSuffix(small.Caption, "Figures of fewer than 10 students are hidden.") {
		t.Errorf("a school hiding small figures shows %+v, want values %v", small, wantValues)
	}

	// A school keeping 21 days: the dashboard's range starts at the first
	// day kept rather than 28 days back, none before it may be picked, and
	// the days before (deleted) are not compared.
	var kept struct {
		Changes             int
		Caption, Min, Start string
	}
	run("kept school", chromedp.Evaluate(`document.getElementById("sign-out").click(); true`, nil), chromedp.WaitVisible("#key"),
		chromedp.SendKeys("#key", keys[keptSchool]), chromedp.Click(`#key-form button[type=submit]`),
		chromedp.WaitVisible(`#dashboard[data-loaded]`),
		chromedp.Evaluate(`({
			Changes: document.querySelectorAll("#totals .tile .change").length,
			Caption: document.getElementById("totals-caption").textContent,
			Min: document.getElementById("start").min,
			Start: document.getElementById("start").value,
		})`, &kept))
	firstKept := time.Now().UTC().AddDate(0, 0, -20).Format(time.DateOnly)
	if kept.Changes != 0 || !strings.HasPrefix(kept.Caption, "Not compared with the days before: the school keeps its usage from ") ||
		kept.Min != firstKept || kept.Start != firstKept {
		t.Errorf("a school keeping 21 days shows %+v, want no change compared and the range from the first day kept, %s", kept, firstKept)
	}

	// A wrong key, and the key of a school whose plan ended: one request
	// each, so that a typo does not spend six of the failed-key budget.
	for name, bad := range map[string]string{"wrong": "gak_NOTAKEY", "expired": keys["riverside-college"]} {
		var message string
		var requests int
		run(name+" key", chromedp.Evaluate(`document.getElementById("sign-out").hidden || document.getElementById("sign-out").click();
				document.getElementById("key-error").textContent = ""; performance.clearResourceTimings(); true`, nil),
			chromedp.WaitVisible("#key"), chromedp.SendKeys("#key", bad), chromedp.Click(`#key-form button[type=submit]`),
			chromedp.Poll(`document.getElementById("key-error").textContent`, &message),
			chromedp.Sleep(200*time.Millisecond),
			chromedp.Evaluate(`performance.getEntriesByType("resource").filter(e => e.name.includes("/api/")).length`, &requests))
		if !strings.Contains(message, "This key was not accepted") || requests != 1 {
			t.Errorf("%s key: %q after %d requests, want the message after one", name, message, requests)
		}
	}

	// Past a rate limit, the wait the service names, in words.
	for wait, want := range map[string]string{"1": "try again in 1 second.", "30": "try again in 30 seconds."} {
		var message string
		run("429 after "+wait, chromedp.Evaluate(`(async () => {
				const real = window.fetch;
				window.fetch = async () => new Response('{"error":"Too many requests"}', {status: 429, headers: {"Retry-After": "`+wait+`"}});
				try { await report("chat", {}); return "no error"; } catch (err) { return err.message; } finally { window.fetch = real; }
			})()`, &message, awaitPromise))
		if !strings.HasSuffix(message, want) {
			t.Errorf("429 with Retry-After %s: %q, want it to end %q", wait, message, want)
		}
	}
	t.Logf("screenshots in %s", shots)
}

// openBrowser starts headless Chromium at a desktop's size, for at most 90
// seconds, and returns its context and two steps that fail the test when
// they do: run runs actions, eval evaluates JavaScript into a value. An
// exception the page does not catch fails the test too.
func openBrowser(t *testing.T) (context.Context, func(string, ...chromedp.Action), func(string, string, any)) {
	t.Helper()
	return openBrowserFor(t, 90*time.Second)
}

// openBrowserFor is openBrowser, its session bounded by limit rather
// than 90 s, for a test of many views.
func openBrowserFor(t *testing.T, limit time.Duration) (context.Context, func(string, ...chromedp.Action), func(string, string, any)) {
	t.Helper()
	return openBrowserWith(t, limit, "")
}

// openBrowserWith is openBrowserFor with a profile of these preferences
// (Chromium's Preferences file, JSON), and its frames in the process of
// the page, so that the test can read inside them.
func openBrowserWith(t *testing.T, limit time.Duration, preferences string) (context.Context, func(string, ...chromedp.Action), func(string, string, any)) {
	t.Helper()
	exe := chromium(t)
	// Chromium's profile, removed once its last process lets go of it
	// (t.TempDir's cleanup fails on files a helper process still writes).
	profile, err := os.MkdirTemp("", "groupanalytics-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if preferences != "" {
		if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(profile, "Default", "Preferences"), []byte(preferences), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(profile),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-site-isolation-trials", true),
		// CI runs the packages' tests side by side on two cores, where
		// Chromium has taken more than chromedp's default 20 s to start.
		chromedp.WSURLReadTimeout(90*time.Second))...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, limit)
	t.Cleanup(cancel)
	chromedp.ListenTarget(ctx, func(ev any) {
		if ev, ok := ev.(*runtime.EventExceptionThrown); ok {
			t.Errorf("the page threw: %s", ev.ExceptionDetails.Error())
		}
	})
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(what, js string, into any) {
		t.Helper()
		run(what, chromedp.Evaluate(js, into))
	}
	return ctx, run, eval
}

// checkShown checks that each element the selector names is in view (it
// has a size) and says what is wanted.
func checkShown(t *testing.T, ctx context.Context, width string, want map[string]string) {
	t.Helper()
	for selector, text := range want {
		var got struct {
			Text   string
			Height float64
		}
		if err := chromedp.Run(ctx, chromedp.Evaluate(`(() => { const e = document.querySelector("`+selector+`");
				return {Text: e.textContent, Height: e.getBoundingClientRect().height}; })()`, &got)); err != nil {
			t.Fatal(err)
		}
		if got.Text != text || got.Height == 0 {
			t.Errorf("%s: %s says %q (height %.0f), want %q shown", width, selector, got.Text, got.Height, text)
		}
	}
}

// checkComparedWith checks that the student's page shown names what it
// compares the student with, as name ("School average: Sessions Made" in
// the charts' legends), whose (in the note) and the (on the back button).
func checkComparedWith(t *testing.T, ctx context.Context, who, name, whose, the string) {
	t.Helper()
	var got struct {
		Lines      []string
		Note, Back string
	}
	if err := chromedp.Run(ctx, chromedp.Evaluate(`({
			Lines: ["live-lecture", "chat"].map(e => Chart.getChart("student-" + e + "-chart").data.datasets.at(-1).label),
			Note: document.getElementById("student-note").textContent,
			Back: document.getElementById("student-back").textContent})`, &got)); err != nil {
		t.Fatal(err)
	}
	wantLines := []string{name + " average: Sessions Made", name + " average: Total Messages"}
	if !reflect.DeepEqual(got.Lines, wantLines) || !strings.Contains(got.Note, " beside "+whose+" average per student who used ") ||
		got.Back != "Back to "+the {
		t.Errorf("%s: a student's page says %+v, want lines %q, the note naming %q, and back to %q", who, got, wantLines, whose, the)
	}
}

// averagePerStudent is the average the page shows of a total over the
// students who used the endpoint, to a tenth (0 when none did).
func averagePerStudent(total, users int64) float64 {
	if users == 0 {
		return 0
	}
	return math.Round(float64(total)/float64(users)*10) / 10
}

// averages are the averages per student who used the endpoint of each
// period's report, of its first metric, as a student's chart draws them.
func averages(reports []apiReport) []float64 {
	var out []float64
	for _, r := range reports {
		out = append(out, averagePerStudent(r.Data[0].Value, r.NumStudentsUsed))
	}
	return out
}

// usDay writes a day (2026-11-02) as the page does in Chromium's en-US
// locale, the date inputs' format: 11/02/2026.
func usDay(iso string) string {
	d, _ := time.Parse(time.DateOnly, iso)
	return d.Format("01/02/2006")
}

// periodLabels are the chart's labels of the periods of reports, cut from
// first to last by interval, and which of them are noted: a period not
// over yet is "(so far)", a week or month the range cuts "(partial)".
func periodLabels(first, last, interval string, reports []apiReport) (labels []any, noted []bool) {
	start, _ := time.Parse(time.DateOnly, first)
	end, _ := time.Parse(time.DateOnly, last)
	wholeStart := map[string]bool{"day": true, "week": start.Weekday() == time.Monday, "month": start.Day() == 1}[interval]
	next := end.AddDate(0, 0, 1)
	wholeEnd := map[string]bool{"day": true, "week": next.Weekday() == time.Monday, "month": next.Day() == 1}[interval]
	for i, r := range reports {
		periodEnd, _ := time.Parse(time.RFC3339, r.EndDate)
		periodStart, _ := time.Parse(time.RFC3339, r.StartDate)
		day := start
		if i > 0 { // the group is in UTC: a period starts on its UTC day
			day = periodStart
		}
		note := ""
		switch {
		case periodEnd.After(time.Now()):
			note = "(so far)"
		case i == 0 && !wholeStart, i == len(reports)-1 && !wholeEnd:
			note = "(partial)"
		}
		if note == "" {
			labels = append(labels, usDay(day.Format(time.DateOnly)))
		} else {
			labels = append(labels, []any{usDay(day.Format(time.DateOnly)), note})
		}
		noted = append(noted, note != "")
	}
	return labels, noted
}

// awaitPromise makes chromedp.Evaluate wait for the promise the script
// returns, and give its value.
func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

// change tells how now compares with before, as the page does.
func change(now, before int64) string {
	switch {
	case before == 0 && now == 0:
		return "no change"
	case before == 0:
		return "new"
	}
	percent := math.Floor(float64(now-before)/float64(before)*100 + 0.5) // JavaScript's Math.round
	switch {
	case percent > 0:
		return fmt.Sprintf("▲ %.0f%%", percent)
	case percent < 0:
		return fmt.Sprintf("▼ %.0f%%", -percent)
	}
	return "no change"
}

// previousPeriod is the first and last of the as many days just before
// the range from first to last (YYYY-MM-DD): what the totals are compared
// with.
func previousPeriod(first, last string) (string, string) {
	from, _ := time.Parse(time.DateOnly, first)
	to, _ := time.Parse(time.DateOnly, last)
	return from.Add(-to.Sub(from) - 24*time.Hour).Format(time.DateOnly), from.AddDate(0, 0, -1).Format(time.DateOnly)
}

// thousands formats n as the page does (en-US grouping).
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func save(t *testing.T, path string, png []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
