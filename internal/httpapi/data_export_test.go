package httpapi_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"groupanalytics/internal/analytics"
)

// TestStudentExport: the export of a student holds who they are, their
// classes, every event of theirs as the platform sent it (and none of
// another's), and the access log's entries about them; a student the
// group does not have, or no longer has, is a 404.
func TestStudentExport(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "Europe/Berlin")
		e.school("south", "UTC")
		token := e.token()
		e.enrol("north", "s1", "Ada")
		e.enrol("north", "s2", "Grace")
		e.enrol("south", "s1", "Other Ada")
		sent := `[{"id":"e1","groupId":"north","studentId":"s1","occurredAt":"2026-01-05T10:00:00.000Z","kind":"live_lecture.session_created"},` +
			`{"id":"e2","groupId":"north","studentId":"s1","occurredAt":"2026-01-06T11:30:00.250Z","kind":"chat.message_sent","chatType":"tutor_me"},` +
			`{"id":"e3","groupId":"north","studentId":"s2","occurredAt":"2026-01-06T12:00:00.000Z","kind":"chat.message_sent","chatType":"main"},` +
			`{"id":"e4","groupId":"south","studentId":"s1","occurredAt":"2026-01-06T12:00:00.000Z","kind":"chat.message_sent","chatType":"main"}]`
		e.mustCall("POST", "/v1/events", token, sent, http.StatusOK)
		if _, err := e.platform.CreateClass(ctx, analytics.Class{GroupID: "north", ID: "c1", Name: "Biology", Members: []string{"s1"}}); err != nil {
			t.Fatal(err)
		}
		e.reports("chat", key, "startDate=2026-01-01&endDate=2026-01-31&students=true&studentId=s1")
		e.reports("chat", key, "startDate=2026-01-01&endDate=2026-01-31&students=true&studentId=s2")
		e.reports("chat", key, "startDate=2026-01-01&endDate=2026-01-31&students=true")

		resp := e.call("GET", "/v1/admin/groups/north/students/s1/export", token, "")
		if resp.status != http.StatusOK || resp.header.Get("Content-Type") != "application/zip" {
			t.Fatalf("export: %d %s", resp.status, resp.header.Get("Content-Type"))
		}
		files := unzip(t, resp.body)
		var student map[string]any
		if err := json.Unmarshal(files["student.json"], &student); err != nil {
			t.Fatal(err)
		}
		if student["studentId"] != "s1" || student["name"] != "Ada" || student["events"] != 2.0 || student["accessLogEntries"] != 2.0 {
			t.Errorf("student.json: %v", student)
		}
		if classes := student["classes"].([]any); len(classes) != 1 || classes[0].(map[string]any)["name"] != "Biology" {
			t.Errorf("student.json's classes: %v, want Biology", classes)
		}
		// The events as sent, s1's only, oldest first.
		var want []string
		for _, ev := range strings.SplitAfter(strings.Trim(sent, "[]"), "},") {
			if strings.Contains(ev, `"groupId":"north","studentId":"s1"`) {
				want = append(want, strings.TrimSuffix(ev, ","))
			}
		}
		if got := strings.Split(strings.TrimSpace(string(files["events.jsonl"])), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("events.jsonl:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := string(files["events.csv"]); got != "id,occurredAt,kind,chatType\r\n"+
			"e1,2026-01-05T10:00:00.000Z,live_lecture.session_created,\r\ne2,2026-01-06T11:30:00.250Z,chat.message_sent,tutor_me\r\n" {
			t.Errorf("events.csv: %q", got)
		}
		// The entries naming s1, and of all students; not s2's.
		access := bufio.NewScanner(bytes.NewReader(files["access-log.jsonl"]))
		n := 0
		for ; access.Scan(); n++ {
			if strings.Contains(access.Text(), `"s2"`) {
				t.Errorf("an entry about s2 in s1's export: %s", access.Text())
			}
		}
		if lines := strings.Count(string(files["access-log.csv"]), "\r\n"); n != 2 || lines != 3 {
			t.Errorf("access log: %d JSON lines and %d CSV lines, want 2 and a header with 2", n, lines)
		}

		for _, path := range []string{"/v1/admin/groups/north/students/nobody/export", "/v1/admin/groups/nowhere/students/s1/export"} {
			if resp := e.call("GET", path, token, ""); resp.status != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", path, resp.status)
			}
		}
		e.mustCall("DELETE", "/v1/admin/groups/north/students/s1", token, "", http.StatusNoContent)
		if resp := e.call("GET", "/v1/admin/groups/north/students/s1/export", token, ""); resp.status != http.StatusNotFound {
			t.Errorf("export of an erased student: %d, want 404", resp.status)
		}
	})
}

// unzip returns the files of a zip by name.
func unzip(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		if files[f.Name], err = io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	return files
}
