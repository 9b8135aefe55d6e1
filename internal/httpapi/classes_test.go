package httpapi_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"groupanalytics/internal/platform"
)

// TestClasses: the admin API's classes, each error it names, and reports
// for a class: its group reports add up its members' student reports, its
// student reports are theirs, and neither a class nor its students are
// seen through another group's key.
func TestClasses(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key, otherKey := e.school("north", "America/New_York"), e.school("south", "UTC")
		token := e.token()
		for i := range 200 {
			at := fmt.Sprintf("2026-%02d-%02dT%02d:10:00Z", 1+i%10, 1+i%28, i%24)
			e.send(message("north", fmt.Sprintf("s%d", i%5), []string{"tutor_me", "main", "live_lecture"}[i%3], at))
			if i%4 == 0 {
				e.send(session("north", fmt.Sprintf("s%d", i%3), at))
			}
		}
		e.send(message("south", "s9", "main", "2026-03-01T10:00:00Z"))
		base := "/v1/admin/groups/north/classes"

		// Made, read, listed.
		want := map[string]any{"id": "bio-7b", "name": "Biology 7B", "startDate": "2026-09-01", "studentIds": []any{"s1", "s2"}}
		if got := e.mustCall("POST", base, token, `{"id": "bio-7b", "name": "Biology 7B", "startDate": "2026-09-01", "studentIds": ["s2", "s1", "s2"]}`, 201); !reflect.DeepEqual(got, want) {
			t.Errorf("created %v, want %v", got, want)
		}
		if got := e.mustCall("GET", base+"/bio-7b", token, "", 200); !reflect.DeepEqual(got, want) {
			t.Errorf("read %v, want %v", got, want)
		}
		e.mustCall("POST", base, token, `{"id": "empty", "name": "Nobody yet"}`, 201)
		if got := e.mustCall("GET", base, token, "", 200); !reflect.DeepEqual(got["classes"], []any{want,
			map[string]any{"id": "empty", "name": "Nobody yet", "studentIds": []any{}}}) {
			t.Errorf("listed %v", got)
		}

		// What is refused, and why.
		for _, c := range []struct {
			method, path, body string
			status             int
			message            string
		}{
			{"POST", base, `{"id": "bio-7b", "name": "Again"}`, 409, `Class "bio-7b" already exists in group "north"`},
			{"POST", base, `{"id": "x", "name": "X", "studentIds": ["s9"]}`, 400, `Invalid studentIds: no student "s9" in group "north"`},
			{"POST", base, `{"id": "x", "name": "X", "startDate": "2026-13-01"}`, 400, `Invalid startDate: expected a date such as 2026-09-01, got "2026-13-01"`},
			{"POST", base, `{"id": "x", "name": "X", "startDate": "2026-09-01", "endDate": "2026-08-31"}`, 400, `Invalid endDate: 2026-08-31 is before the startDate 2026-09-01`},
			{"POST", base, `{"id": "x"}`, 400, `Missing name`},
			{"POST", base, `{"name": "X"}`, 400, `Missing classId`},
			{"POST", base, `{"id": "x", "name": "X", "teacher": "Ortiz"}`, 400, `Invalid body: unknown field "teacher"`},
			{"POST", "/v1/admin/groups/nowhere/classes", `{"id": "x", "name": "X"}`, 404, `Group "nowhere" not found`},
			{"GET", base + "/nope", "", 404, `Class "nope" not found in group "north"`},
			{"GET", "/v1/admin/groups/south/classes/bio-7b", "", 404, `Class "bio-7b" not found in group "south"`},
			{"PUT", base + "/bio-7b/members", `{}`, 400, `Missing studentIds: the class's members, [] for none`},
			{"PUT", base + "/bio-7b/members", `{"studentIds": ["s1", "ghost"]}`, 400, `Invalid studentIds: no student "ghost" in group "north"`},
			{"PUT", base + "/nope/members", `{"studentIds": []}`, 404, `Class "nope" not found in group "north"`},
			{"PATCH", base + "/bio-7b", `{"endDate": "2026-01-01"}`, 400, `Invalid endDate: 2026-01-01 is before the startDate 2026-09-01`},
			{"DELETE", base + "/nope", "", 404, `Class "nope" not found in group "north"`},
		} {
			resp := e.call(c.method, c.path, token, c.body)
			if got := resp.json(t)["error"]; resp.status != c.status || got != c.message {
				t.Errorf("%s %s %s: %d %v, want %d %q", c.method, c.path, c.body, resp.status, got, c.status, c.message)
			}
		}
		// A refused change changed nothing.
		if got := e.mustCall("GET", base+"/bio-7b", token, "", 200); !reflect.DeepEqual(got, want) {
			t.Errorf("after refusals %v, want %v", got, want)
		}

		// Renamed, its term changed and taken away, its members set.
		want = map[string]any{"id": "bio-7b", "name": "Biology 7B (Ortiz)", "endDate": "2027-06-30", "studentIds": []any{"s1", "s2"}}
		if got := e.mustCall("PATCH", base+"/bio-7b", token, `{"name": "Biology 7B (Ortiz)", "startDate": "", "endDate": "2027-06-30"}`, 200); !reflect.DeepEqual(got, want) {
			t.Errorf("changed %v, want %v", got, want)
		}
		want["studentIds"] = []any{"s0", "s2", "s3"}
		if got := e.mustCall("PUT", base+"/bio-7b/members", token, `{"studentIds": ["s3", "s0", "s2"]}`, 200); !reflect.DeepEqual(got, want) {
			t.Errorf("members set %v, want %v", got, want)
		}

		// Its reports: its members' student reports, and their sum.
		members := map[string]bool{"s0": true, "s2": true, "s3": true}
		for _, endpoint := range []string{"live-lecture", "chat"} {
			for _, query := range []string{"startDate=2026-01-01&endDate=2026-12-31", "startDate=2026-02-10&endDate=2026-05-03&interval=week"} {
				all := e.reports(endpoint, key, query+"&students=true")
				var mine []report
				for _, r := range all {
					if members[*r.StudentID] {
						mine = append(mine, r)
					}
				}
				if got := e.reports(endpoint, key, query+"&students=true&classId=bio-7b"); !reflect.DeepEqual(got, mine) {
					t.Errorf("%s %s: the class's student reports are not its members'", endpoint, query)
				}
				class := e.reports(endpoint, key, query+"&classId=bio-7b")
				group := e.reports(endpoint, key, query)
				for i, r := range class {
					used := 0
					for _, m := range mine {
						if m.StartDate != r.StartDate {
							continue
						}
						nonzero := false
						for _, d := range m.Data {
							nonzero = nonzero || d.Value != 0
						}
						if nonzero {
							used++
						}
					}
					if *r.NumStudentsUsed != used || *r.NumStudentsUsed > *group[i].NumStudentsUsed {
						t.Errorf("%s %s %s: numStudentsUsed %d, want %d", endpoint, query, r.StartDate, *r.NumStudentsUsed, used)
					}
					for _, d := range r.Data {
						var sum int64
						for _, m := range mine {
							if m.StartDate == r.StartDate {
								sum += m.value(d.Title)
							}
						}
						if d.Value != sum {
							t.Errorf("%s %s %s %s: %d, want the members' %d", endpoint, query, r.StartDate, d.Title, d.Value, sum)
						}
					}
				}
			}
		}
		// In CSV, under a name that says which class.
		resp := e.reportRequest("chat", key, "classId=bio-7b&students=true&format=csv&startDate=2026-01-01&endDate=2026-01-31", "")
		if got := resp.header.Get("Content-Disposition"); got != `attachment; filename="north-chat-bio-7b-students-2026-01-01-to-2026-01-31.csv"` {
			t.Errorf("CSV named %s", got)
		}
		// Another group's key sees no class of this one; a student outside
		// the class is refused like an unknown one.
		for _, c := range []struct{ key, query, message string }{
			{otherKey, "classId=bio-7b", `Invalid classId: no class "bio-7b" in this group`},
			{otherKey, "classId=bio-7b&students=true&studentId=s0", `Invalid classId: no class "bio-7b" in this group`},
			{key, "classId=bio-7b&students=true&studentId=s1", `Invalid studentId: no student "s1" in this class`},
			{key, "classId=bio-7b&students=true&studentId=s9", `Invalid studentId: no student "s9" in this class`},
			{key, "classId=bio-7b&classId=empty", `Invalid classId: given 2 times in the query string`},
			{key, "classId=", `Missing params`},
		} {
			resp := e.reportRequest("chat", c.key, c.query, "")
			if got := resp.json(t)["error"]; resp.status != 400 || got != c.message {
				t.Errorf("%s: %d %v, want 400 %q", c.query, resp.status, got, c.message)
			}
		}
		if got := e.reports("chat", key, "classId=empty"); len(got) != 1 || *got[0].NumStudentsUsed != 0 || got[0].Data[0].Value != 0 {
			t.Errorf("an empty class reports %+v", got)
		}
		if got := e.reportRequest("chat", key, "", `{"classId": "empty", "students": true}`); got.status != 200 || !strings.Contains(string(got.body), `"reports":[]`) {
			t.Errorf("an empty class's students in a body: %d %s", got.status, got.body)
		}

		// Erasing a student takes them out of their classes; deleting a
		// class leaves its students; deleting the group, its classes.
		e.mustCall("DELETE", "/v1/admin/groups/north/students/s3", token, "", 204)
		if got := e.mustCall("GET", base+"/bio-7b", token, "", 200)["studentIds"]; !reflect.DeepEqual(got, []any{"s0", "s2"}) {
			t.Errorf("after erasing s3, members %v", got)
		}
		e.mustCall("DELETE", base+"/empty", token, "", 204)
		if got := e.mustCall("GET", base, token, "", 200)["classes"].([]any); len(got) != 1 {
			t.Errorf("after a deletion, %d classes", len(got))
		}
		if n := len(e.reports("chat", key, "students=true")); n != 4 {
			t.Errorf("after deleting a class, %d student reports, want 4", n)
		}
		e.mustCall("DELETE", "/v1/admin/groups/north", token, "", 204)
		e.school("north", "UTC")
		if got := e.mustCall("GET", base, token, "", 200)["classes"]; !reflect.DeepEqual(got, []any{}) {
			t.Errorf("a new group of a deleted one's id has classes %v", got)
		}
	})
}

