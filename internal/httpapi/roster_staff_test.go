package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
)

// TestRosterStaff: a roster import brings the school's teachers (with the
// classes they teach) and administrators, by email; a delta that deletes
// one takes them off the staff and ends their session at once; a bulk
// file that no longer names one does too, and leaves the operator's own.
func TestRosterStaff(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		e.school("north", "UTC")
		token := e.token()
		post := func(b bundle, modes map[string]string) map[string]any {
			t.Helper()
			return e.importRoster("/v1/admin/groups/north/roster", token, b, modes)
		}
		staff := func() string {
			t.Helper()
			list, err := e.platform.StaffOf(ctx, "north", "")
			if err != nil {
				t.Fatal(err)
			}
			var out string
			for _, m := range list {
				out += fmt.Sprintf("%s %s %s %v|", m.Email, m.Role, m.SourcedID, m.ClassIDs)
			}
			return out
		}
		if _, err := e.platform.AddStaff(ctx, analytics.Staff{Email: "own@lakeview.example", Role: analytics.RoleSchoolAdmin, GroupID: "north"}); err != nil {
			t.Fatal(err)
		}
		export := sisExport()
		export["users.csv"] = append(export["users.csv"],
			[]string{"adm-1", "", "2026-08-20T07:15:00.000Z", "true", "head", "", "Hana", "Head", "", "adm-1", "Head@Lakeview.example", "", "", "", "", "", "", "", "", "", "", "sch-1", ""},
			[]string{"tch-2", "", "2026-08-20T07:15:00.000Z", "true", "noemail", "", "No", "Mail", "", "tch-2", "", "", "", "", "", "", "", "", "", "", "", "sch-1", ""})
		export["roles.csv"] = append(export["roles.csv"], []string{"r5", "", "2026-08-20", "primary", "adm-1", "administrator", "2026-08-01", "", "sch-1", ""},
			[]string{"r6", "", "2026-08-20", "primary", "tch-2", "teacher", "2026-08-01", "", "sch-1", ""})
		bulk := map[string]string{"orgs": "bulk", "academicSessions": "bulk", "classes": "bulk", "users": "bulk", "roles": "bulk", "enrollments": "bulk"}
		staffFigures := func(res map[string]any) string {
			return fmt.Sprintf("%v added, %v updated, %v removed", res["staffAdded"], res["staffUpdated"], res["staffRemoved"])
		}
		if res := post(export, bulk); staffFigures(res) != "2 added, 0 updated, 0 removed" {
			t.Errorf("first import: %v, want 2 staff added (the teacher without an email left out)", res)
		}
		want := "head@lakeview.example school-admin adm-1 []|own@lakeview.example school-admin  []|rortiz@lakeview.example teacher tch-1 [bio-7b]|"
		if got := staff(); got != want {
			t.Errorf("staff after the import:\n%s\nwant\n%s", got, want)
		}
		if res := post(export, bulk); staffFigures(res) != "0 added, 0 updated, 0 removed" {
			t.Errorf("the same import again: %v, want no staff change", res)
		}

		// The teacher signed in; a delta deletes her: signed out.
		if _, err := e.platform.AddProvider(ctx, analytics.Provider{ID: "lv", Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s",
			GroupID: "north", EmailDomains: []string{"lakeview.example"}}, true); err != nil {
			t.Fatal(err)
		}
		list, _ := e.platform.StaffOf(ctx, "north", "")
		teacher := list[2]
		if err := e.store.OpenSession(ctx, analytics.Session{TokenHash: analytics.HashSecret("gas_teacher"), Staff: teacher, ProviderID: "lv",
			Created: testNow, Expires: testNow.Add(time.Hour), Idle: time.Hour}); err != nil {
			t.Fatal(err)
		}
		me := func() response { return e.do("GET", "/api/me", "", "", "Cookie", "ga_session=gas_teacher") }
		if r := me(); r.status != http.StatusOK || r.json(t)["kind"] != "teacher" {
			t.Fatalf("the teacher's session: %d %s", r.status, r.body)
		}
		gone := bundle{"users.csv": {usersHeader, {"tch-1", "tobedeleted", "2026-09-01T07:15:00.000Z", "true", "rortiz", "", "Rosa", "Ortiz", "", "tch-1",
			"rortiz@lakeview.example", "", "", "", "", "", "", "", "", "", "", "sch-1", ""}},
			"roles.csv": export["roles.csv"][:1]}
		if res := post(gone, map[string]string{"users": "delta", "roles": "delta"}); staffFigures(res) != "0 added, 0 updated, 1 removed" {
			t.Errorf("the delta: %v, want 1 staff member removed", res)
		}
		if r := me(); r.status != http.StatusForbidden {
			t.Errorf("the session of a teacher the roster deleted: %d, want 403", r.status)
		}

		// A bulk file without the administrator: she goes; the operator's
		// own stays.
		export["users.csv"] = export["users.csv"][:len(export["users.csv"])-2]
		if res := post(export, bulk); staffFigures(res) != "1 added, 0 updated, 1 removed" {
			t.Errorf("a bulk import without the administrator: %v, want her removed and the teacher back", res)
		}
		want = "own@lakeview.example school-admin  []|rortiz@lakeview.example teacher tch-1 [bio-7b]|"
		if got := staff(); got != want {
			t.Errorf("staff after the bulk import:\n%s\nwant\n%s", got, want)
		}
	})
}

