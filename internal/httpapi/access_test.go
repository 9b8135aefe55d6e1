package httpapi_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
)

// accessLog reads a page of an access log (with a key, or through the
// admin API with a token) and fails the test unless it gets a 200.
func (e *testEnv) accessLog(path, key, token string) (entries []map[string]any, next any) {
	e.t.Helper()
	resp := e.do("GET", path, key, "", "Authorization", "Bearer "+token)
	if token == "" {
		resp = e.do("GET", path, key, "")
	}
	if resp.status != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, resp.status, resp.body)
	}
	var page struct {
		Entries []map[string]any `json:"entries"`
		Next    any              `json:"next"`
	}
	dec := json.NewDecoder(bytes.NewReader(resp.body))
	dec.UseNumber()
	if err := dec.Decode(&page); err != nil {
		e.t.Fatal(err)
	}
	return page.Entries, page.Next
}

// TestAccessLog: each student-level answer leaves one entry, with who
// asked, from where and about whom; group reports and refused requests
// leave none. A school reads its own log only (JSON, CSV, paged, by
// student and time), the platform any group's; a teacher's key reads
// none; an erased student's entries keep the access, not the student; the
// log cannot be written from outside.
func TestAccessLog(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		north, south := e.school("north", "Europe/Berlin"), e.school("south", "UTC")
		token := e.token()
		e.enrol("north", "s1", "Ada")
		e.enrol("north", "s2", "Grace")
		e.enrol("south", "t1", "Tim")
		e.send(message("north", "s1", "main", "2026-01-05T10:00:00Z"), message("south", "t1", "main", "2026-01-05T10:00:00Z"))
		if _, err := e.platform.CreateClass(ctx, analytics.Class{GroupID: "north", ID: "c1", Name: "c1", Members: []string{"s1"}}); err != nil {
			t.Fatal(err)
		}
		_, teacher, err := e.platform.CreateKey(ctx, "north", "teacher", "c1")
		if err != nil {
			t.Fatal(err)
		}

		e.reports("chat", north, "startDate=2026-01-01&endDate=2026-01-31")                                          // aggregate: no entry
		e.reportRequest("chat", north, "startDate=2026-01-01&endDate=2026-01-31&students=true&studentId=nobody", "") // 400: no entry
		e.reports("chat", north, "startDate=2026-01-01&endDate=2026-01-31&students=true&interval=week")
		if resp := e.reportRequest("live-lecture", north, "startDate=2026-01-01&endDate=2026-01-02&students=true&studentId=s1&format=csv", ""); resp.status != http.StatusOK {
			t.Fatalf("student CSV: %d %s", resp.status, resp.body)
		}
		e.reports("chat", teacher, "startDate=2026-01-01&endDate=2026-01-31&students=true")
		e.reports("chat", south, "startDate=2026-01-01&endDate=2026-01-31&students=true")

		entries, next := e.accessLog("/api/access-log", north, "")
		if len(entries) != 3 || next != nil {
			t.Fatalf("north's log: %d entries, next %v, want 3 and null: %v", len(entries), next, entries)
		}
		teacherEntry, csvEntry, weekly := entries[0], entries[1], entries[2]
		for name, c := range map[string]struct {
			entry map[string]any
			want  map[string]any
		}{
			"weekly": {weekly, map[string]any{"endpoint": "/api/groups/chat", "format": "json", "interval": "week",
				"startDate": "2026-01-01", "endDate": "2026-01-31", "allStudents": true, "client": "127.0.0.1"}},
			"csv": {csvEntry, map[string]any{"endpoint": "/api/groups/live-lecture", "format": "csv", "interval": "none",
				"startDate": "2026-01-01", "endDate": "2026-01-02", "allStudents": false}},
			"teacher": {teacherEntry, map[string]any{"allStudents": true}},
		} {
			for field, want := range c.want {
				if c.entry[field] != want {
					t.Errorf("%s entry: %s %v, want %v", name, field, c.entry[field], want)
				}
			}
		}
		if key := weekly["key"].(map[string]any); key["label"] != "test" || !strings.HasPrefix(north, key["prefix"].(string)) || key["id"] == "" {
			t.Errorf("weekly entry's key %v, want north's key by id, prefix and label", key)
		}
		if got := csvEntry["studentIds"].([]any); len(got) != 1 || got[0] != "s1" {
			t.Errorf("CSV entry's students %v, want s1", got)
		}
		if got := teacherEntry["classIds"].([]any); len(got) != 1 || got[0] != "c1" {
			t.Errorf("teacher's entry's classes %v, want c1", got)
		}

		// By student: those naming s2, and those of all students.
		if entries, _ := e.accessLog("/api/access-log?studentId=s2", north, ""); len(entries) != 2 {
			t.Errorf("entries about s2: %d, want 2 (the weekly and the teacher's, of all students)", len(entries))
		}
		if entries, _ := e.accessLog("/api/access-log?since=2099-01-01", north, ""); len(entries) != 0 {
			t.Errorf("entries since 2099: %d, want none", len(entries))
		}
		// Paged.
		page, next := e.accessLog("/api/access-log?limit=2", north, "")
		if len(page) != 2 || next == nil {
			t.Fatalf("first page of 2: %d entries, next %v", len(page), next)
		}
		rest, next := e.accessLog("/api/access-log?limit=2&before="+string(next.(json.Number)), north, "")
		if len(rest) != 1 || next != nil || rest[0]["id"] != weekly["id"] {
			t.Errorf("second page: %v, next %v, want the weekly entry alone", rest, next)
		}
		// CSV: a header and a row an entry.
		resp := e.do("GET", "/api/access-log?format=csv", north, "")
		if lines := strings.Split(strings.TrimSpace(string(resp.body)), "\r\n"); resp.status != http.StatusOK || len(lines) != 4 ||
			!strings.HasPrefix(lines[0], "id,at,keyId") {
			t.Errorf("CSV log: %d %q", resp.status, resp.body)
		}

		// Isolation: south sees its own entry only, whatever it asks.
		for _, q := range []string{"", "?studentId=s1", "?studentId=s2&limit=1000"} {
			entries, _ := e.accessLog("/api/access-log"+q, south, "")
			for _, entry := range entries {
				if ids := entry["studentIds"].([]any); len(ids) > 0 || entry["key"].(map[string]any)["label"] != "test" {
					t.Errorf("south's log%s: %v", q, entry)
				}
			}
			if len(entries) != 1 {
				t.Errorf("south's log%s: %d entries, want its own 1", q, len(entries))
			}
		}
		if resp := e.do("GET", "/api/access-log", teacher, ""); resp.status != http.StatusForbidden {
			t.Errorf("a teacher's key: %d, want 403", resp.status)
		}
		if resp := e.do("POST", "/api/access-log", north, `{"entries":[]}`); resp.status != http.StatusMethodNotAllowed {
			t.Errorf("POST to the log: %d, want 405", resp.status)
		}
		for _, q := range []string{"?limit=0", "?limit=1001", "?before=x", "?since=yesterday", "?group=south"} {
			if resp := e.do("GET", "/api/access-log"+q, north, ""); resp.status != http.StatusBadRequest {
				t.Errorf("GET /api/access-log%s: %d, want 400", q, resp.status)
			}
		}

		// The platform reads any group's; an unknown group is a 404.
		if entries, _ := e.accessLog("/v1/admin/groups/north/access-log", "", token); len(entries) != 3 {
			t.Errorf("north's log through the admin API: %d entries, want 3", len(entries))
		}
		if resp := e.call("GET", "/v1/admin/groups/nowhere/access-log", token, ""); resp.status != http.StatusNotFound {
			t.Errorf("an unknown group's log: %d, want 404", resp.status)
		}

		// Past its retention an entry goes, and the students it named
		// with it; a newer one stays.
		e.advance(72 * time.Hour)
		e.reports("chat", north, "startDate=2026-01-01&endDate=2026-01-31&students=true")
		if n, err := e.platform.PruneAccessLog(ctx, e.clock.Now(), 2); err != nil || n != 4 {
			t.Errorf("pruning entries older than 2 days: %d %v, want the 4 of three days ago", n, err)
		}
		if entries, _ := e.accessLog("/api/access-log", north, ""); len(entries) != 1 || entries[0]["allStudents"] != true {
			t.Errorf("north's log after pruning: %v, want the newest entry alone", entries)
		}

		// Erased, s1 leaves the entry that named them, without their id.
		e.reports("chat", north, "startDate=2026-01-01&endDate=2026-01-31&students=true&studentId=s1&studentId=s2")
		e.mustCall("DELETE", "/v1/admin/groups/north/students/s1", token, "", http.StatusNoContent)
		entries, _ = e.accessLog("/api/access-log", north, "")
		if ids := entries[0]["studentIds"].([]any); len(entries) != 2 || len(ids) != 1 || ids[0] != "s2" || entries[0]["erasedStudents"] != json.Number("1") {
			t.Errorf("after s1's erasure: %v, want the entry naming s2 alone, erasedStudents 1", entries)
		}
		if entries, _ := e.accessLog("/api/access-log?studentId=s1", north, ""); len(entries) != 1 || entries[0]["allStudents"] != true {
			t.Errorf("entries about s1 once erased: %v, want only the entry of all students", entries)
		}
	})
}