// TestTeacherKeys: a key for some classes sees their students and no
// others: its group reports are its classes' together, a class or student
// outside them is refused exactly as one that does not exist, whatever
// the parameters try; with its classes deleted it sees nothing.
func TestTeacherKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "Europe/Berlin")
		e.school("south", "UTC")
		token := e.token()
		for i := range 300 {
			at := fmt.Sprintf("2026-%02d-%02dT%02d:20:00Z", 1+i%9, 1+i%27, i%24)
			e.send(message("north", fmt.Sprintf("s%d", i%6), []string{"tutor_me", "test", "live_lecture"}[i%3], at))
			if i%5 == 0 {
				e.send(session("north", fmt.Sprintf("s%d", i%6), at))
			}
		}
		e.send(message("south", "s0", "main", "2026-03-01T10:00:00Z"))
		for id, members := range map[string]string{"c1": `["s0", "s1"]`, "c2": `["s1", "s2"]`, "c3": `["s3", "s4"]`, "union": `["s0", "s1", "s2"]`} {
			e.mustCall("POST", "/v1/admin/groups/north/classes", token, `{"id": "`+id+`", "name": "`+id+`", "studentIds": `+members+`}`, 201)
		}
		e.mustCall("POST", "/v1/admin/groups/south/classes", token, `{"id": "c3", "name": "south's", "studentIds": ["s0"]}`, 201)

		// Made, and what is refused.
		created := e.mustCall("POST", "/v1/admin/groups/north/keys", token, `{"label": "Ms Ortiz", "classIds": ["c2", "c1", "c2"]}`, 201)
		teacher := created["key"].(string)
		if !reflect.DeepEqual(created["classIds"], []any{"c1", "c2"}) {
			t.Errorf("created %v", created)
		}
		for body, message := range map[string]string{
			`{"classIds": []}`:           "Invalid classIds: a teacher's key needs at least one class; leave classIds out for a key of the whole group",
			`{"classIds": ["c1", "c9"]}`: `Invalid classIds: no class "c9" in group "north"`,
			`{"classIds": "c1"}`:         "Invalid classIds: expected an array",
		} {
			resp := e.call("POST", "/v1/admin/groups/north/keys", token, body)
			if got := resp.json(t)["error"]; resp.status != 400 || got != message {
				t.Errorf("%s: %d %v, want 400 %q", body, resp.status, got, message)
			}
		}
		keys := e.mustCall("GET", "/v1/admin/groups/north/keys", token, "", 200)["keys"].([]any)
		sees := map[any]any{}
		for _, k := range keys {
			sees[k.(map[string]any)["label"]] = k.(map[string]any)["classIds"]
		}
		if !reflect.DeepEqual(sees, map[any]any{"test": nil, "Ms Ortiz": []any{"c1", "c2"}}) {
			t.Errorf("keys listed: %v", keys)
		}

		// The classes each key may ask for: a teacher's, its own.
		for _, c := range []struct{ key, want string }{
			{key, `{"forClasses":false,"minCellSize":0,"firstKeptDay":null,"classes":[{"id":"c1","name":"c1","students":2},{"id":"c2","name":"c2","students":2},{"id":"c3","name":"c3","students":2},{"id":"union","name":"union","students":3}]}`},
			{teacher, `{"forClasses":true,"minCellSize":0,"firstKeptDay":null,"classes":[{"id":"c1","name":"c1","students":2},{"id":"c2","name":"c2","students":2}]}`},
		} {
			if resp := e.do("GET", "/api/classes", c.key, ""); resp.status != 200 || strings.TrimSpace(string(resp.body)) != c.want {
				t.Errorf("GET /api/classes: %d %s, want %s", resp.status, resp.body, c.want)
			}
		}
		if resp := e.do("GET", "/api/classes", "gak_WRONG", ""); resp.status != 403 {
			t.Errorf("GET /api/classes with a wrong key: %d", resp.status)
		}
		// Whose key it is, as the dashboard asks.
		for _, c := range []struct{ key, want string }{
			{key, `{"kind":"school","school":{"id":"north","name":"School north","timeZone":"Europe/Berlin"}}`},
			{teacher, `{"kind":"teacher","school":{"id":"north","name":"School north","timeZone":"Europe/Berlin"},"classIds":["c1","c2"]}`},
		} {
			if resp := e.do("GET", "/api/me", c.key, ""); resp.status != 200 || strings.TrimSpace(string(resp.body)) != c.want {
				t.Errorf("GET /api/me: %d %s, want %s", resp.status, resp.body, c.want)
			}
		}

		// What it sees: its classes together, as the group's key sees them.
		for _, endpoint := range []string{"live-lecture", "chat"} {
			for _, query := range []string{"startDate=2026-01-01&endDate=2026-09-30", "startDate=2026-03-01&endDate=2026-04-30&interval=week"} {
				for _, c := range []struct{ teacher, group string }{
					{"", "classId=union"},
					{"&students=true", "&students=true&classId=union"},
					{"&classId=c1", "&classId=c1"},
					{"&classId=c2&students=true", "&classId=c2&students=true"},
					{"&students=true&studentId=s2&studentId=s0", "&students=true&studentId=s2&studentId=s0"},
				} {
					got, want := e.reports(endpoint, teacher, query+c.teacher), e.reports(endpoint, key, query+"&"+strings.TrimPrefix(c.group, "&"))
					if !reflect.DeepEqual(got, want) || len(got) == 0 {
						t.Errorf("%s %s%s: the teacher's key sees %d reports, the group's key %d (%s)", endpoint, query, c.teacher, len(got), len(want), c.group)
					}
				}
			}
		}
		// Outside its classes, the same 400 as for what does not exist,
		// wherever the parameter comes from.
		same := func(query, body, outside, unknown string) {
			t.Helper()
			a := e.reportRequest("chat", teacher, query, body)
			b := e.reportRequest("chat", teacher, strings.ReplaceAll(query, outside, unknown), strings.ReplaceAll(body, outside, unknown))
			want := strings.ReplaceAll(string(b.body), unknown, outside)
			if a.status != 400 || b.status != 400 || string(a.body) != want {
				t.Errorf("%s %s: %d %s, but for %s: %d %s", query, body, a.status, a.body, unknown, b.status, b.body)
			}
		}
		same("classId=c3", "", "c3", "c-none")
		same("", `{"classId": "c3", "students": true}`, "c3", "c-none")
		same("students=true&studentId=s3", "", "s3", "s-none")
		same("students=true", `{"studentId": ["s0", "s4"]}`, "s4", "s-none")
		same("classId=c1&students=true&studentId=s2", "", "s2", "s-none")
		same("classId=union", "", "union", "c-none")
		if resp := e.reportRequest("chat", teacher, "classId=c1", `{"classId": "c3"}`); resp.status != 200 {
			t.Errorf("the query string's classId wins over the body's: %d %s", resp.status, resp.body)
		}
		csv := string(e.reportRequest("chat", teacher, "students=true&format=csv", "").body)
		for _, s := range []string{"s3", "s4", "s5"} {
			if strings.Contains(csv, ","+s+",") {
				t.Errorf("the teacher's CSV names %s:\n%s", s, csv)
			}
		}

		// Its classes deleted, it sees nothing; revoked, it stops.
		e.mustCall("DELETE", "/v1/admin/groups/north/classes/c1", token, "", 204)
		e.mustCall("DELETE", "/v1/admin/groups/north/classes/c2", token, "", 204)
		if got := e.reports("chat", teacher, "startDate=2026-01-01"); len(got) != 1 || *got[0].NumStudentsUsed != 0 || got[0].Data[0].Value != 0 {
			t.Errorf("with its classes deleted, the teacher's key sees %+v", got)
		}
		if got := e.reports("chat", teacher, "students=true"); len(got) != 0 {
			t.Errorf("with its classes deleted, the teacher's key sees %d students", len(got))
		}
		e.mustCall("DELETE", "/v1/admin/groups/north/keys/"+created["id"].(string), token, "", 204)
		if resp := e.reportRequest("chat", teacher, "", ""); resp.status != 403 {
			t.Errorf("revoked, the teacher's key gets %d", resp.status)
		}
	})
}

