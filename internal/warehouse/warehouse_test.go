package warehouse_test

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
	"groupanalytics/internal/warehouse"
)

var ctx = context.Background()

// now is the tests' clock: the files are of the days before it.
var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// env is a real server on real stores, with schools whose students used
// the service on random days.
type env struct {
	t        *testing.T
	platform *platform.Platform
	engine   *report.Engine
	server   *httptest.Server
	events   int
	token    string // the platform API's, made when first needed
}

func newEnv(t *testing.T, s storetest.Stores) *env {
	e := &env{t: t, platform: platform.New(s.Directory, s.Usage), engine: report.NewEngine(s.Directory, s.Usage)}
	e.platform.Now = func() time.Time { return now }
	e.server = httptest.NewServer(httpapi.New(httpapi.Config{Engine: e.engine, Platform: e.platform, Ready: s.Ping,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now }}))
	t.Cleanup(e.server.Close)
	return e
}

func (e *env) must(_ any, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// school makes a school in zone with a plan of seats, a class of half
// its students (from a roster) and another made for an LMS's course, and
// sends a random month of use of its students, over the days before now.
func (e *env) school(id, zone string, students, minCellSize int, rng *rand.Rand) {
	e.t.Helper()
	e.must(e.platform.CreateGroup(ctx, id, "School "+id, zone))
	e.must(e.platform.AddPlan(ctx, id, "2024-01-01", "", 40))
	if minCellSize > 0 {
		e.must(nil, e.platform.Directory.SetMinCellSize(ctx, id, minCellSize))
	}
	var ids []string
	for i := range students {
		sid := fmt.Sprintf("%s-s%02d", id, i)
		ids = append(ids, sid)
		e.must(e.platform.AddStudent(ctx, id, sid, fmt.Sprintf("Student %02d", students-i)))
	}
	e.must(e.platform.CreateClass(ctx, analytics.Class{GroupID: id, ID: "math-101", Name: "Math"}))
	e.must(e.platform.SetClassMembers(ctx, id, "math-101", ids[:students/2]))
	e.must(e.platform.CreateClass(ctx, analytics.Class{GroupID: id, ID: "lms-0a1b", Name: "Art (from Canvas)"}))
	e.must(e.platform.SetClassMembers(ctx, id, "lms-0a1b", ids[students/2:]))
	kinds := []string{"session", "tutor_me", "test", "flashcard", "material", "live_lecture", "main"}
	var batch []json.RawMessage
	for range 40 * students {
		at := now.Add(-time.Duration(rng.IntN(30*24*60)) * time.Minute)
		ev := platform.EventInput{ID: fmt.Sprintf("ev-%d", e.events), GroupID: id, StudentID: ids[rng.IntN(len(ids))],
			OccurredAt: at.Format(time.RFC3339), Kind: analytics.KindMessageSent, ChatType: kinds[rng.IntN(len(kinds))]}
		if ev.ChatType == "session" {
			ev.Kind, ev.ChatType = analytics.KindSessionCreated, ""
		}
		e.events++
		b, _ := json.Marshal(ev)
		batch = append(batch, b)
	}
	res, err := e.platform.Ingest(ctx, batch, false)
	if err != nil || len(res.Rejected) > 0 {
		e.t.Fatalf("ingest: %v %+v", err, res.Rejected)
	}
}

// metro makes the district metro of two schools, north (New York, 12
// students) and south (Auckland, 9, minCellSize 5), with a month of use
// drawn from seed, and returns a key of each school.
func (e *env) metro(seed uint64) map[string]string {
	e.t.Helper()
	rng := rand.New(rand.NewPCG(seed, 79))
	e.school("north", "America/New_York", 12, 0, rng)
	e.school("south", "Pacific/Auckland", 9, 5, rng)
	e.must(e.platform.CreateDistrict(ctx, "metro", "Metro", "America/New_York"))
	keys := map[string]string{}
	for _, id := range []string{"north", "south"} {
		e.must(nil, e.platform.AttachSchool(ctx, "metro", id))
		_, key, err := e.platform.CreateKey(ctx, id, "check")
		e.must(nil, err)
		keys[id] = key
	}
	return keys
}

// get asks the server with key, and returns the status and body.
func (e *env) get(path, key string) (int, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.server.URL+path, nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, body
}

// dailyReports are an endpoint's daily group reports of a school (with
// its key) over the days, from the report API.
func (e *env) dailyReports(endpoint, key, start, end string) []map[string]any {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.server.URL+"/api/groups/"+endpoint,
		strings.NewReader(fmt.Sprintf(`{"startDate":%q,"endDate":%q,"interval":"day"}`, start, end)))
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Reports []map[string]any `json:"reports"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		e.t.Fatalf("report %s: %d %v", endpoint, resp.StatusCode, err)
	}
	return out.Reports
}

// unzip writes the archive's files under a new directory and returns it.
func unzip(t *testing.T, body []byte) string {
	t.Helper()
	dir := t.TempDir()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// duckDB is an independent reader of the files.
func duckDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reader reads a table of the files under dir as DuckDB loads a
// warehouse's: Parquet, or CSV with its header, with the Hive partitions.
func reader(dir, format, table string) string {
	glob := filepath.Join(dir, "v1", "table="+table, "*", "*", "*."+format)
	if format == analytics.FormatCSV {
		return fmt.Sprintf("read_csv('%s', header = true, hive_partitioning = true)", glob)
	}
	return fmt.Sprintf("read_parquet('%s', hive_partitioning = true)", glob)
}

// TestFilesAddUpToTheReports pulls a district's files of a month, in
// both formats, and reads them with DuckDB: the schema is as documented,
// and each school's day adds up to its group reports of that day, its
// students who used each endpoint to numStudentsUsed, small cells
// notwithstanding.
func TestFilesAddUpToTheReports(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s storetest.Stores) {
		e := newEnv(t, s)
		keys := e.metro(7)
		_, districtKey, err := e.platform.CreateDistrictKey(ctx, "metro", "data team")
		e.must(nil, err)
		const start, end = "2026-10-25", "2026-11-20"
		for _, format := range []string{analytics.FormatParquet, analytics.FormatCSV} {
			status, body := e.get("/api/warehouse-files?startDate="+start+"&endDate="+end+"&format="+format, districtKey)
			if status != 200 {
				t.Fatalf("%s: %d %s", format, status, body)
			}
			dir := unzip(t, body)
			db := duckDB(t)
			checkManifest(t, dir, format, start, end)
			checkColumns(t, db, dir, format)
			for school, key := range keys {
				checkTotals(t, e, db, dir, format, school, key, start, end)
			}
		}
	})
}

// checkManifest finds the run's one manifest, naming every file with its
// rows and checksum.
func checkManifest(t *testing.T, dir, format, start, end string) {
	t.Helper()
	manifests, _ := filepath.Glob(filepath.Join(dir, "v1", "manifests", "*.json"))
	if len(manifests) != 1 {
		t.Fatalf("manifests: %v", manifests)
	}
	b, _ := os.ReadFile(manifests[0])
	var m warehouse.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	days := 27
	if m.SchemaVersion != 1 || m.Format != format || m.StartDate != start || m.EndDate != end || len(m.Files) != 2*days*3 {
		t.Fatalf("manifest: version %d, %s, %s to %s, %d files", m.SchemaVersion, m.Format, m.StartDate, m.EndDate, len(m.Files))
	}
	for _, f := range m.Files {
		body, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil || len(body) != f.Bytes {
			t.Fatalf("%s: %v, %d bytes, manifest %d", f.Path, err, len(body), f.Bytes)
		}
		if want := warehouse.Path(f.Table, mustDay(t, f.Date), f.School, format); f.Path != want {
			t.Fatalf("path %s, want %s", f.Path, want)
		}
	}
}

func mustDay(t *testing.T, s string) analytics.Day {
	t.Helper()
	d, err := analytics.ParseDate("date", s)
	if err != nil {
		t.Fatal(err)
	}
	return d.Day(time.UTC)
}

// checkColumns reads each table's columns and types as DuckDB sees them.
func checkColumns(t *testing.T, db *sql.DB, dir, format string) {
	t.Helper()
	metrics := []string{"sessions_made BIGINT", "chat_messages BIGINT", "total_messages BIGINT", "tutor_me_messages BIGINT",
		"test_messages BIGINT", "flashcard_messages BIGINT", "material_messages BIGINT", "live_lecture_messages BIGINT", "main_chat_messages BIGINT"}
	want := map[string][]string{
		warehouse.StudentDays: slices.Concat([]string{"date DATE", "school_id VARCHAR", "school_name VARCHAR", "student_id VARCHAR", "student_sourced_id VARCHAR"},
			metrics, []string{"used_live_lecture BOOLEAN", "used_chat BOOLEAN", "school VARCHAR", "table VARCHAR"}),
		warehouse.ClassMembers: {"date DATE", "school_id VARCHAR", "class_id VARCHAR", "class_sourced_id VARCHAR", "class_name VARCHAR", "student_id VARCHAR",
			"school VARCHAR", "table VARCHAR"},
		warehouse.SchoolDays: slices.Concat([]string{"date DATE", "school_id VARCHAR", "school_name VARCHAR"}, metrics,
			[]string{"live_lecture_students_used BIGINT", "chat_students_used BIGINT", "students_enrolled BIGINT", "seats BIGINT", "school VARCHAR", "table VARCHAR"}),
	}
	for _, table := range warehouse.Tables {
		rows, err := db.Query("DESCRIBE SELECT * FROM " + reader(dir, format, table))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			vals := make([]any, 6)
			ptrs := make([]any, 6)
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s %s", vals[0], vals[1]))
		}
		rows.Close()
		// The partitions' date column folds into the file's own; school
		// and table follow the file's.
		if !slices.Equal(got, want[table]) {
			t.Errorf("%s %s columns:\n got %v\nwant %v", format, table, got, want[table])
		}
	}
}

// checkTotals compares a school's files with its daily group reports.
func checkTotals(t *testing.T, e *env, db *sql.DB, dir, format, school, key, start, end string) {
	t.Helper()
	for _, ep := range []struct {
		name, used string
		columns    []string
	}{
		{"live-lecture", "used_live_lecture", []string{"sessions_made", "chat_messages"}},
		{"chat", "used_chat", []string{"total_messages", "tutor_me_messages", "test_messages", "flashcard_messages",
			"material_messages", "live_lecture_messages", "main_chat_messages"}},
	} {
		reports := e.dailyReports(ep.name, key, start, end)
		q := fmt.Sprintf(`SELECT strftime(date, '%%Y-%%m-%%d'), %s, count(DISTINCT student_id) FILTER (WHERE %s), count(*)
			FROM %s WHERE school_id = ? AND date BETWEEN CAST(? AS DATE) AND CAST(? AS DATE) GROUP BY date`, sumsOf(ep.columns), ep.used,
			reader(dir, format, warehouse.StudentDays))
		byDay := figuresByDay(t, db, len(ep.columns)+2, q, school, start, end)
		schoolRows := figuresByDay(t, db, len(ep.columns)+3, fmt.Sprintf(`SELECT strftime(date, '%%Y-%%m-%%d'), %s, %s_students_used,
			students_enrolled, seats FROM %s WHERE school_id = ? AND date BETWEEN CAST(? AS DATE) AND CAST(? AS DATE)`,
			strings.Join(ep.columns, ", "), strings.TrimPrefix(ep.used, "used_"), reader(dir, format, warehouse.SchoolDays)), school, start, end)
		if len(reports) != 27 || len(schoolRows) != 27 {
			t.Fatalf("%s %s: %d reports, %d school days", school, ep.name, len(reports), len(schoolRows))
		}
		// Enrolled as the file was written: a day written before an
		// erasure counts the student erased.
		enrolled, err := e.platform.Directory.Students(ctx, school)
		if err != nil {
			t.Fatal(err)
		}
		used := 0
		for _, r := range reports {
			startsAt, err := time.Parse(time.RFC3339, r["startDate"].(string))
			if err != nil {
				t.Fatal(err)
			}
			day := startsAt.In(zones[school]).Format(time.DateOnly)
			var want []int64
			for _, m := range r["data"].([]any) {
				want = append(want, figure(m.(map[string]any)["value"]))
			}
			want = append(want, figure(r["numStudentsUsed"]))
			got := byDay[day]
			if got == nil {
				got = make([]int64, len(want)+1)
			}
			if !slices.Equal(got[:len(want)], want) && !hidden(want) {
				t.Errorf("%s %s %s %s: students' rows add up to %v, report %v", format, school, ep.name, day, got[:len(want)], want)
			}
			if sr := schoolRows[day]; !slices.Equal(sr[:len(want)], got[:len(want)]) || sr[len(want)] < int64(len(enrolled)) || sr[len(want)+1] != 40 {
				t.Errorf("%s %s %s %s: school's row %v, students' %v", format, school, ep.name, day, sr, got)
			}
			if got[len(want)-1] > 0 {
				used++
			}
		}
		if used < 10 {
			t.Errorf("%s %s %s: only %d days of use", format, school, ep.name, used)
		}
	}
}

// figuresByDay runs a query whose rows are a day and n figures, and
// returns the figures by day.
func figuresByDay(t *testing.T, db *sql.DB, n int, query string, args ...any) map[string][]int64 {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]int64{}
	for rows.Next() {
		var day string
		figures := make([]int64, n)
		dest := []any{&day}
		for i := range figures {
			dest = append(dest, &figures[i])
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		out[day] = figures
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// figure is a report's figure: -1 for one a small cell hides (null).
func figure(v any) int64 {
	if f, ok := v.(float64); ok {
		return int64(f)
	}
	return -1
}

// zones are the schools' time zones.
var zones = map[string]*time.Location{"north": mustZone("America/New_York"), "south": mustZone("Pacific/Auckland")}

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// hidden tells whether a report hides a small cell (-1): the school with
// a minCellSize, whose files hold its own figures whole.
func hidden(values []int64) bool { return slices.Contains(values, -1) }

func sumsOf(columns []string) string {
	var out []string
	for _, c := range columns {
		out = append(out, fmt.Sprintf("CAST(sum(%s) AS BIGINT)", c))
	}
	return strings.Join(out, ", ")
}

// doc is docs/warehouse.md.
func doc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "warehouse.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSchemaAsDocumented reads each table's columns from docs/warehouse.md
// (a row "`a` … `b`" stands for the columns from a to b) and compares them
// with the files' own, in order.
func TestSchemaAsDocumented(t *testing.T) {
	page := doc(t)
	schema := page[strings.Index(page, "### Schema, version 1"):strings.Index(page, "### The manifest")]
	for table, columns := range map[string][]string{
		warehouse.StudentDays:  warehouse.Columns[warehouse.StudentDay](),
		warehouse.ClassMembers: warehouse.Columns[warehouse.ClassMember](),
		warehouse.SchoolDays:   warehouse.Columns[warehouse.SchoolDay](),
	} {
		at := strings.Index(schema, "`"+table+"`:")
		if at < 0 {
			t.Fatalf("no table %s in the schema", table)
		}
		var documented []string
		inTable := false
		for line := range strings.Lines(schema[at:]) {
			switch {
			case strings.HasPrefix(line, "| column"):
				inTable = true
			case inTable && strings.HasPrefix(line, "|---"):
			case inTable && strings.HasPrefix(line, "| `"):
				names := regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(strings.Split(line, "|")[1], -1)
				if len(names) == 2 { // a range: the columns from the first to the second
					from, to := slices.Index(columns, names[0][1]), slices.Index(columns, names[1][1])
					if from < 0 || to < from {
						t.Fatalf("%s: no columns %s to %s", table, names[0][1], names[1][1])
					}
					documented = append(documented, columns[from:to+1]...)
				} else {
					documented = append(documented, names[0][1])
				}
			case inTable:
				inTable = false
			}
			if !inTable && len(documented) > 0 {
				break
			}
		}
		if !slices.Equal(documented, columns) {
			t.Errorf("%s: documented %v, the files have %v", table, documented, columns)
		}
	}
	// The metric columns are the endpoints' titles, snake_cased, in order.
	var titles []string
	for _, ep := range []*report.Endpoint{report.LiveLecture, report.Chat} {
		for _, title := range ep.Titles {
			titles = append(titles, warehouse.SnakeCase(title))
		}
	}
	if got := warehouse.Columns[warehouse.StudentDay]()[5 : 5+len(titles)]; !slices.Equal(got, titles) {
		t.Errorf("metric columns %v, the titles snake_cased %v", got, titles)
	}
}