// TestUnrecordedAnswerRefused: when the access log cannot take an entry
// (SQLite's journal cannot be written, PostgreSQL refuses the insert), a
// student report is a 503 that sends no figure, while group reports go
// on; the log line names no SQL.
func TestUnrecordedAnswerRefused(t *testing.T) {
	for _, c := range []struct {
		dialect string
		refuse  func(t *testing.T, dsn string)
	}{
		{"sqlite", func(t *testing.T, dsn string) {
			if err := os.Mkdir(dsn+"-access", 0o700); err != nil { // a directory where the journal goes
				t.Fatal(err)
			}
		}},
		{"postgres", func(t *testing.T, dsn string) {
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$;
				CREATE TRIGGER refuse BEFORE INSERT ON access_pending FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.dialect, func(t *testing.T) {
			dsn := storetest.NewDSN(t, c.dialect)
			e := newEnv(t, storetest.SQL(storetest.OpenDSN(t, dsn)))
			key := e.school("north", "UTC")
			e.enrol("north", "s1", "Ada")
			e.send(message("north", "s1", "main", "2026-01-05T10:00:00Z"))
			c.refuse(t, dsn)
			resp := e.reportRequest("chat", key, "startDate=2026-01-01&endDate=2026-01-31&students=true", "")
			if resp.status != http.StatusServiceUnavailable || resp.errorMessage(t) != "Service unavailable" || strings.Contains(string(resp.body), "Ada") {
				t.Errorf("student report without its entry: %d %s, want a 503 without figures", resp.status, resp.body)
			}
			if got := e.reports("chat", key, "startDate=2026-01-01&endDate=2026-01-31"); len(got) != 1 || got[0].value("Total Messages") != 1 {
				t.Errorf("group report: %+v, want 1 message", got)
			}
			if logs := e.logs.String(); strings.Contains(logs, "INSERT") || !strings.Contains(logs, "recording the access") {
				t.Errorf("log lines: %s", logs)
			}
		})
	}
}