// TestSmallCells: with a minCellSize, a group report (the group's, a
// class's, a teacher's key's) shows no figure that fewer students make, as
// null in JSON and an empty field in CSV, and hides more where the hidden
// one could be worked out: the school less its other classes, a class less
// the class within it, a key's classes less one. What is shown is exact;
// student reports are not touched; 0 turns it off.
func TestSmallCells(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		token := e.token()
		// 50 students: bio (14) holds bio-lab (11), chem (12), seminar (2),
		// and 22 in no class.
		id := func(i int) string { return fmt.Sprintf("s%02d", i) }
		span := func(from, to int) string {
			var ids []string
			for i := from; i <= to; i++ {
				ids = append(ids, `"`+id(i)+`"`)
			}
			return "[" + strings.Join(ids, ",") + "]"
		}
		var events []platform.EventInput
		at := "2026-03-02T10:00:00Z"
		for i := range 50 {
			events = append(events, message("north", id(i), "main", at))
			if i <= 26 {
				events = append(events, message("north", id(i), "tutor_me", at))
			}
			if i <= 2 {
				events = append(events, session("north", id(i), at))
			}
		}
		e.send(events...)
		for class, members := range map[string]string{"bio": span(0, 13), "bio-lab": span(0, 10), "chem": span(14, 25), "seminar": span(26, 27)} {
			e.mustCall("POST", "/v1/admin/groups/north/classes", token, `{"id": "`+class+`", "name": "`+class+`", "studentIds": `+members+`}`, 201)
		}

		// Set, shown, refused.
		if got := e.mustCall("PATCH", "/v1/admin/groups/north", token, `{"minCellSize": 10}`, 200)["minCellSize"]; fmt.Sprint(got) != "10" {
			t.Errorf("PATCH minCellSize: %v", got)
		}
		if got := e.mustCall("GET", "/v1/admin/groups/north", token, "", 200)["minCellSize"]; fmt.Sprint(got) != "10" {
			t.Errorf("GET group: minCellSize %v", got)
		}
		for body, message := range map[string]string{
			`{"minCellSize": 1}`:   "Invalid minCellSize 1: expected 0 (off) or 2 to 100",
			`{"minCellSize": 101}`: "Invalid minCellSize 101: expected 0 (off) or 2 to 100",
			`{"minCellSize": -10}`: "Invalid minCellSize -10: expected 0 (off) or 2 to 100",
		} {
			resp := e.call("PATCH", "/v1/admin/groups/north", token, body)
			if got := resp.json(t)["error"]; resp.status != 400 || got != message {
				t.Errorf("%s: %d %v, want 400 %q", body, resp.status, got, message)
			}
		}
		if resp := e.call("PATCH", "/v1/admin/groups/north", token, `{"minCellSize": "ten"}`); resp.status != 400 {
			t.Errorf(`minCellSize "ten": %d %s`, resp.status, resp.body)
		}
		if resp := e.do("GET", "/api/classes", key, ""); !strings.Contains(string(resp.body), `"minCellSize":10`) {
			t.Errorf("GET /api/classes: %s", resp.body)
		}

		// Each report's figures of the day: numStudentsUsed, then the
		// metrics; -1 for hidden.
		figures := func(key, endpoint, query string) []int64 {
			t.Helper()
			resp := e.reportRequest(endpoint, key, "startDate=2026-03-02&endDate=2026-03-02&"+query, "")
			var body struct {
				Reports []struct {
					NumStudentsUsed *int64 `json:"numStudentsUsed"`
					Data            []struct {
						Value *int64 `json:"value"`
					} `json:"data"`
				} `json:"reports"`
			}
			if err := json.Unmarshal(resp.body, &body); err != nil || resp.status != 200 || len(body.Reports) != 1 {
				t.Fatalf("%s %s: %d %s", endpoint, query, resp.status, resp.body)
			}
			var out []int64
			for _, v := range append([]*int64{body.Reports[0].NumStudentsUsed}, func() (vs []*int64) {
				for _, d := range body.Reports[0].Data {
					vs = append(vs, d.Value)
				}
				return vs
			}()...) {
				if v == nil {
					out = append(out, -1)
				} else {
					out = append(out, *v)
				}
			}
			return out
		}
		const x = -1
		check := func(key string, want map[string][2][]int64) {
			t.Helper()
			for query, w := range want {
				if got := figures(key, "live-lecture", query); !reflect.DeepEqual(got, w[0]) {
					t.Errorf("live-lecture %q: %v, want %v", query, got, w[0])
				}
				if got := figures(key, "chat", query); !reflect.DeepEqual(got, w[1]) {
					t.Errorf("chat %q: %v, want %v", query, got, w[1])
				}
			}
		}
		// Sessions: 3 students, hidden everywhere they are not 0. Main
		// chat: bio less bio-lab would be 3 students, so bio-lab is
		// hidden. Tutor Me: the school less bio, bio-lab and chem would be
		// 1 of the seminar, so the smallest two are hidden too. A total
		// goes with its parts.
		check(key, map[string][2][]int64{
			"":                {{x, x, 0}, {50, 77, 27, 0, 0, 0, 0, 50}},
			"classId=bio":     {{x, x, 0}, {14, 28, 14, 0, 0, 0, 0, 14}},
			"classId=bio-lab": {{x, x, 0}, {x, x, x, 0, 0, 0, 0, x}},
			"classId=chem":    {{0, 0, 0}, {12, x, x, 0, 0, 0, 0, 12}},
			"classId=seminar": {{0, 0, 0}, {x, x, x, 0, 0, 0, 0, x}},
		})
		// Student reports are each student's own: nothing hidden.
		if got := e.reports("chat", key, "startDate=2026-03-02&endDate=2026-03-02&students=true&classId=seminar"); len(got) != 2 || got[0].Data[0].Value != 2 {
			t.Errorf("the seminar's students: %+v", got)
		}
		// CSV: an empty field.
		csv := string(e.reportRequest("chat", key, "startDate=2026-03-02&endDate=2026-03-02&classId=seminar&format=csv", "").body)
		if want := "2026-03-02T00:00:00.000Z,2026-03-02T23:59:59.999Z,,,,0,0,0,0,\r\n"; !strings.HasSuffix(csv, want) {
			t.Errorf("CSV:\n%q, want it to end %q", csv, want)
		}

		// A teacher's key of chem and the seminar: its report less chem's
		// would give the seminar's, so chem's chat is hidden now; and the
		// seminar's students being in no other report shown than the
		// key's, the key's is hidden too.
		created := e.mustCall("POST", "/v1/admin/groups/north/keys", token, `{"label": "Mr Li", "classIds": ["chem", "seminar"]}`, 201)
		teacher := created["key"].(string)
		check(teacher, map[string][2][]int64{
			"":                {{0, 0, 0}, {x, x, x, 0, 0, 0, 0, x}},
			"classId=chem":    {{0, 0, 0}, {x, x, x, 0, 0, 0, 0, x}},
			"classId=seminar": {{0, 0, 0}, {x, x, x, 0, 0, 0, 0, x}},
		})
		check(key, map[string][2][]int64{"classId=chem": {{0, 0, 0}, {x, x, x, 0, 0, 0, 0, x}}})
		e.mustCall("DELETE", "/v1/admin/groups/north/keys/"+created["id"].(string), token, "", 204)

		// Off: every figure as it is.
		e.mustCall("PATCH", "/v1/admin/groups/north", token, `{"minCellSize": 0}`, 200)
		check(key, map[string][2][]int64{
			"":                {{3, 3, 0}, {50, 77, 27, 0, 0, 0, 0, 50}},
			"classId=bio-lab": {{3, 3, 0}, {11, 22, 11, 0, 0, 0, 0, 11}},
			"classId=seminar": {{0, 0, 0}, {2, 3, 1, 0, 0, 0, 0, 2}},
		})
	})
}

