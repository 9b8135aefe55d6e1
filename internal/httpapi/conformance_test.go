package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

var (
	liveLectureTitles = []string{"Sessions Made", "Chat Messages"}
	chatTitles        = []string{"Total Messages", "Tutor Me Messages", "Test Messages", "Flashcard Messages",
		"Material Messages", "Live Lecture Messages", "Main Chat Messages"}
)

// fieldOrder returns the field names of each report of a raw response, in
// the order they were sent.
func fieldOrder(t *testing.T, body []byte) [][]string {
	t.Helper()
	var env struct {
		Reports []json.RawMessage `json:"reports"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	var orders [][]string
	for _, raw := range env.Reports {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		var keys []string
		dec.Token() // {
		for dec.More() {
			tok, _ := dec.Token()
			keys = append(keys, tok.(string))
			var skip json.RawMessage
			dec.Decode(&skip)
		}
		orders = append(orders, keys)
	}
	return orders
}

func titles(r report) []string {
	var out []string
	for _, m := range r.Data {
		out = append(out, m.Title)
	}
	return out
}

// TestSpec2_1_ResponseEnvelope: success true, reports sorted by startDate; R8: 200 and JSON.
func TestSpec2_1_ResponseEnvelope(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		for _, endpoint := range []string{"live-lecture", "chat"} {
			resp := e.reportRequest(endpoint, key, "startDate=2025-01-01&endDate=2025-03-31&interval=month", "")
			if resp.status != http.StatusOK || resp.header.Get("Content-Type") != "application/json" {
				t.Fatalf("%s: status %d, Content-Type %q", endpoint, resp.status, resp.header.Get("Content-Type"))
			}
			v := resp.json(t)
			if v["success"] != true || len(v) != 2 {
				t.Errorf("%s: envelope %s", endpoint, resp.body)
			}
			reps := decodeReports(t, resp)
			if len(reps) != 3 || !slices.IsSortedFunc(reps, func(a, b report) int { return strings.Compare(a.StartDate, b.StartDate) }) {
				t.Errorf("%s: reports not sorted by startDate: %+v", endpoint, reps)
			}
		}
	})
}

// TestSpec2_2_GroupReportFields: startDate, endDate, numStudentsUsed, data; no student fields (rule 4).
func TestSpec2_2_GroupReportFields(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.send(session("north", "s1", "2025-01-02T10:00:00Z"))
		for _, endpoint := range []string{"live-lecture", "chat"} {
			resp := e.reportRequest(endpoint, key, "students=false", "")
			for _, order := range fieldOrder(t, resp.body) {
				if want := []string{"startDate", "endDate", "numStudentsUsed", "data"}; !reflect.DeepEqual(order, want) {
					t.Errorf("%s group report fields %v, want %v", endpoint, order, want)
				}
			}
		}
	})
}

// TestSpec2_3_StudentReportFields: startDate, endDate, studentName, studentId, data; no numStudentsUsed (rule 5).
func TestSpec2_3_StudentReportFields(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.enrol("north", "s1", "Ada")
		for _, endpoint := range []string{"live-lecture", "chat"} {
			resp := e.reportRequest(endpoint, key, "students=true", "")
			orders := fieldOrder(t, resp.body)
			if len(orders) != 1 {
				t.Fatalf("%s: %d reports, want 1", endpoint, len(orders))
			}
			if want := []string{"startDate", "endDate", "studentName", "studentId", "data"}; !reflect.DeepEqual(orders[0], want) {
				t.Errorf("%s student report fields %v, want %v", endpoint, orders[0], want)
			}
		}
	})
}

// TestSpec2_4_LiveLectureMetrics: titles in order; Sessions Made and Chat Messages counted as R6 says.
func TestSpec2_4_LiveLectureMetrics(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.send(
			session("north", "s1", "2025-01-02T10:00:00Z"),
			session("north", "s1", "2025-01-02T11:00:00Z"),
			message("north", "s2", "live_lecture", "2025-01-02T10:05:00Z"),
			message("north", "s3", "tutor_me", "2025-01-02T10:05:00Z"),
		)
		for _, students := range []string{"false", "true"} {
			for _, r := range e.reports("live-lecture", key, "students="+students) {
				if !reflect.DeepEqual(titles(r), liveLectureTitles) {
					t.Errorf("titles %v, want %v", titles(r), liveLectureTitles)
				}
			}
		}
		r := e.reports("live-lecture", key, "")[0]
		if r.value("Sessions Made") != 2 || r.value("Chat Messages") != 1 || *r.NumStudentsUsed != 2 {
			t.Errorf("got %+v, want 2 sessions, 1 chat message, 2 students (s3's tutor_me chat is not live lecture use)", r)
		}
	})
}

// TestSpec2_5_ChatMetrics: titles in order; one count per chatType; Total is their sum.
func TestSpec2_5_ChatMetrics(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		var events []platform.EventInput
		for i, ct := range []string{"tutor_me", "test", "flashcard", "material", "live_lecture", "main"} {
			for range i + 1 {
				events = append(events, message("north", "s1", ct, "2025-02-01T10:00:00Z"))
			}
		}
		events = append(events, session("north", "s2", "2025-02-01T10:00:00Z"))
		e.send(events...)
		for _, students := range []string{"false", "true"} {
			for _, r := range e.reports("chat", key, "students="+students) {
				if !reflect.DeepEqual(titles(r), chatTitles) {
					t.Errorf("titles %v, want %v", titles(r), chatTitles)
				}
			}
		}
		r := e.reports("chat", key, "")[0]
		want := []int64{21, 1, 2, 3, 4, 5, 6}
		for i, title := range chatTitles {
			if r.value(title) != want[i] {
				t.Errorf("%s = %d, want %d", title, r.value(title), want[i])
			}
		}
		if *r.NumStudentsUsed != 1 {
			t.Errorf("numStudentsUsed = %d, want 1: s2 made a session but sent no message", *r.NumStudentsUsed)
		}
	})
}

// TestSpec2_6_ValuesAreJSONIntegers: R6.
func TestSpec2_6_ValuesAreJSONIntegers(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.send(session("north", "s1", "2025-01-02T10:00:00Z"))
		body := string(e.reportRequest("live-lecture", key, "", "").body)
		numbers := regexp.MustCompile(`"(value|numStudentsUsed)":([^,}]*)`).FindAllStringSubmatch(body, -1)
		for _, n := range numbers {
			if !regexp.MustCompile(`^(0|[1-9][0-9]*)$`).MatchString(n[2]) {
				t.Errorf("%s is %q, not a plain integer", n[1], n[2])
			}
		}
		if len(numbers) != 3 || !strings.Contains(body, `"value":1}`) || !strings.Contains(body, `"numStudentsUsed":1,`) {
			t.Errorf("values are not plain integers: %s", body)
		}
	})
}

// TestSpec4_1_Defaults: startDate 2025-01-01, endDate today, students false.
func TestSpec4_1_Defaults(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.send(session("north", "s1", "2024-12-31T23:59:59.999Z"), session("north", "s1", "2025-01-01T00:00:00Z"),
			session("north", "s1", "2026-11-21T11:00:00Z"))
		reps := e.reports("live-lecture", key, "")
		if len(reps) != 1 || reps[0].StartDate != "2025-01-01T00:00:00.000Z" || reps[0].EndDate != "2026-11-21T23:59:59.999Z" {
			t.Fatalf("defaults: %+v", reps)
		}
		if reps[0].NumStudentsUsed == nil || reps[0].value("Sessions Made") != 2 {
			t.Errorf("default range counts %d sessions, want 2 (not the one of 2024)", reps[0].value("Sessions Made"))
		}
		// In a group east of UTC, "today" is already 2026-11-22 at 12:00 UTC in Kiritimati (+14).
		kkey := e.school("kiri", "Pacific/Kiritimati")
		reps = e.reports("chat", kkey, "")
		if reps[0].StartDate != "2024-12-31T10:00:00.000Z" || reps[0].EndDate != "2026-11-22T09:59:59.999Z" {
			t.Errorf("defaults in Kiritimati: %s to %s, want the whole local days 2025-01-01 to 2026-11-22", reps[0].StartDate, reps[0].EndDate)
		}
	})
}

// TestSpec4_3_Rule2_DocumentExample: 2025-01-01 to 2025-01-07 echoes 2025-01-07T23:59:59.999Z.
func TestSpec4_3_Rule2_DocumentExample(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.send(session("north", "s1", "2025-01-07T23:59:59.999Z"), session("north", "s1", "2025-01-08T00:00:00Z"),
			session("north", "s1", "2025-01-01T00:00:00Z"), session("north", "s1", "2024-12-31T23:59:59.999Z"))
		for _, query := range []string{"startDate=2025-01-01&endDate=2025-01-07", "startDate=2025-01-01T00:00:00.000Z&endDate=2025-01-07T00:00:00.000Z"} {
			reps := e.reports("live-lecture", key, query)
			if len(reps) != 1 || reps[0].StartDate != "2025-01-01T00:00:00.000Z" || reps[0].EndDate != "2025-01-07T23:59:59.999Z" {
				t.Fatalf("%s: %+v", query, reps)
			}
			if got := reps[0].value("Sessions Made"); got != 2 {
				t.Errorf("%s: %d sessions, want 2: both end days included whole, nothing outside", query, got)
			}
		}
		if got := e.reports("live-lecture", key, "startDate=2025-01-07&endDate=2025-01-07")[0].value("Sessions Made"); got != 1 {
			t.Errorf("a one-day range counts %d, want 1", got)
		}
	})
}

// TestSpec5_Authentication: every cause is one 403 {"error":"Unauthorized"}, checked before parameters.
func TestSpec5_Authentication(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		valid := e.school("north", "UTC")
		revokedKey, revoked, _ := e.platform.CreateKey(ctx, "north", "to revoke")
		if err := e.platform.RevokeKey(ctx, "north", revokedKey.ID); err != nil {
			t.Fatal(err)
		}
		e.platform.CreateGroup(ctx, "noplan", "", "UTC")
		noPlan := e.key("noplan")
		e.platform.CreateGroup(ctx, "expired", "", "UTC")
		e.platform.AddPlan(ctx, "expired", "2025-01-01", "2026-06-30", 0)
		expired := e.key("expired")
		e.platform.CreateGroup(ctx, "future", "", "UTC")
		e.platform.AddPlan(ctx, "future", "2027-01-01", "", 0)
		future := e.key("future")
		e.platform.CreateGroup(ctx, "cancelled", "", "UTC")
		plan, _ := e.platform.AddPlan(ctx, "cancelled", "2025-01-01", "", 0)
		e.platform.CancelPlan(ctx, "cancelled", plan.ID)
		cancelled := e.key("cancelled")

		causes := map[string]string{
			"missing header": "", "unknown key": "gak_NOTAKEYATALL", "revoked key": revoked, "no plan": noPlan,
			"expired plan": expired, "plan not started": future, "cancelled plan": cancelled,
			"key with a suffix": valid + " x", "key of other case": strings.ToLower(valid),
		}
		for cause, key := range causes {
			for _, query := range []string{"", "startDate=garbage&students=maybe", "startDate="} {
				for _, endpoint := range []string{"live-lecture", "chat"} {
					resp := e.reportRequest(endpoint, key, query, "{not json")
					if resp.status != http.StatusForbidden || resp.errorMessage(t) != "Unauthorized" {
						t.Errorf("%s, %s?%s: %d %s, want 403 Unauthorized", cause, endpoint, query, resp.status, resp.body)
					}
				}
			}
		}
		if resp := e.reportRequest("chat", valid, "", ""); resp.status != http.StatusOK {
			t.Errorf("valid key: %d", resp.status)
		}
	})
}

// TestR5_PlanCheckedOnEveryRequest: a key stops working the moment its plan ends.
func TestR5_PlanCheckedOnEveryRequest(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		e.platform.CreateGroup(ctx, "north", "", "UTC")
		e.platform.AddPlan(ctx, "north", "2025-01-01", "2026-11-21T12:00:05Z", 0)
		key := e.key("north")
		if resp := e.reportRequest("chat", key, "", ""); resp.status != http.StatusOK {
			t.Fatalf("before the end: %d", resp.status)
		}
		e.clock.Set(time.Date(2026, 11, 21, 12, 0, 5, 0, time.UTC))
		if resp := e.reportRequest("chat", key, "", ""); resp.status != http.StatusForbidden {
			t.Errorf("at the end: %d, want 403", resp.status)
		}
		// A second plan makes it work again, at once.
		e.platform.AddPlan(ctx, "north", "2026-11-21T12:00:05Z", "", 0)
		if resp := e.reportRequest("chat", key, "", ""); resp.status != http.StatusOK {
			t.Errorf("with a new plan: %d, want 200", resp.status)
		}
	})
}

// TestSpec7_MissingParams: R4, a parameter present with an empty value.
func TestSpec7_MissingParams(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		for _, tc := range []struct{ query, body string }{
			{"startDate=", ""}, {"endDate=", ""}, {"students=", ""}, {"interval=", ""}, {"startDate", ""},
			{"", `{"startDate": ""}`}, {"", `{"students": ""}`}, {"startDate=2025-01-01&endDate=", ""},
		} {
			resp := e.reportRequest("chat", key, tc.query, tc.body)
			if resp.status != http.StatusBadRequest || resp.errorMessage(t) != "Missing params" {
				t.Errorf("?%s %s: %d %s, want 400 Missing params", tc.query, tc.body, resp.status, resp.body)
			}
		}
	})
}

// TestR4_MalformedParams: a 400 naming the parameter and what was expected.
func TestR4_MalformedParams(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		tests := []struct{ query, body, want string }{
			{"startDate=next%20week", "", `Invalid startDate: expected an ISO 8601 date or timestamp, got "next week"`},
			{"endDate=2025-02-30", "", `Invalid endDate: expected an ISO 8601 date or timestamp, got "2025-02-30"`},
			{"students=yes", "", `Invalid students: expected true or false, got "yes"`},
			{"interval=year", "", `Invalid interval: expected day, week or month, got "year"`},
			{"startDate=2025-02-01&endDate=2025-01-31", "", `Invalid range: startDate 2025-02-01 is after endDate 2025-01-31`},
			{"students=true&students=false", "", `Invalid students: given 2 times in the query string`},
			{"startDate=%zz", "", `Invalid query string: bad percent-encoding "%zz"`},
			{"", `[1, 2]`, `Invalid body: expected a JSON object such as {"students": true}`},
			{"", `{"students": true`, `Invalid body: expected a JSON object such as {"students": true}`},
			{"", `"students=true"`, `Invalid body: expected a JSON object such as {"students": true}`},
			{"", `{"groupId": "south"}`, `Invalid body: unknown field "groupId"; expected startDate, endDate, students, interval, format, classId, studentId, schools or schoolId`},
			{"", `{"students": 1}`, `Invalid students: expected true or false, got 1`},
			{"", `{"startDate": 20250101}`, `Invalid startDate: expected a string, got 20250101`},
			{"", `{"interval": "fortnight"}`, `Invalid interval: expected day, week or month, got "fortnight"`},
		}
		for _, tt := range tests {
			resp := e.reportRequest("chat", key, tt.query, tt.body)
			if resp.status != http.StatusBadRequest {
				t.Errorf("?%s %s: status %d, want 400", tt.query, tt.body, resp.status)
				continue
			}
			if got := resp.errorMessage(t); got != tt.want {
				t.Errorf("?%s %s:\n got %s\nwant %s", tt.query, tt.body, got, tt.want)
			}
		}
	})
}

// TestR4_StatusesOtherThan400: 404, 405 with Allow, 413, all as JSON.
func TestR4_StatusesOtherThan400(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		resp := e.do("POST", "/api/groups/lecture", key, "")
		if resp.status != http.StatusNotFound || resp.errorMessage(t) != "Not found" {
			t.Errorf("unknown path: %d %s", resp.status, resp.body)
		}
		for _, method := range []string{"GET", "PUT", "DELETE", "PATCH"} {
			resp := e.do(method, "/api/groups/chat", key, "")
			if resp.status != http.StatusMethodNotAllowed || resp.header.Get("Allow") != "POST" || resp.errorMessage(t) != "Method not allowed" {
				t.Errorf("%s: %d Allow %q %s", method, resp.status, resp.header.Get("Allow"), resp.body)
			}
		}
		big := `{"startDate": "` + strings.Repeat("x", 70<<10) + `"}`
		resp = e.reportRequest("chat", key, "", big)
		if resp.status != http.StatusRequestEntityTooLarge || !strings.HasPrefix(resp.errorMessage(t), "Request body too large") {
			t.Errorf("large body: %d %s", resp.status, resp.body)
		}
	})
}

// TestR1_IntervalsCutCalendarPeriods: days, ISO weeks and months, the ends clipped, in the group's zone.
func TestR1_IntervalsCutCalendarPeriods(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.send(session("north", "s1", "2025-01-29T10:00:00Z"), session("north", "s1", "2025-02-03T00:00:00Z"),
			session("north", "s1", "2025-03-04T23:59:59.999Z"), session("north", "s2", "2025-03-05T00:00:00Z"))
		bounds := func(reps []report) []string {
			var out []string
			for _, r := range reps {
				out = append(out, fmt.Sprintf("%s %s %d", r.StartDate[:10], r.EndDate, r.value("Sessions Made")))
			}
			return out
		}
		range_ := "startDate=2025-01-29&endDate=2025-03-04"
		week := bounds(e.reports("live-lecture", key, range_+"&interval=week"))
		wantWeek := []string{
			"2025-01-29 2025-02-02T23:59:59.999Z 1", "2025-02-03 2025-02-09T23:59:59.999Z 1",
			"2025-02-10 2025-02-16T23:59:59.999Z 0", "2025-02-17 2025-02-23T23:59:59.999Z 0",
			"2025-02-24 2025-03-02T23:59:59.999Z 0", "2025-03-03 2025-03-04T23:59:59.999Z 1",
		}
		if !reflect.DeepEqual(week, wantWeek) {
			t.Errorf("weeks:\n%s\nwant\n%s", strings.Join(week, "\n"), strings.Join(wantWeek, "\n"))
		}
		month := bounds(e.reports("live-lecture", key, range_+"&interval=month"))
		wantMonth := []string{"2025-01-29 2025-01-31T23:59:59.999Z 1", "2025-02-01 2025-02-28T23:59:59.999Z 1", "2025-03-01 2025-03-04T23:59:59.999Z 1"}
		if !reflect.DeepEqual(month, wantMonth) {
			t.Errorf("months: %v, want %v", month, wantMonth)
		}
		days := e.reports("live-lecture", key, range_+"&interval=day")
		if len(days) != 35 || days[5].StartDate != "2025-02-03T00:00:00.000Z" || days[5].value("Sessions Made") != 1 {
			t.Errorf("days: %d reports, the sixth %+v", len(days), days[5])
		}
		students := e.reports("live-lecture", key, range_+"&interval=month&students=true")
		if len(students) != 6 {
			t.Errorf("3 months x 2 students: %d reports", len(students))
		}
	})
}

// TestR1_SortOrder: startDate, then studentName, then studentId, in byte order.
func TestR1_SortOrder(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		for _, s := range [][2]string{{"s9", "Zoë"}, {"s2", "Zoe"}, {"s3", "bob"}, {"s1", "Zoe"}, {"s10", "Ángel"}, {"s4", "Bob"}} {
			e.enrol("north", s[0], s[1])
		}
		reps := e.reports("chat", key, "startDate=2025-01-01&endDate=2025-01-14&students=true&interval=week")
		var got []string
		for _, r := range reps {
			got = append(got, r.StartDate[:10]+" "+*r.StudentName+" "+*r.StudentID)
		}
		var want []string
		for _, week := range []string{"2025-01-01", "2025-01-06", "2025-01-13"} {
			for _, s := range []string{"Bob s4", "Zoe s1", "Zoe s2", "Zoë s9", "bob s3", "Ángel s10"} {
				want = append(want, week+" "+s)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("order:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestR2_TimeZoneDaysAndDST: ranges are whole local days; bounds echo in UTC, across DST changes.
func TestR2_TimeZoneDaysAndDST(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("berlin", "Europe/Berlin")
		e.send(
			session("berlin", "s1", "2025-03-29T22:59:59.999Z"), // 23:59 on the 29th, local
			session("berlin", "s1", "2025-03-29T23:00:00Z"),     // 00:00 on the 30th, local
			session("berlin", "s1", "2025-03-30T21:59:59.999Z"), // 23:59 on the 30th (CEST)
			session("berlin", "s1", "2025-03-30T22:00:00Z"),     // the 31st
			session("berlin", "s2", "2025-10-26T22:30:00Z"),     // 23:30 on the 26th (CET, a 25-hour day)
		)
		reps := e.reports("live-lecture", key, "startDate=2025-03-30&endDate=2025-03-30")
		if reps[0].StartDate != "2025-03-29T23:00:00.000Z" || reps[0].EndDate != "2025-03-30T21:59:59.999Z" || reps[0].value("Sessions Made") != 2 {
			t.Errorf("spring-forward day: %+v", reps[0])
		}
		reps = e.reports("live-lecture", key, "startDate=2025-10-26&endDate=2025-10-26&students=true")
		if reps[0].StartDate != "2025-10-25T22:00:00.000Z" || reps[0].EndDate != "2025-10-26T22:59:59.999Z" {
			t.Errorf("fall-back day: %+v", reps[0])
		}
		if got := reps[1].value("Sessions Made"); *reps[1].StudentID != "s2" || got != 1 {
			t.Errorf("fall-back day, s2: %d sessions, want 1", got)
		}
		days := e.reports("live-lecture", key, "startDate=2025-03-29&endDate=2025-03-31&interval=day")
		var got []int64
		for _, d := range days {
			got = append(got, d.value("Sessions Made"))
		}
		if !reflect.DeepEqual(got, []int64{1, 2, 1}) {
			t.Errorf("daily sessions around the change: %v, want [1 2 1]", got)
		}
		// Santiago skips midnight when it springs forward: the day starts at 01:00.
		skey := e.school("santiago", "America/Santiago")
		reps = e.reports("chat", skey, "startDate=2024-09-08&endDate=2024-09-08")
		if reps[0].StartDate != "2024-09-08T04:00:00.000Z" || reps[0].EndDate != "2024-09-09T02:59:59.999Z" {
			t.Errorf("Santiago: %+v", reps[0])
		}
	})
}

// TestR2_TimestampParams: a timestamp names the day it falls on in the group's zone; no offset means local.
func TestR2_TimestampParams(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("ny", "America/New_York")
		tests := []struct{ query, start, end string }{
			{"startDate=2025-03-07&endDate=2025-03-07", "2025-03-07T05:00:00.000Z", "2025-03-08T04:59:59.999Z"},
			// 02:00 UTC on the 8th is still the 7th in New York.
			{"startDate=2025-03-08T02:00:00Z&endDate=2025-03-08T02:00:00Z", "2025-03-07T05:00:00.000Z", "2025-03-08T04:59:59.999Z"},
			{"startDate=2025-03-07T23:30:00&endDate=2025-03-07T23:30:00", "2025-03-07T05:00:00.000Z", "2025-03-08T04:59:59.999Z"},
			{"startDate=2025-03-07T10:15:00.123%2B02:00&endDate=2025-03-07", "2025-03-07T05:00:00.000Z", "2025-03-08T04:59:59.999Z"},
			{"startDate=2025-03-07T10:15:00.123+02:00&endDate=2025-03-07", "2025-03-07T05:00:00.000Z", "2025-03-08T04:59:59.999Z"},
			// The DST change of 2025-03-09: a 23-hour day.
			{"startDate=2025-03-09&endDate=2025-03-09", "2025-03-09T05:00:00.000Z", "2025-03-10T03:59:59.999Z"},
		}
		for _, tt := range tests {
			r := e.reports("chat", key, tt.query)[0]
			if r.StartDate != tt.start || r.EndDate != tt.end {
				t.Errorf("%s: %s to %s, want %s to %s", tt.query, r.StartDate, r.EndDate, tt.start, tt.end)
			}
		}
	})
}

// TestR2_ReportCap: a response that would pass the cap is a 400 that says what fits.
func TestR2_ReportCap(t *testing.T) {
	storeTest := func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		for i := range 30 {
			e.enrol("north", fmt.Sprintf("s%02d", i), "Student")
		}
		resp := e.reportRequest("chat", key, "startDate=2025-01-01&endDate=2025-12-31&students=true&interval=day", "")
		want := "Too many reports: interval=day from 2025-01-01 to 2025-12-31 (365 periods) for 30 students would give 10950 reports, " +
			"more than the limit of 1000. Ask for interval=month, or a range of at most 33 days with interval=day."
		if resp.status != http.StatusBadRequest || resp.errorMessage(t) != want {
			t.Errorf("got %d %s\nwant %s", resp.status, resp.body, want)
		}
		if reps := e.reports("chat", key, "startDate=2025-01-01&endDate=2025-12-31&students=true&interval=month"); len(reps) != 360 {
			t.Errorf("monthly: %d reports, want 360", len(reps))
		}
		if reps := e.reports("chat", key, "startDate=2025-01-01&endDate=2025-02-02&students=true&interval=day"); len(reps) != 990 {
			t.Errorf("33 days: %d reports, want 990", len(reps))
		}
		if resp := e.reportRequest("chat", key, "startDate=2000-01-01&endDate=2025-12-31&interval=day", ""); resp.status != http.StatusBadRequest {
			t.Errorf("9,497 daily group reports: %d, want 400", resp.status)
		}
	}
	storetest.Each(t, func(t *testing.T, stores storetest.Stores) {
		storeTest(t, newEnvWith(t, stores, func(c *httpapi.Config) { c.Engine.MaxReports = 1000 }))
	})
}

// TestR3_BodyParams: the three fields (and interval) from a JSON body; the query string wins.
func TestR3_BodyParams(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.enrol("north", "s1", "Ada")
		e.send(session("north", "s1", "2025-01-02T10:00:00Z"))
		tests := []struct {
			query, body, start string
			students           bool
			n                  int
		}{
			{"", `{"startDate": "2025-01-02", "endDate": "2025-01-03", "students": true}`, "2025-01-02", true, 1},
			{"", `{"students": "TRUE", "interval": "day", "startDate": "2025-01-01", "endDate": "2025-01-03"}`, "2025-01-01", true, 3},
			{"startDate=2025-01-01", `{"startDate": "2025-01-02", "endDate": "2025-01-03"}`, "2025-01-01", false, 1},
			{"students=false", `{"students": true, "endDate": "2025-01-03"}`, "2025-01-01", false, 1},
			{"", `  `, "2025-01-01", false, 1},
			{"", `{}`, "2025-01-01", false, 1},
			{"", `{"startDate": null}`, "2025-01-01", false, 1},
		}
		for _, tt := range tests {
			for _, ct := range []string{"application/json", "application/x-www-form-urlencoded", ""} {
				resp := e.do("POST", "/api/groups/live-lecture?"+tt.query, key, tt.body, "Content-Type", ct)
				reps := decodeReports(t, resp)
				if len(reps) != tt.n || reps[0].StartDate[:10] != tt.start || (reps[0].StudentID != nil) != tt.students {
					t.Errorf("?%s %s (%s): %+v", tt.query, tt.body, ct, reps)
				}
			}
		}
	})
}

// TestR6_Invariants: live lecture Chat Messages equals chat Live Lecture Messages; students add up to the group.
func TestR6_Invariants(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.send(message("north", "s1", "live_lecture", "2025-01-02T10:00:00Z"), message("north", "s2", "live_lecture", "2025-01-03T10:00:00Z"),
			message("north", "s2", "main", "2025-01-03T10:00:00Z"), session("north", "s3", "2025-01-03T10:00:00Z"))
		ll := e.reports("live-lecture", key, "")[0]
		chat := e.reports("chat", key, "")[0]
		if ll.value("Chat Messages") != 2 || chat.value("Live Lecture Messages") != 2 {
			t.Errorf("live lecture chat %d, chat live lecture %d, want 2 and 2", ll.value("Chat Messages"), chat.value("Live Lecture Messages"))
		}
		if *ll.NumStudentsUsed != 3 || *chat.NumStudentsUsed != 2 {
			t.Errorf("numStudentsUsed: live lecture %d (want 3), chat %d (want 2)", *ll.NumStudentsUsed, *chat.NumStudentsUsed)
		}
		for endpoint, group := range map[string]report{"live-lecture": ll, "chat": chat} {
			sums := map[string]int64{}
			for _, r := range e.reports(endpoint, key, "students=true") {
				for _, m := range r.Data {
					sums[m.Title] += m.Value
				}
			}
			for _, m := range group.Data {
				if sums[m.Title] != m.Value {
					t.Errorf("%s %s: students add up to %d, group says %d", endpoint, m.Title, sums[m.Title], m.Value)
				}
			}
		}
	})
}

// TestR6_ResentEventCountedOnce: an id seen before is counted once, within a batch and across batches.
func TestR6_ResentEventCountedOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		ev := session("north", "s1", "2025-01-02T10:00:00Z")
		ev.ID = "dup"
		if res := e.send(ev, ev); res.Accepted != 1 || res.Duplicates != 1 {
			t.Errorf("first batch: %+v", res)
		}
		if res := e.send(ev); res.Accepted != 0 || res.Duplicates != 1 {
			t.Errorf("second batch: %+v", res)
		}
		if got := e.reports("live-lecture", key, "")[0].value("Sessions Made"); got != 1 {
			t.Errorf("%d sessions, want 1", got)
		}
	})
}

// TestR7_EveryStudentAppears: students with no activity get zeros; the latest name sent wins.
func TestR7_EveryStudentAppears(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.enrol("north", "idle", "Ida Idle")
		first := session("north", "s1", "2025-01-02T10:00:00Z")
		first.StudentName = "Ada"
		e.send(first, session("north", "anon", "2025-01-02T10:00:00Z"))
		renamed := message("north", "s1", "main", "2025-01-03T10:00:00Z")
		renamed.StudentName = "Ada Lovelace"
		e.send(renamed)
		reps := e.reports("chat", key, "students=true&startDate=2025-01-02&endDate=2025-01-02")
		var got []string
		for _, r := range reps {
			got = append(got, fmt.Sprintf("%s/%s/%d", *r.StudentName, *r.StudentID, r.value("Total Messages")))
		}
		if want := []string{"Ada Lovelace/s1/0", "Ida Idle/idle/0", "anon/anon/0"}; !reflect.DeepEqual(got, want) {
			t.Errorf("students %v, want %v (a student first seen without a name is named by id)", got, want)
		}
	})
}

// TestStudentIDPicksStudents: studentId (repeated in the query string, or
// one or many in the body; the query string wins) keeps the student
// reports of those students, in the usual order, whatever the interval. It
// needs students=true, takes up to 1,000 ids, and an id of no student of
// the key's group (another group's, or an erased one) is a 400 naming it.
func TestStudentIDPicksStudents(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.school("south", "UTC")
		for _, s := range [][2]string{{"s1", "Ada"}, {"s2", "Bea"}, {"s3", "Cy"}, {"s4", "Dee"}} {
			e.enrol("north", s[0], s[1])
		}
		e.enrol("south", "t1", "Tom")
		e.send(session("north", "s2", "2025-01-02T10:00:00Z"), message("north", "s3", "main", "2025-01-02T11:00:00Z"),
			message("north", "s3", "test", "2025-01-03T11:00:00Z"), message("south", "t1", "main", "2025-01-02T11:00:00Z"))
		period := "students=true&startDate=2025-01-01&endDate=2025-01-03"
		for _, interval := range []string{"", "&interval=day", "&interval=week", "&interval=month"} {
			all := e.reports("chat", key, period+interval)
			var want []report
			for _, r := range all {
				if *r.StudentID == "s1" || *r.StudentID == "s3" {
					want = append(want, r)
				}
			}
			for _, ask := range []struct{ query, body string }{
				{"&studentId=s3&studentId=s1", ""},
				{"&studentId=s3&studentId=s1&studentId=s3", ""},
				{"", `{"studentId": ["s1", "s3"]}`},
				{"&studentId=s1&studentId=s3", `{"studentId": "s2"}`},
			} {
				got := decodeReports(t, e.reportRequest("chat", key, period+interval+ask.query, ask.body))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s%s %s: %+v\nwant %+v", interval, ask.query, ask.body, got, want)
				}
			}
		}
		if got := decodeReports(t, e.reportRequest("live-lecture", key, period, `{"studentId": "s2"}`)); len(got) != 1 || *got[0].StudentID != "s2" || got[0].value("Sessions Made") != 1 {
			t.Errorf("live lecture of s2: %+v", got)
		}

		if err := e.platform.DeleteStudent(context.Background(), "north", "s4"); err != nil {
			t.Fatal(err)
		}
		tooMany := strings.Repeat("&studentId=x", 1001)
		for i := range 1001 {
			tooMany = strings.Replace(tooMany, "=x&", fmt.Sprintf("=x%d&", i), 1)
		}
		for _, tt := range []struct{ query, body, want string }{
			{"studentId=s1", "", "Invalid studentId: it picks students of student reports; add students=true"},
			{"students=false", `{"studentId": ["s1"]}`, "Invalid studentId: it picks students of student reports; add students=true"},
			{period + "&studentId=s1&studentId=t1", "", `Invalid studentId: no student "t1" in this group`},
			{period + "&studentId=s4", "", `Invalid studentId: no student "s4" in this group`},
			{period + "&studentId=", "", "Missing params"},
			{period, `{"studentId": [""]}`, "Missing params"},
			{period, `{"studentId": 7}`, "Invalid studentId: expected a string or an array of strings, got 7"},
			{period + tooMany, "", "Invalid studentId: at most 1000 students a request, got 1001"},
		} {
			resp := e.reportRequest("chat", key, tt.query, tt.body)
			if got := resp.errorMessage(t); resp.status != http.StatusBadRequest || got != tt.want {
				t.Errorf("?%.80s %s: %d %s, want 400 %s", tt.query, tt.body, resp.status, got, tt.want)
			}
		}
	})
}

// TestR8_AcknowledgedEventVisibleAtOnce.
func TestR8_AcknowledgedEventVisibleAtOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		for i := range 20 {
			e.send(message("north", "s1", "test", "2026-11-21T11:00:00Z"))
			if got := e.reports("chat", key, "startDate=2026-11-21")[0].value("Test Messages"); got != int64(i+1) {
				t.Fatalf("after %d events the report says %d", i+1, got)
			}
		}
	})
}

// TestTenantIsolation: a key sees only its own group, however it asks.
func TestTenantIsolation(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		north := e.school("north", "UTC")
		south := e.school("south", "UTC")
		// The same student and event ids in both groups: ids are per group.
		for _, g := range []string{"north", "south"} {
			ev := session(g, "shared", "2025-01-02T10:00:00Z")
			ev.ID, ev.StudentName = "same-id", "Name in "+g
			e.send(ev)
		}
		e.send(message("south", "south-only", "main", "2025-01-02T10:00:00Z"), message("south", "shared", "main", "2025-01-02T10:00:00Z"))
		for _, query := range []string{"students=true", "students=true&groupId=south", "students=true&group=south&group_id=south"} {
			reps := e.reports("chat", north, query)
			if len(reps) != 1 || *reps[0].StudentID != "shared" || *reps[0].StudentName != "Name in north" || reps[0].value("Total Messages") != 0 {
				t.Errorf("north ?%s sees %+v", query, reps)
			}
		}
		if r := e.reports("live-lecture", north, "")[0]; r.value("Sessions Made") != 1 || *r.NumStudentsUsed != 1 {
			t.Errorf("north group report: %+v", r)
		}
		if r := e.reports("chat", south, "")[0]; r.value("Total Messages") != 2 || *r.NumStudentsUsed != 2 {
			t.Errorf("south group report: %+v", r)
		}
		if resp := e.reportRequest("chat", north, "", `{"groupId": "south"}`); resp.status != http.StatusBadRequest {
			t.Errorf("a groupId in the body: %d", resp.status)
		}
		// Erasing north's student leaves south's namesake alone.
		if err := e.platform.DeleteStudent(ctx, "north", "shared"); err != nil {
			t.Fatal(err)
		}
		if r := e.reports("live-lecture", south, "")[0]; r.value("Sessions Made") != 1 {
			t.Errorf("south lost usage when north's student was deleted: %+v", r)
		}
		if reps := e.reports("chat", south, "students=true"); len(reps) != 2 {
			t.Errorf("south students after north's deletion: %d", len(reps))
		}
		// Revoking south's keys does nothing to north.
		keys, _ := e.platform.Keys(ctx, "south")
		e.platform.RevokeKey(ctx, "south", keys[0].ID)
		if resp := e.reportRequest("chat", north, "", ""); resp.status != http.StatusOK {
			t.Errorf("north after south's key was revoked: %d", resp.status)
		}
	})
}

// TestNoKeysInLogs: no key, query string or internals in any log line.
func TestNoKeysInLogs(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.reportRequest("chat", key, "startDate=2025-01-01", "")
		e.reportRequest("chat", key+"x", "", "")
		e.reportRequest("chat", key, "x-api-key="+key, "")
		logs := e.logs.String()
		if strings.Contains(logs, key) || strings.Contains(logs, key[4:]) {
			t.Errorf("a key reached the log:\n%s", logs)
		}
		if n := strings.Count(logs, `"msg":"request"`); n != 3 {
			t.Errorf("%d request lines, want 3:\n%s", n, logs)
		}
	})
}

// TestHealth: /healthz and /readyz.
func TestHealth(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		for _, path := range []string{"/healthz", "/readyz"} {
			if resp := e.do("GET", path, "", ""); resp.status != http.StatusOK {
				t.Errorf("%s: %d %s", path, resp.status, resp.body)
			}
		}
		// /healthz says which build runs.
		if v := e.do("GET", "/healthz", "", "").json(t); v["version"] == "" || v["go"] != runtime.Version() {
			t.Errorf("/healthz: %v, want the version and Go release", v)
		}
	})
}