// TestDistrictRosterStaff: a district's bundle brings its administrators
// (role administrator at the district) to the district's staff, beside
// each school's teachers; a delta that deletes one takes both away.
func TestDistrictRosterStaff(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		if _, err := e.platform.CreateDistrict(ctx, "lv", "Lakeview", "UTC"); err != nil {
			t.Fatal(err)
		}
		token := e.token()
		post := func(b bundle, modes map[string]string) map[string]any {
			t.Helper()
			return e.importRoster("/v1/admin/districts/lv/roster", token, b, modes)
		}
		staffOf := func(group, district string) string {
			t.Helper()
			list, err := e.platform.StaffOf(ctx, group, district)
			if err != nil {
				t.Fatal(err)
			}
			var out string
			for _, m := range list {
				out += fmt.Sprintf("%s %s %v|", m.Email, m.Role, m.ClassIDs)
			}
			return out
		}
		bulk := map[string]string{"orgs": "bulk", "academicSessions": "bulk", "classes": "bulk", "users": "bulk", "roles": "bulk", "enrollments": "bulk"}
		res := post(sisExport(), bulk)
		if got := fmt.Sprint(res["districtStaff"]); got != "map[staffAdded:1 staffRemoved:0 staffUpdated:0]" {
			t.Errorf("the district's staff from the import: %s, want its administrator added", got)
		}
		if got := staffOf("", "lv"); got != "rortiz@lakeview.example district-admin []|" {
			t.Errorf("the district's staff: %q", got)
		}
		if got := staffOf("sch-1", ""); got != "rortiz@lakeview.example teacher [bio-7b]|" {
			t.Errorf("the school's staff: %q", got)
		}
		gone := bundle{"users.csv": {usersHeader, {"tch-1", "tobedeleted", "2026-09-01T07:15:00.000Z", "true", "rortiz", "", "Rosa", "Ortiz", "", "tch-1",
			"rortiz@lakeview.example", "", "", "", "", "", "", "", "", "", "", "sch-1", ""}},
			"orgs.csv": sisExport()["orgs.csv"][:3]}
		res = post(gone, map[string]string{"users": "delta", "orgs": "bulk"})
		if got := fmt.Sprint(res["districtStaff"]); got != "map[staffAdded:0 staffRemoved:1 staffUpdated:0]" {
			t.Errorf("the district's staff after the delta: %s, want its administrator removed", got)
		}
		if got := staffOf("", "lv") + staffOf("sch-1", ""); got != "" {
			t.Errorf("staff left after the delta: %q", got)
		}
	})
}

// importRoster posts a bundle to a roster endpoint (a school's or a
// district's), and returns its answer, which must be a 200.
func (e *testEnv) importRoster(path, token string, b bundle, modes map[string]string) map[string]any {
	e.t.Helper()
	r := e.do("POST", path, "", string(b.zip(e.t, modes)), "Authorization", "Bearer "+token, "Content-Type", "application/zip")
	if r.status != http.StatusOK {
		e.t.Fatalf("roster import: %d %s", r.status, r.body)
	}
	return r.json(e.t)
}