// bundle is a OneRoster CSV bundle: file name -> rows, header first. The
// manifest is made from modes.
type bundle map[string][][]string

func (b bundle) zip(t *testing.T, modes map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	manifest := [][]string{{"propertyName", "value"}, {"manifest.version", "1.0"}, {"oneroster.version", "1.2"}}
	for _, f := range []string{"academicSessions", "categories", "classes", "courses", "demographics", "enrollments", "orgs", "roles", "users"} {
		manifest = append(manifest, []string{"file." + f, cmpOrAbsent(modes[f])})
	}
	files := map[string][][]string{"manifest.csv": manifest}
	for name, rows := range b {
		files[name] = rows
	}
	for name, rows := range files {
		w, _ := zw.Create(name)
		cw := csv.NewWriter(w)
		cw.WriteAll(rows)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func cmpOrAbsent(mode string) string {
	if mode == "" {
		return "absent"
	}
	return mode
}

var (
	orgsHeader        = []string{"sourcedId", "status", "dateLastModified", "name", "type", "identifier", "parentSourcedId"}
	classesHeader     = []string{"sourcedId", "status", "dateLastModified", "title", "grades", "courseSourcedId", "classCode", "classType", "location", "schoolSourcedId", "termSourcedIds", "subjects", "subjectCodes", "periods"}
	usersHeader       = []string{"sourcedId", "status", "dateLastModified", "enabledUser", "username", "userIds", "givenName", "familyName", "middleName", "identifier", "email", "sms", "phone", "agentSourcedIds", "grades", "password", "userMasterIdentifier", "resourceSourcedIds", "preferredGivenName", "preferredMiddleName", "preferredFamilyName", "primaryOrgSourcedId", "pronouns"}
	enrollmentsHeader = []string{"sourcedId", "status", "dateLastModified", "classSourcedId", "schoolSourcedId", "userSourcedId", "role", "primary", "beginDate", "endDate"}
)

// schoolBundle is a district's bulk bundle: two schools, 300 classes at
// the first and 10 at the second, 3,000 students in five classes each
// and 60 teachers. It returns the first school's classes' students.
func schoolBundle(rng *rand.Rand) (bundle, map[string][]string) {
	b := bundle{
		"orgs.csv": {orgsHeader, {"d1", "", "", "District", "district", "", ""},
			{"north", "", "", "Northside High", "school", "", "d1"}, {"south", "", "", "Southside", "school", "", "d1"}},
		"classes.csv":     {classesHeader},
		"users.csv":       {usersHeader},
		"enrollments.csv": {enrollmentsHeader},
	}
	class := func(i int) string {
		if i >= 300 {
			return fmt.Sprintf("south-c%02d", i-300)
		}
		return fmt.Sprintf("c%03d", i)
	}
	for i := range 310 {
		school := "north"
		if i >= 300 {
			school = "south"
		}
		b["classes.csv"] = append(b["classes.csv"], []string{class(i), "", "", "Class " + class(i), "09", "", "", "scheduled", "", school, "", "", "", ""})
	}
	members := map[string][]string{}
	n := 0
	enrol := func(class, user, role string) {
		n++
		school := "north"
		if strings.HasPrefix(class, "south") {
			school = "south"
		}
		b["enrollments.csv"] = append(b["enrollments.csv"], []string{fmt.Sprintf("e%05d", n), "", "", class, school, user, role, "", "", ""})
	}
	for s := range 3000 {
		id := fmt.Sprintf("u%04d", s)
		b["users.csv"] = append(b["users.csv"], []string{id, "", "", "true", id, "", "Given" + id, "Family", "", "", "", "", "", "", "09", "", "", "", "", "", "", "north", ""})
		limit := 300
		if s%10 == 0 {
			limit = 310 // some in the other school's classes too
		}
		for _, c := range rng.Perm(limit)[:5] {
			enrol(class(c), id, "student")
			if c < 300 {
				members[class(c)] = append(members[class(c)], id)
			}
		}
	}
	for s := range 60 {
		id := fmt.Sprintf("t%02d", s)
		b["users.csv"] = append(b["users.csv"], []string{id, "", "", "true", id, "", "Teacher", id, "", "", "", "", "", "", "", "", "", "", "", "", "", "north", ""})
		enrol(class(s*5), id, "teacher")
	}
	for c := range members {
		slices.Sort(members[c])
	}
	return b, members
}

// TestRosterImport: a district's bulk bundle, then a delta, through the
// admin API on every store: the school's classes with their students
// (teachers and the other school's classes left out), a dry run that
// changes nothing, and bundles refused whole with the place of the fault
// named.
func TestRosterImport(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		token := e.token()
		bulk, members := schoolBundle(rand.New(rand.NewPCG(7, 7)))
		all := map[string]string{"orgs": "bulk", "classes": "bulk", "users": "bulk", "enrollments": "bulk"}
		post := func(query string, body []byte) response {
			t.Helper()
			return e.do("POST", "/v1/admin/groups/north/roster"+query, "", string(body), "Authorization", "Bearer "+token, "Content-Type", "application/zip")
		}
		classes := func() map[string][]string {
			t.Helper()
			got := map[string][]string{}
			for _, c := range e.mustCall("GET", "/v1/admin/groups/north/classes", token, "", 200)["classes"].([]any) {
				c := c.(map[string]any)
				var ids []string
				for _, id := range c["studentIds"].([]any) {
					ids = append(ids, id.(string))
				}
				got[c["id"].(string)] = ids
			}
			return got
		}
		wantErr := func(resp response, message string) {
			t.Helper()
			if got := resp.json(t)["error"]; resp.status != 400 || got != message {
				t.Errorf("%d %v, want 400 %q", resp.status, got, message)
			}
		}

		// Two schools: the import must be told which.
		wantErr(post("", bulk.zip(t, all)), "Invalid roster: orgs.csv has 2 schools (north, south): name the group's school with ?org=ID")
		dry := post("?org=north&dryRun=true", bulk.zip(t, all))
		want := map[string]any{"dryRun": true, "school": "north", "studentsAdded": 3000.0, "studentsRenamed": 0.0,
			"classesAdded": 300.0, "classesChanged": 0.0, "classesDeleted": 0.0, "membersAdded": float64(len(bulk["enrollments.csv"]) - 1 - 60 - 3000/10*5), "membersRemoved": 0.0,
			"staffAdded": 0.0, "staffUpdated": 0.0, "staffRemoved": 0.0, "skipped": []any{}}
		got := dry.json(t)
		// Students of the other school's classes count among the added
		// (they are the school's students too) but not its memberships.
		var southMembers float64
		for _, row := range bulk["enrollments.csv"][1:] {
			if row[4] == "south" {
				southMembers++
			}
		}
		want["membersAdded"] = float64(len(bulk["enrollments.csv"])-1-60) - southMembers
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("dry run: %v\nwant %v", got, want)
		}
		if n := len(classes()); n != 0 {
			t.Fatalf("a dry run made %d classes", n)
		}
		applied := post("?org=north", bulk.zip(t, all)).json(t)
		want["dryRun"] = false
		if fmt.Sprint(applied) != fmt.Sprint(want) {
			t.Errorf("import: %v\nwant %v", applied, want)
		}
		if got := classes(); !reflect.DeepEqual(got, members) {
			t.Errorf("imported %d classes, want %d, or their members differ", len(got), len(members))
		}
		if again := post("?org=north", bulk.zip(t, all)).json(t); fmt.Sprintf("%v %v %v", again["studentsAdded"], again["classesChanged"], again["membersAdded"]) != "0 0 0" {
			t.Errorf("the same bundle again changed %v", again)
		}
		students := e.mustCall("GET", "/v1/admin/groups/north/students", token, "", 200)["students"].([]any)
		if len(students) != 3000 || students[0].(map[string]any)["name"] != "Givenu0000 Family" {
			t.Errorf("%d students, the first %v", len(students), students[0])
		}

		// A delta: a class deleted, one added, one student out of a class
		// and into another, one renamed, one gone from every class.
		leaving := members["c001"][0]
		moving := members["c002"][0]
		delta := bundle{
			"classes.csv": {classesHeader, {"c000", "tobedeleted", "2026-11-20", "", "", "", "", "", "", "north", "", "", "", ""},
				{"c900", "active", "2026-11-20", "Late class", "", "", "", "", "", "north", "", "", "", ""}},
			"users.csv": {usersHeader, {"u0001", "active", "2026-11-20", "true", "", "", "Ada", "Renamed", "", "", "", "", "", "", "", "", "", "", "", "", "", "", ""},
				{leaving, "tobedeleted", "2026-11-20", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", ""}},
			"enrollments.csv": {enrollmentsHeader, {"x1", "tobedeleted", "2026-11-20", "c002", "north", moving, "student", "", "", ""},
				{"x2", "active", "2026-11-20", "c900", "north", moving, "student", "", "", ""}},
		}
		deltaModes := map[string]string{"classes": "delta", "users": "delta", "enrollments": "delta"}
		before := classes()
		if resp := post("", delta.zip(t, deltaModes)); resp.status != 200 {
			t.Fatalf("delta: %d %s", resp.status, resp.body)
		}
		after := classes()
		if _, ok := after["c000"]; ok {
			t.Error("c000, deleted, is still there")
		}
		if !reflect.DeepEqual(after["c900"], []string{moving}) || slices.Contains(after["c002"], moving) {
			t.Errorf("the moved student: c900 %v, in c002 %v", after["c900"], slices.Contains(after["c002"], moving))
		}
		for id, m := range after {
			if slices.Contains(m, leaving) {
				t.Errorf("%s still has %s, whom the delta deleted", id, leaving)
			}
		}
		if len(after) != len(before) || len(after["c001"]) != len(before["c001"])-1 {
			t.Errorf("after the delta: %d classes (%d before); c001 %d members (%d)", len(after), len(before), len(after["c001"]), len(before["c001"]))
		}
		if got := e.mustCall("GET", "/v1/admin/groups/north/students", token, "", 200)["students"].([]any); len(got) != 3000 {
			t.Errorf("after the delta: %d students; no student is erased by a roster", len(got))
		}

		// Refused whole: nothing changes.
		before = classes()
		for _, c := range []struct {
			files   bundle
			modes   map[string]string
			message string
		}{
			{bundle{"classes.csv": {classesHeader, {"c950", "active", "", "New", "", "", "", "", "", "north", "", "", "", ""}},
				"enrollments.csv": {enrollmentsHeader, {"y1", "active", "", "c950", "north", "u0002", "student", "", "", ""},
					{"y2", "active", "", "c404", "north", "u0002", "student", "", "", ""}}},
				map[string]string{"classes": "delta", "enrollments": "delta"},
				`Invalid roster: enrollments.csv line 3, column classSourcedId: no class "c404" in classes.csv or the group`},
			{bundle{"enrollments.csv": {enrollmentsHeader, {"y1", "active", "", "c003", "north", "nobody", "student", "", "", ""}}},
				map[string]string{"enrollments": "delta"},
				`Invalid roster: enrollments.csv line 2, column userSourcedId: no user "nobody" in users.csv or the group's students`},
			{bundle{"classes.csv": {classesHeader, {"c951", "inactive", "", "X", "", "", "", "", "", "north", "", "", "", ""}}},
				map[string]string{"classes": "bulk"},
				`Invalid roster: classes.csv line 2, column status: "inactive" in a bulk file: leave it empty or active (a tobedeleted record is skipped)`},
			{bundle{"enrollments.csv": {enrollmentsHeader, {"y1", "active", "2026-02-27T10:00:00Z", "c003", "north", "u0002", "student", "", "2026-02-01", "2026-06-30"},
				{"y2", "active", "2026-02-27", "c003", "north", "u0003", "student", "", "2026-02-30", ""}}},
				map[string]string{"enrollments": "delta"},
				`Invalid roster: enrollments.csv line 3, column beginDate: "2026-02-30" is not an ISO 8601 date, such as 2026-02-28`},
			{bundle{"classes.csv": {classesHeader[:3], {"c952", "", ""}}},
				map[string]string{"classes": "bulk"},
				`Invalid roster: classes.csv line 1, column title: missing from the header`},
			{bundle{"classes.csv": {classesHeader, {"c953", "", "", "A", "", "", "", "", "", "north", "", "", "", ""}, {"c953", "", "", "B", "", "", "", "", "", "north", "", "", "", ""}}},
				map[string]string{"classes": "bulk"},
				`Invalid roster: classes.csv line 3, column sourcedId: "c953" is on line 2 too`},
			{bundle{}, map[string]string{"classes": "bulk"}, `Invalid roster: classes.csv: missing from the bundle, though the manifest names it`},
		} {
			wantErr(post("", c.files.zip(t, c.modes)), c.message)
		}
		wantErr(post("", []byte("PK not a zip")), "Invalid roster: the bundle: not a zip archive")
		wantErr(post("?dryRun=maybe", bulk.zip(t, all)), `Invalid dryRun: expected true or false, got "maybe"`)
		if got := classes(); !reflect.DeepEqual(got, before) {
			t.Error("a refused bundle changed the classes")
		}
		// An imported class answers reports.
		if got := e.reports("chat", key, "classId=c003"); len(got) != 1 {
			t.Errorf("an imported class's report: %+v", got)
		}
	})
}

// sisExport is a bulk bundle shaped like the OneRoster 1.2 standard's
// sample data, as student information systems export it: a district and
// its school (and a school closed, marked tobedeleted), an academic
// session that ended, marked tobedeleted, roles.csv with a teacher who is
// also the district's administrator, and in the bulk files a class and a
// student marked tobedeleted, with enrollments of both.
func sisExport() bundle {
	user := func(id, status, given, family, email string) []string {
		return []string{id, status, "2026-08-20T07:15:00.000Z", "true", email, "", given, family, "", id, email, "", "", "", "07", "", "", "", "", "", "", "sch-1", ""}
	}
	class := func(id, status, title string) []string {
		return []string{id, status, "2026-08-20T07:15:00.000Z", title, "07", "crs-1", id, "scheduled", "", "sch-1", "term-2026", "", "", "1"}
	}
	enrol := func(id, status, class, user, role string) []string {
		return []string{id, status, "2026-08-20T07:15:00.000Z", class, "sch-1", user, role, "", "2026-08-24", "2027-06-18"}
	}
	role := func(id, user, role, org, kind string) []string {
		return []string{id, "", "2026-08-20", kind, user, role, "2026-08-01", "", org, ""}
	}
	return bundle{
		"orgs.csv": {orgsHeader, {"dist-1", "", "2026-08-20T07:15:00.000Z", "Lakeview District", "district", "LD", ""},
			{"sch-1", "", "2026-08-20T07:15:00.000Z", "Lakeview Middle", "school", "LM", "dist-1"},
			{"sch-9", "tobedeleted", "2026-08-20T07:15:00.000Z", "Old Annex", "school", "OA", "dist-1"}},
		"academicSessions.csv": {{"sourcedId", "status", "dateLastModified", "title", "type", "startDate", "endDate", "parentSourcedId", "schoolYear"},
			{"term-2026", "", "2026-08-20T07:15:00.000Z", "2026-2027", "schoolYear", "2026-08-24", "2027-06-18", "", "2027"},
			{"term-2025", "tobedeleted", "2026-08-20T07:15:00.000Z", "2025-2026", "schoolYear", "2025-08-25", "2026-06-19", "", "2026"}},
		"classes.csv": {classesHeader, class("bio-7b", "", "Biology 7B"), class("art-7", "tobedeleted", "Art 7 (2025)")},
		"users.csv": {usersHeader, user("stu-1", "", "Ada", "Baker", "ada@lakeview.example"),
			user("stu-2", "", "Ben", "Cole", "ben@lakeview.example"), user("stu-3", "tobedeleted", "Cy", "Dunn", "cy@lakeview.example"),
			user("tch-1", "", "Rosa", "Ortiz", "rortiz@lakeview.example")},
		"roles.csv": {{"sourcedId", "status", "dateLastModified", "roleType", "userSourcedId", "role", "beginDate", "endDate", "orgSourcedId", "userProfileSourcedId"},
			role("r1", "stu-1", "student", "sch-1", "primary"), role("r2", "stu-2", "student", "sch-1", "primary"),
			role("r3", "tch-1", "teacher", "sch-1", "primary"), role("r4", "tch-1", "administrator", "dist-1", "secondary")},
		"enrollments.csv": {enrollmentsHeader, enrol("e1", "", "bio-7b", "stu-1", "student"), enrol("e2", "active", "bio-7b", "stu-2", "student"),
			enrol("e3", "", "art-7", "stu-1", "student"), enrol("e4", "", "bio-7b", "stu-3", "student"),
			enrol("e5", "tobedeleted", "bio-7b", "stu-2", "student"), enrol("e6", "", "bio-7b", "tch-1", "teacher")},
	}
}

// TestRosterImportWarnsOfLooseDates: a bundle shaped like the standard's
// sample data whose dateLastModified a student information system wrote
// as it pleased (1/05/2023, 15/06/2023) in users.csv, classes.csv and
// enrollments.csv is imported, each such cell a warning naming its file,
// line and column; an enrollment's beginDate, which the service acts on,
// still refuses the bundle.
func TestRosterImportWarnsOfLooseDates(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		e.school("north", "UTC")
		token := e.token()
		modes := map[string]string{"orgs": "bulk", "academicSessions": "bulk", "classes": "bulk", "users": "bulk", "roles": "bulk", "enrollments": "bulk"}
		loose := sisExport()
		loose["users.csv"][1][2], loose["users.csv"][2][2] = "1/05/2023", "15/06/2023"
		loose["classes.csv"][1][2] = "2023-06-15 10:00"
		loose["enrollments.csv"][2][2] = "June 15, 2023"
		resp := e.do("POST", "/v1/admin/groups/north/roster", "", string(loose.zip(t, modes)), "Authorization", "Bearer "+token, "Content-Type", "application/zip")
		if resp.status != 200 {
			t.Fatalf("%d %s", resp.status, resp.body)
		}
		warning := func(file string, line float64, value, expected string) map[string]any {
			return map[string]any{"file": file, "line": line, "column": "dateLastModified",
				"message": fmt.Sprintf("%q is not an ISO 8601 date-time, such as %s; not used, so the row is taken", value, expected)}
		}
		const dateTime = "2026-02-28T09:30:00.000Z"
		want := []any{warning("classes.csv", 2, "2023-06-15 10:00", dateTime), warning("users.csv", 2, "1/05/2023", dateTime),
			warning("users.csv", 3, "15/06/2023", dateTime), warning("enrollments.csv", 3, "June 15, 2023", dateTime)}
		got := resp.json(t)
		if fmt.Sprint(got["warnings"]) != fmt.Sprint(want) || fmt.Sprint(got["studentsAdded"]) != "2" {
			t.Errorf("warnings %v, students added %v;\nwant %v, 2", got["warnings"], got["studentsAdded"], want)
		}
		if students := e.mustCall("GET", "/v1/admin/groups/north/students", token, "", 200)["students"].([]any); len(students) != 2 {
			t.Errorf("students after the import: %v", students)
		}
		loose["enrollments.csv"][1][8] = "24/08/2026"
		resp = e.do("POST", "/v1/admin/groups/north/roster", "", string(loose.zip(t, modes)), "Authorization", "Bearer "+token, "Content-Type", "application/zip")
		if want := `Invalid roster: enrollments.csv line 2, column beginDate: "24/08/2026" is not an ISO 8601 date, such as 2026-02-28`; resp.status != 400 || resp.errorMessage(t) != want {
			t.Errorf("a loose beginDate: %d %s, want 400 %q", resp.status, resp.body, want)
		}
	})
}

