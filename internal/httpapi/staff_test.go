package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestStaff: a school's staff (teachers with their classes, administrators)
// and a district's (its administrators) added, listed and removed through
// the admin API; each rule of who may be what where is a 400 that says
// so; an email is once per staff, whatever its case; a class deleted
// leaves its teacher's other classes, a school or a district deleted
// takes its staff.
func TestStaff(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		token := e.token()
		e.school("north", "UTC")
		e.school("south", "UTC")
		for _, c := range []string{"c1", "c2"} {
			e.mustCall("POST", "/v1/admin/groups/north/classes", token, `{"id": "`+c+`", "name": "`+c+`"}`, http.StatusCreated)
		}
		e.district("river", "UTC", "north")
		school, district := "/v1/admin/groups/north/staff", "/v1/admin/districts/river/staff"

		teacher := e.mustCall("POST", school, token, `{"email": "Ortiz@North.Example", "name": "Ms Ortiz", "role": "teacher", "classIds": ["c2", "c1", "c2"]}`, http.StatusCreated)
		if teacher["email"] != "ortiz@north.example" || fmt.Sprint(teacher["classIds"]) != "[c1 c2]" || teacher["groupId"] != "north" ||
			teacher["districtId"] != nil || !strings.HasPrefix(teacher["id"].(string), "stf_") {
			t.Errorf("the teacher: %v", teacher)
		}
		head := e.mustCall("POST", school, token, `{"email": "head@north.example", "role": "school-admin"}`, http.StatusCreated)
		if head["name"] != "head@north.example" || fmt.Sprint(head["classIds"]) != "[]" {
			t.Errorf("the school's administrator: %v", head)
		}
		// The same person may be on the district's staff too.
		admin := e.mustCall("POST", district, token, `{"email": "ortiz@north.example", "name": "Ms Ortiz", "role": "district-admin"}`, http.StatusCreated)
		if admin["districtId"] != "river" || admin["groupId"] != nil {
			t.Errorf("the district's administrator: %v", admin)
		}
		for _, tt := range []struct {
			path, body string
			status     int
			want       string
		}{
			{school, `{"email": "ORTIZ@north.example", "role": "school-admin"}`, 409, `ortiz@north.example is on the staff of school "north" already`},
			{district, `{"email": "ortiz@north.example", "role": "district-admin"}`, 409, `ortiz@north.example is on the staff of district "river" already`},
			{school, `{"email": "a@north.example"}`, 400, `Missing role`},
			{school, `{"email": "a@north.example", "role": "principal"}`, 400, `Invalid role "principal": expected one of teacher, school-admin, district-admin`},
			{school, `{"email": "a@north.example", "role": "teacher"}`, 400, `Invalid classIds: a teacher needs at least one class`},
			{school, `{"email": "a@north.example", "role": "school-admin", "classIds": ["c1"]}`, 400, `Invalid classIds: only a teacher has classes; an administrator sees all of theirs`},
			{school, `{"email": "a@north.example", "role": "district-admin"}`, 400, `Invalid role "district-admin": a district administrator is on a district's staff`},
			{district, `{"email": "a@north.example", "role": "teacher", "classIds": ["c1"]}`, 400, `Invalid role "teacher": a district's staff are its administrators (district-admin); a teacher or a school administrator is on a school's staff`},
			{school, `{"email": "a@north.example", "role": "teacher", "classIds": ["c9"]}`, 400, `Invalid classIds: no class "c9" in group "north"`},
			{"/v1/admin/groups/south/staff", `{"email": "a@north.example", "role": "teacher", "classIds": ["c1"]}`, 400, `Invalid classIds: no class "c1" in group "south"`},
			{school, `{"email": "Ms A <a@north.example>", "role": "school-admin"}`, 400, `Invalid address "Ms A <a@north.example>": give the address alone, such as head@school.example`},
			{school, `{"email": "a@north.example", "role": "school-admin", "sourcedId": "x"}`, 400, `Invalid body: unknown field "sourcedId"`},
			{"/v1/admin/groups/nowhere/staff", `{"email": "a@north.example", "role": "school-admin"}`, 404, `Group "nowhere" not found`},
			{"/v1/admin/districts/nowhere/staff", `{"email": "a@north.example", "role": "district-admin"}`, 404, `District "nowhere" not found`},
		} {
			if resp := e.call("POST", tt.path, token, tt.body); resp.status != tt.status || resp.errorMessage(t) != tt.want {
				t.Errorf("POST %s %s: %d %s, want %d %s", tt.path, tt.body, resp.status, resp.body, tt.status, tt.want)
			}
		}
		list := func(path string) []string {
			var out []string
			for _, m := range e.mustCall("GET", path, token, "", http.StatusOK)["staff"].([]any) {
				m := m.(map[string]any)
				out = append(out, fmt.Sprint(m["email"], " ", m["role"], " ", m["classIds"]))
			}
			return out
		}
		if got := fmt.Sprint(list(school)); got != "[head@north.example school-admin [] ortiz@north.example teacher [c1 c2]]" {
			t.Errorf("the school's staff: %s", got)
		}
		if got := fmt.Sprint(list(district)); got != "[ortiz@north.example district-admin []]" {
			t.Errorf("the district's staff: %s", got)
		}
		// A class deleted leaves the teacher's others.
		e.mustCall("DELETE", "/v1/admin/groups/north/classes/c1", token, "", http.StatusNoContent)
		if got := fmt.Sprint(list(school)); got != "[head@north.example school-admin [] ortiz@north.example teacher [c2]]" {
			t.Errorf("after c1 was deleted: %s", got)
		}
		e.mustCall("DELETE", "/v1/admin/staff/"+head["id"].(string), token, "", http.StatusNoContent)
		for _, id := range []string{head["id"].(string), "stf_nope", "nope"} {
			if resp := e.call("DELETE", "/v1/admin/staff/"+id, token, ""); resp.status != http.StatusNotFound ||
				resp.errorMessage(t) != fmt.Sprintf("Staff member %q not found", id) {
				t.Errorf("DELETE staff %s: %d %s", id, resp.status, resp.body)
			}
		}
		// A district or a school deleted takes its staff.
		e.mustCall("DELETE", "/v1/admin/districts/river", token, "", http.StatusNoContent)
		e.mustCall("POST", "/v1/admin/districts", token, `{"id": "river"}`, http.StatusCreated)
		if got := list(district); len(got) != 0 {
			t.Errorf("a deleted district's staff: %v", got)
		}
		e.mustCall("DELETE", "/v1/admin/groups/north", token, "", http.StatusNoContent)
		e.school("north", "UTC")
		if got := list(school); len(got) != 0 {
			t.Errorf("a deleted school's staff: %v", got)
		}
	})
}