// TestLoadAsDocumented runs the DuckDB statement of docs/warehouse.md on
// files pulled from a server, the bucket's address put for their folder.
func TestLoadAsDocumented(t *testing.T) {
	page := doc(t)
	m := regexp.MustCompile("(?s)```sql\n(.*?)```").FindStringSubmatch(page[strings.Index(page, "## Loading the files"):])
	if m == nil {
		t.Fatal("no DuckDB statement under Loading the files")
	}
	s := storetest.SQL(storetest.Open(t, "sqlite"))
	e := newEnv(t, s)
	e.school("north", "America/New_York", 6, 0, rand.New(rand.NewPCG(1, 2)))
	_, key, err := e.platform.CreateKey(ctx, "north", "load")
	e.must(nil, err)
	status, body := e.get("/api/warehouse-files?startDate=2026-11-01&endDate=2026-11-20", key)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	dir := unzip(t, body)
	statement := strings.ReplaceAll(m[1], "s3://lakeland-data/groupanalytics/", filepath.ToSlash(dir)+"/")
	db := duckDB(t)
	if _, err := db.Exec(statement); err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
	var rows, days int
	e.must(nil, db.QueryRow(`SELECT count(*), count(DISTINCT date) FROM student_days WHERE school = 'north'`).Scan(&rows, &days))
	if rows < 20 || days < 15 {
		t.Errorf("loaded %d rows of %d days", rows, days)
	}
}
