package httpapi_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
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