// TestRosterImportSkipsDeletedOfBulk: a bulk export of a student
// information system, tobedeleted rows and all, is imported rather than
// refused: those rows, and the enrollments of what they mark, are skipped
// and listed; a class they mark that the group has stays as it is.
func TestRosterImportSkipsDeletedOfBulk(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		e.school("north", "UTC")
		token := e.token()
		post := func(query string, b bundle) map[string]any {
			t.Helper()
			modes := map[string]string{"orgs": "bulk", "academicSessions": "bulk", "classes": "bulk", "users": "bulk", "roles": "bulk", "enrollments": "bulk"}
			resp := e.do("POST", "/v1/admin/groups/north/roster"+query, "", string(b.zip(t, modes)), "Authorization", "Bearer "+token, "Content-Type", "application/zip")
			if resp.status != 200 {
				t.Fatalf("%d %s", resp.status, resp.body)
			}
			return resp.json(t)
		}
		// The group has art-7 already, from last year's roster.
		if _, err := e.platform.AddStudent(ctx, "north", "stu-2", "Ben Cole"); err != nil {
			t.Fatal(err)
		}
		e.mustCall("POST", "/v1/admin/groups/north/classes", token, `{"id": "art-7", "name": "Art 7", "studentIds": ["stu-2"]}`, 201)
		skipped := []any{
			map[string]any{"file": "classes.csv", "line": 3.0, "sourcedId": "art-7", "reason": "tobedeleted in a bulk file"},
			map[string]any{"file": "enrollments.csv", "line": 4.0, "sourcedId": "e3", "reason": "its class art-7 is tobedeleted in a bulk file"},
			map[string]any{"file": "enrollments.csv", "line": 5.0, "sourcedId": "e4", "reason": "its user stu-3 is tobedeleted in a bulk file"},
			map[string]any{"file": "enrollments.csv", "line": 6.0, "sourcedId": "e5", "reason": "tobedeleted in a bulk file"},
			map[string]any{"file": "orgs.csv", "line": 4.0, "sourcedId": "sch-9", "reason": "tobedeleted in a bulk file"},
			map[string]any{"file": "users.csv", "line": 4.0, "sourcedId": "stu-3", "reason": "tobedeleted in a bulk file"},
		}
		want := map[string]any{"dryRun": true, "school": "sch-1", "studentsAdded": 1.0, "studentsRenamed": 0.0, "classesAdded": 1.0,
			"classesChanged": 0.0, "classesDeleted": 0.0, "membersAdded": 2.0, "membersRemoved": 0.0,
			"staffAdded": 1.0, "staffUpdated": 0.0, "staffRemoved": 0.0, "skipped": skipped}
		if got := post("?dryRun=true", sisExport()); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("dry run:\n%v\nwant\n%v", got, want)
		}
		want["dryRun"] = false
		if got := post("", sisExport()); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("import:\n%v\nwant\n%v", got, want)
		}
		got := map[string]any{}
		for _, c := range e.mustCall("GET", "/v1/admin/groups/north/classes", token, "", 200)["classes"].([]any) {
			c := c.(map[string]any)
			got[c["id"].(string)] = fmt.Sprintf("%v %v", c["name"], c["studentIds"])
		}
		if want := map[string]any{"bio-7b": "Biology 7B [stu-1 stu-2]", "art-7": "Art 7 [stu-2]"}; !reflect.DeepEqual(got, want) {
			t.Errorf("classes after the import: %v, want %v", got, want)
		}
		var students []string
		for _, s := range e.mustCall("GET", "/v1/admin/groups/north/students", token, "", 200)["students"].([]any) {
			students = append(students, s.(map[string]any)["id"].(string))
		}
		if !reflect.DeepEqual(students, []string{"stu-1", "stu-2"}) {
			t.Errorf("students %v: the teacher and the student skipped are not students", students)
		}
	})
}
