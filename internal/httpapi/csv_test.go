package httpapi_test

import (
	"encoding/csv"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"groupanalytics/internal/stores/storetest"
)

// csvSchool is a group whose students' names need quoting in CSV (names
// cannot hold line breaks: control characters are refused), with some
// usage in January 2025.
func csvSchool(t *testing.T) (*testEnv, string) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	key := e.school("north", "UTC")
	e.enrol("north", "s1", `Lovelace, Ada`)
	e.enrol("north", "s2", `Grace "Amazing" Hopper`)
	e.enrol("north", "s3", "Zoë, 'Z' Ng")
	e.enrol("north", "s4", "=1+1")
	e.send(session("north", "s1", "2025-01-02T10:00:00Z"), message("north", "s2", "tutor_me", "2025-01-03T10:00:00Z"),
		message("north", "s2", "live_lecture", "2025-01-20T10:00:00Z"), message("north", "s3", "main", "2025-02-01T10:00:00Z"))
	return e, key
}

// csvRows parses a CSV answer, checking its headers and RFC 4180 line ends.
func csvRows(t *testing.T, resp response) [][]string {
	t.Helper()
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if ct := resp.header.Get("Content-Type"); ct != "text/csv; charset=utf-8; header=present" {
		t.Errorf("Content-Type %q", ct)
	}
	if !strings.HasSuffix(string(resp.body), "\r\n") || strings.Count(string(resp.body), "\n") != strings.Count(string(resp.body), "\r\n") {
		t.Errorf("rows do not end with CRLF: %q", resp.body)
	}
	rows, err := csv.NewReader(strings.NewReader(string(resp.body))).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, resp.body)
	}
	return rows
}

// TestCSV_SameAsJSON: the CSV answer of each endpoint, for the group and
// per student, is the JSON answer's reports as rows, columns in the
// documented order, names quoted where they must be.
func TestCSV_SameAsJSON(t *testing.T) {
	e, key := csvSchool(t)
	for _, endpoint := range []string{"live-lecture", "chat"} {
		for _, query := range []string{"startDate=2025-01-01&endDate=2025-02-28&interval=month",
			"startDate=2025-01-01&endDate=2025-02-28&interval=month&students=true"} {
			reps := e.reports(endpoint, key, query)
			rows := csvRows(t, e.reportRequest(endpoint, key, query+"&format=csv", ""))
			header := []string{"startDate", "endDate", "numStudentsUsed"}
			if strings.Contains(query, "students=true") {
				header = []string{"startDate", "endDate", "studentId", "studentName"}
			}
			header = append(header, titles(reps[0])...)
			want := [][]string{header}
			for _, r := range reps {
				row := []string{r.StartDate, r.EndDate}
				if r.StudentID != nil {
					row = append(row, *r.StudentID, *r.StudentName)
				} else {
					row = append(row, strconv.Itoa(*r.NumStudentsUsed))
				}
				for _, m := range r.Data {
					row = append(row, strconv.FormatInt(m.Value, 10))
				}
				want = append(want, row)
			}
			if !reflect.DeepEqual(rows, want) {
				t.Errorf("%s?%s: CSV\n%q\nwant\n%q", endpoint, query, rows, want)
			}
		}
	}
	resp := e.reportRequest("chat", key, "startDate=2025-01-01&endDate=2025-01-31&students=true&format=csv", "")
	if !strings.Contains(string(resp.body), `,s1,"Lovelace, Ada",`) {
		t.Errorf("a name with a comma is not quoted: %q", resp.body)
	}
	if !strings.Contains(string(resp.body), `"Grace ""Amazing"" Hopper"`) {
		t.Errorf("quotes in a name are not doubled: %q", resp.body)
	}
}

// TestCSV_FileName: the download is named after group, endpoint and range.
func TestCSV_FileName(t *testing.T) {
	e, key := csvSchool(t)
	for _, c := range []struct{ endpoint, query, want string }{
		{"chat", "startDate=2025-01-01&endDate=2025-01-31", "north-chat-2025-01-01-to-2025-01-31.csv"},
		{"live-lecture", "startDate=2025-01-05T12:00:00Z&endDate=2025-01-06&students=true", "north-live-lecture-students-2025-01-05-to-2025-01-06.csv"},
		{"chat", "endDate=2025-03-01", "north-chat-2025-01-01-to-2025-03-01.csv"},
	} {
		resp := e.reportRequest(c.endpoint, key, c.query+"&format=csv", "")
		if got, want := resp.header.Get("Content-Disposition"), `attachment; filename="`+c.want+`"`; got != want {
			t.Errorf("%s?%s: Content-Disposition %q, want %q", c.endpoint, c.query, got, want)
		}
	}
}

// TestCSV_Negotiation: the format parameter (query or body, any case)
// decides; without it, the Accept header; errors stay JSON.
func TestCSV_Negotiation(t *testing.T) {
	e, key := csvSchool(t)
	const period = "startDate=2025-01-01&endDate=2025-01-31"
	for _, c := range []struct {
		name, query, body, accept string
		csv                       bool
	}{
		{"no format", period, "", "", false},
		{"format=csv", period + "&format=csv", "", "", true},
		{"format=CSV", period + "&format=CSV", "", "", true},
		{"body format", period, `{"format": "csv"}`, "", true},
		{"query wins over body", period + "&format=json", `{"format": "csv"}`, "", false},
		{"Accept text/csv", period, "", "text/csv", true},
		{"Accept prefers JSON", period, "", "application/json;q=0.9, text/csv;q=0.5", false},
		{"Accept prefers CSV", period, "", "application/json;q=0.5, text/csv", true},
		{"Accept anything", period, "", "*/*", false},
		{"format beats Accept", period + "&format=json", "", "text/csv", false},
	} {
		resp := e.do("POST", "/api/groups/chat?"+c.query, key, c.body, "Accept", c.accept)
		if got := strings.HasPrefix(resp.header.Get("Content-Type"), "text/csv"); resp.status != http.StatusOK || got != c.csv {
			t.Errorf("%s: %d %q, want CSV %v", c.name, resp.status, resp.header.Get("Content-Type"), c.csv)
		}
	}
	resp := e.reportRequest("chat", key, period+"&format=xml", "")
	if resp.status != http.StatusBadRequest || resp.json(t)["error"] != `Invalid format: expected json or csv, got "xml"` {
		t.Errorf("format=xml: %d %s", resp.status, resp.body)
	}
	resp = e.do("POST", "/api/groups/chat?"+period+"&format=csv", "gak_wrong", "", "Accept", "text/csv")
	if resp.status != http.StatusForbidden || resp.header.Get("Content-Type") != "application/json" {
		t.Errorf("a wrong key asking for CSV: %d %q, want a JSON 403", resp.status, resp.header.Get("Content-Type"))
	}
	// Without reports, the header row alone.
	empty := e.school("empty", "UTC")
	rows := csvRows(t, e.reportRequest("chat", empty, period+"&students=true&format=csv", ""))
	if len(rows) != 1 || rows[0][2] != "studentId" {
		t.Errorf("no students: %q, want the header row of student reports alone", rows)
	}
}
