package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/digest"
	"groupanalytics/internal/digest/mailtest"
)

// TestDistrictDigest sends a district's digest of a week to its
// recipient: its totals and the week before's are its key's reports of
// the same days, each school's row its adoption (the lowest share first,
// with the change of those who used either), the school without a plan
// named; once a week; its unsubscribe link removes the recipient, and
// deleting the district takes its recipients with it.
func TestDistrictDigest(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		d := newDigestEnv(t, e, mailtest.Options{})
		token := e.token()
		for _, g := range []string{"north", "south", "lapsed"} {
			e.school(g, "UTC")
			for i := range 4 {
				e.enrol(g, fmt.Sprintf("%s-%d", g, i), fmt.Sprintf("Student %d", i))
			}
		}
		e.send(
			// The week of 9-15 November: north 3 of 4, south 1 of 4.
			session("north", "north-0", "2026-11-09T10:00:00Z"), message("north", "north-1", "main", "2026-11-10T10:00:00Z"),
			message("north", "north-2", "tutor_me", "2026-11-15T23:00:00Z"), session("south", "south-0", "2026-11-12T10:00:00Z"),
			session("lapsed", "lapsed-0", "2026-11-12T10:00:00Z"),
			// The week before: south 2.
			session("south", "south-1", "2026-11-03T10:00:00Z"), message("south", "south-2", "main", "2026-11-04T10:00:00Z"),
		)
		e.clock.Set(at("UTC", "2026-11-16 07:00"))
		plans, _ := e.platform.Plans(ctx, "lapsed")
		if _, err := e.platform.CancelPlan(ctx, "lapsed", plans[0].ID); err != nil {
			t.Fatal(err)
		}
		key := e.district("river", "UTC", "north", "south", "lapsed")
		base := "/v1/admin/districts/river/digest-recipients"
		e.mustCall("POST", base, token, `{"address": "data@river.example"}`, http.StatusCreated)
		for _, tt := range []struct {
			path, body string
			status     int
			want       string
		}{
			{base, `{"address": "data@river.example"}`, http.StatusConflict, `data@river.example already receives the digest of district "river"`},
			{base, `{"address": "not an address"}`, http.StatusBadRequest, `Invalid address "not an address": expected an email address such as head@school.example`},
			{base, `{"address": "a@river.example", "classId": "c1"}`, http.StatusBadRequest, `Invalid body: unknown field "classId"`},
			{"/v1/admin/districts/nowhere/digest-recipients", `{"address": "a@river.example"}`, http.StatusNotFound, `District "nowhere" not found`},
		} {
			if resp := e.call("POST", tt.path, token, tt.body); resp.status != tt.status || resp.errorMessage(t) != tt.want {
				t.Errorf("POST %s %s: %d %s, want %d %s", tt.path, tt.body, resp.status, resp.body, tt.status, tt.want)
			}
		}

		d.round()
		msgs := d.mail.WaitFor(t, 1, 10*time.Second)
		d.round() // once a week
		if n := len(d.mail.Messages()); n != 1 || msgs[0].To[0] != "data@river.example" {
			t.Fatalf("%d messages, the first to %v; want one to data@river.example", n, msgs[0].To)
		}
		m := parseDigest(t, msgs[0].Data)
		if subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); subject != "District river: the week of 9–15 November 2026" {
			t.Errorf("Subject %q", subject)
		}
		text, page := m.Parts["text/plain"], htmlText(m.Parts["text/html"])
		const week, before = "startDate=2026-11-09&endDate=2026-11-15", "startDate=2026-11-02&endDate=2026-11-08"
		for _, ep := range []string{"live-lecture", "chat"} {
			now, _ := decodeDistrict(t, e.reportRequest(ep, key, week, ""))
			prev, _ := decodeDistrict(t, e.reportRequest(ep, key, before, ""))
			// Every figure is shown: no school hides any.
			values := func(r districtReport) []int64 {
				var out []int64
				for _, m := range r.Data {
					out = append(out, *m.Value)
				}
				return append(out, int64(*r.NumStudentsUsed))
			}
			prevValues := values(prev[0])
			for i, v := range values(now[0]) {
				title := digest.UsersTitle
				if i < len(now[0].Data) {
					title = now[0].Data[i].Title
				}
				change, _ := digest.Change(v, prevValues[i])
				if line := fmt.Sprintf("  %-24s %9d  %s (%d the week before)\n", title, v, change, prevValues[i]); !strings.Contains(text, line) {
					t.Errorf("%s: the text part lacks %q:\n%s", ep, line, text)
				}
			}
		}
		// The schools: the lowest share first, as the adoption API says.
		type row struct {
			SchoolName string
			Enrolled   int
			UsedEither int
			ShareUsed  float64
		}
		var adoption, adoptionBefore struct {
			Total   row
			Schools []row
		}
		json.Unmarshal(e.do("GET", "/api/adoption?"+week, key, "").body, &adoption)
		json.Unmarshal(e.do("GET", "/api/adoption?"+before, key, "").body, &adoptionBefore)
		if len(adoption.Schools) != 2 || adoption.Schools[0].SchoolName != "School north" {
			t.Fatalf("adoption: %+v", adoption)
		}
		line := func(name string, a, b row) string {
			change, _ := digest.Change(int64(a.UsedEither), int64(b.UsedEither))
			return fmt.Sprintf("  %-28s %7d %9d %7s %13s  %s\n", name, a.UsedEither, a.Enrolled, strconv.FormatFloat(math.Round(a.ShareUsed*1000)/10, 'f', 1, 64)+"%", "-", change) // a half up, as the page
		}
		wantSchools := line("School south", adoption.Schools[1], adoptionBefore.Schools[1]) + line("School north", adoption.Schools[0], adoptionBefore.Schools[0]) +
			line("All schools", adoption.Total, adoptionBefore.Total) + "  Left out, without a valid plan: School lapsed.\n"
		if !strings.Contains(text, wantSchools) {
			t.Errorf("the text part lacks the schools\n%s\nin\n%s", wantSchools, text)
		}
		for _, cells := range []string{"School south 1 4 25.0% - ▼ 50%", "School north 3 4 75.0% - new", "All schools 4 8 50.0% - ▲ 100%",
			"Left out, without a valid plan: School lapsed."} {
			if !strings.Contains(page, cells) {
				t.Errorf("the HTML part lacks %q:\n%s", cells, page)
			}
		}
		dashboard := e.server.URL + "/?endDate=2026-11-15&interval=day&startDate=2026-11-09"
		if !strings.Contains(text, dashboard) {
			t.Errorf("the text part lacks the dashboard's link %s", dashboard)
		}

		// Its unsubscribe link removes the district's recipient.
		link, _ := url.Parse(strings.Trim(m.Header.Get("List-Unsubscribe"), "<>"))
		done := e.do("POST", link.Path+"?"+link.RawQuery, "", "List-Unsubscribe=One-Click", "Content-Type", "application/x-www-form-urlencoded")
		if done.status != http.StatusOK || !strings.Contains(string(done.body), "data@river.example will no longer receive the weekly digest of District river") {
			t.Errorf("unsubscribe: %d %s", done.status, done.body)
		}
		if got := e.mustCall("GET", base, token, "", http.StatusOK)["recipients"].([]any); len(got) != 0 {
			t.Errorf("recipients after unsubscribing: %v", got)
		}
		// Listed and removed; the district deleted, its recipients go.
		e.mustCall("POST", base, token, `{"address": "Head@River.Example"}`, http.StatusCreated)
		if got := e.mustCall("GET", base, token, "", http.StatusOK)["recipients"].([]any); len(got) != 1 || got[0].(map[string]any)["address"] != "Head@river.example" {
			t.Errorf("recipients: %v", got)
		}
		e.mustCall("DELETE", base+"/Head@river.example", token, "", http.StatusNoContent)
		if resp := e.call("DELETE", base+"/Head@river.example", token, ""); resp.status != http.StatusNotFound {
			t.Errorf("removed twice: %d %s", resp.status, resp.body)
		}
		e.mustCall("POST", base, token, `{"address": "head@river.example"}`, http.StatusCreated)
		e.mustCall("DELETE", "/v1/admin/districts/river", token, "", http.StatusNoContent)
		if rs, err := e.platform.Directory.DistrictRecipients(ctx, ""); err != nil || len(rs) != 0 {
			t.Errorf("a deleted district's recipients: %v %v", rs, err)
		}
		e.clock.Set(at("UTC", "2026-11-23 07:00"))
		d.round()
		if n := len(d.mail.Messages()); n != 1 {
			t.Errorf("%d messages after the district was deleted, want 1", n)
		}
	})
}