// TestSignInProviders: a school's and a district's sign-in providers
// added, listed (never their secrets) and removed through the admin API;
// a bad issuer, client or domain list is a 400 that says so.
func TestSignInProviders(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		token := e.token()
		e.school("north", "UTC")
		e.district("river", "UTC", "north")
		school, district := "/v1/admin/groups/north/sign-in-providers", "/v1/admin/districts/river/sign-in-providers"
		const good = `"issuer": "https://accounts.google.com", "clientId": "abc", "clientSecret": "s3cret-value", "skipDiscovery": true`
		got := e.mustCall("POST", district, token, `{"id": "river-google", "name": "Google", `+good+`, "emailDomains": ["River.Example", "north.river.example", "river.example"]}`, http.StatusCreated)
		if fmt.Sprint(got["emailDomains"]) != "[north.river.example river.example]" || got["districtId"] != "river" || got["groupId"] != nil || got["clientSecret"] != nil {
			t.Errorf("added: %v", got)
		}
		e.mustCall("POST", school, token, `{"id": "north-test", "issuer": "http://127.0.0.1:9998", "clientId": "abc", "clientSecret": "x", "emailDomains": ["north.example"], "skipDiscovery": true}`, http.StatusCreated)
		for _, tt := range []struct {
			body   string
			status int
			want   string
		}{
			{`{"id": "river-google", ` + good + `, "emailDomains": ["river.example"]}`, 409, `Sign-in provider "river-google" already exists`},
			{`{"id": "bad id", ` + good + `, "emailDomains": ["river.example"]}`, 400, `Invalid provider id "bad id": expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`},
			{`{"id": "p", "issuer": "http://accounts.google.com", "clientId": "a", "clientSecret": "b", "emailDomains": ["river.example"]}`, 400, `Invalid issuer "http://accounts.google.com": expected https (http only on loopback, for a test)`},
			{`{"id": "p", "issuer": "https://idp.example/?tenant=1", "clientId": "a", "clientSecret": "b", "emailDomains": ["river.example"]}`, 400, `Invalid issuer "https://idp.example/?tenant=1": an issuer has no query or fragment`},
			{`{"id": "p", "clientId": "a", "clientSecret": "b", "emailDomains": ["river.example"]}`, 400, `Missing issuer`},
			{`{"id": "p", "issuer": "https://idp.example", "clientSecret": "b", "emailDomains": ["river.example"]}`, 400, `Missing clientId`},
			{`{"id": "p", "issuer": "https://idp.example", "clientId": "a", "emailDomains": ["river.example"]}`, 400, `Missing clientSecret`},
			{`{"id": "p", ` + good + `}`, 400, `Missing emailDomains: name the domains of the staff's emails, such as lakeland.k12.example`},
			{`{"id": "p", ` + good + `, "emailDomains": ["@river.example"]}`, 400, `Invalid emailDomains: "@river.example" is not a domain such as lakeland.k12.example`},
			{`{"id": "p", ` + good + `, "emailDomains": ["localhost"]}`, 400, `Invalid emailDomains: "localhost" is not a domain such as lakeland.k12.example`},
		} {
			if resp := e.call("POST", district, token, tt.body); resp.status != tt.status || resp.errorMessage(t) != tt.want {
				t.Errorf("POST %s: %d %s, want %d %s", tt.body, resp.status, resp.body, tt.status, tt.want)
			}
		}
		list := e.call("GET", district, token, "")
		if list.status != http.StatusOK || strings.Contains(string(list.body), "s3cret") || !strings.Contains(string(list.body), `"id":"river-google"`) {
			t.Errorf("the district's providers: %d %s", list.status, list.body)
		}
		if got := e.mustCall("GET", school, token, "", http.StatusOK)["providers"].([]any); len(got) != 1 || got[0].(map[string]any)["issuer"] != "http://127.0.0.1:9998" {
			t.Errorf("the school's providers: %v", got)
		}
		e.mustCall("DELETE", "/v1/admin/sign-in-providers/river-google", token, "", http.StatusNoContent)
		if resp := e.call("DELETE", "/v1/admin/sign-in-providers/river-google", token, ""); resp.status != http.StatusNotFound {
			t.Errorf("removed twice: %d %s", resp.status, resp.body)
		}
		// A school deleted takes its providers.
		e.mustCall("DELETE", "/v1/admin/groups/north", token, "", http.StatusNoContent)
		e.school("north", "UTC")
		if got := e.mustCall("GET", school, token, "", http.StatusOK)["providers"].([]any); len(got) != 0 {
			t.Errorf("a deleted school's providers: %v", got)
		}
	})
}
