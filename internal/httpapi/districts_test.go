package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

// districtReport is one report of a district's answer: the district's sum,
// or a school's (schoolId and schoolName set). A hidden figure is nil.
type districtReport struct {
	StartDate       string       `json:"startDate"`
	EndDate         string       `json:"endDate"`
	SchoolID        *string      `json:"schoolId,omitempty"`
	SchoolName      *string      `json:"schoolName,omitempty"`
	NumStudentsUsed *int64       `json:"numStudentsUsed"`
	Data            []cellMetric `json:"data"`
}

type cellMetric struct {
	Title string `json:"title"`
	Value *int64 `json:"value"`
}

type leftOutSchool struct {
	SchoolID   string `json:"schoolId"`
	SchoolName string `json:"schoolName"`
	Reason     string `json:"reason"`
}

// decodeDistrict decodes a district's answer, failing the test unless it
// is a 200 of exactly the documented fields.
func decodeDistrict(t *testing.T, resp response) ([]districtReport, []leftOutSchool) {
	t.Helper()
	if resp.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", resp.status, resp.body)
	}
	var env struct {
		Success        bool             `json:"success"`
		Reports        []districtReport `json:"reports"`
		SchoolsLeftOut []leftOutSchool  `json:"schoolsLeftOut"`
	}
	dec := json.NewDecoder(bytes.NewReader(resp.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || !env.Success || env.Reports == nil || env.SchoolsLeftOut == nil {
		t.Fatalf("bad district envelope: %v\n%s", err, resp.body)
	}
	return env.Reports, env.SchoolsLeftOut
}

// district makes a district in zone of the schools, and returns a key of it.
func (e *testEnv) district(id, zone string, schools ...string) string {
	e.t.Helper()
	if _, err := e.platform.CreateDistrict(ctx, id, "District "+id, zone); err != nil {
		e.t.Fatal(err)
	}
	for _, g := range schools {
		if err := e.platform.AttachSchool(ctx, id, g); err != nil {
			e.t.Fatal(err)
		}
	}
	_, secret, err := e.platform.CreateDistrictKey(ctx, id, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// refDistrictQuery is a district's question: the schools it adds up (or
// shows one by one), in the district's zone.
type refDistrictQuery struct {
	endpoint, interval string
	schools            []string // asked; nil: all
	perSchool          bool
	first, last        time.Time
}

// answerDistrict computes the district's answer from the schools' brute
// force answers: each school's figures of the same local dates, added up
// or shown one by one (by name, then id), the bounds told in loc.
func (m *refModel) answerDistrict(q refDistrictQuery, loc *time.Location, names map[string]string) []districtReport {
	schools := slices.Clone(q.schools)
	slices.SortFunc(schools, func(a, b string) int {
		if names[a] != names[b] {
			return strings.Compare(names[a], names[b])
		}
		return strings.Compare(a, b)
	})
	var out []districtReport
	perSchool := map[string][]report{}
	for _, g := range schools {
		perSchool[g] = m.answer(refQuery{group: g, endpoint: q.endpoint, interval: q.interval, first: q.first, last: q.last})
	}
	periods, _ := refPeriods(q.first, q.last, q.interval)
	for i, p := range periods {
		start, end := p.bounds(loc)
		sum := districtReport{StartDate: start, EndDate: end, NumStudentsUsed: new(int64), Data: cells(make([]metric, len(titlesOf(q.endpoint))), q.endpoint)}
		for _, g := range schools {
			r := perSchool[g][i]
			if q.perSchool {
				id, name := g, names[g]
				used := int64(*r.NumStudentsUsed)
				out = append(out, districtReport{StartDate: start, EndDate: end, SchoolID: &id, SchoolName: &name, NumStudentsUsed: &used, Data: cells(r.Data, q.endpoint)})
				continue
			}
			*sum.NumStudentsUsed += int64(*r.NumStudentsUsed)
			for j, m := range r.Data {
				*sum.Data[j].Value += m.Value
			}
		}
		if !q.perSchool {
			out = append(out, sum)
		}
	}
	return out
}

func titlesOf(endpoint string) []string {
	if endpoint == "live-lecture" {
		return liveLectureTitles
	}
	return chatTitles
}

// cells copies metrics, titled as endpoint's.
func cells(ms []metric, endpoint string) []cellMetric {
	out := make([]cellMetric, len(ms))
	for i, m := range ms {
		v := m.Value
		out[i] = cellMetric{titlesOf(endpoint)[i], &v}
	}
	return out
}

// TestDistrictsAgainstBruteForce: a district's answers, summed and school
// by school, equal the brute force over each school's raw events, for
// random ranges, intervals and schools asked, on every store; also after a
// student is erased and a school detached.
func TestDistrictsAgainstBruteForce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, stores storetest.Stores) {
		e := newEnv(t, stores)
		rng := rand.New(rand.NewPCG(7, 59))
		m := &refModel{zones: map[string]*time.Location{}, events: map[string][]refEvent{}, seen: map[string]bool{},
			names: map[string]map[string]string{}, keys: map[string]string{}, classes: map[string]map[string][]string{}}
		names := map[string]string{"s-b": "Brook Middle", "s-a": "Zephyr High", "s-c": "Brook Middle", "s-d": "Ash Elementary"}
		schools := []string{"s-b", "s-a", "s-c", "s-d"}
		for _, g := range schools {
			zone := diffZones[rng.IntN(len(diffZones))]
			if _, err := e.platform.CreateGroup(ctx, g, names[g], zone); err != nil {
				t.Fatal(err)
			}
			if _, err := e.platform.AddPlan(ctx, g, "2024-01-01", "", 0); err != nil {
				t.Fatal(err)
			}
			m.zones[g], _ = time.LoadLocation(zone)
		}
		districtZone := "America/Chicago"
		loc, _ := time.LoadLocation(districtZone)
		key := e.district("d1", districtZone, schools...)
		var sent []platform.EventInput
		for _, g := range schools {
			for i := range 300 + rng.IntN(300) {
				// Students' ids repeat across schools: each school's is its own.
				in := platform.EventInput{ID: fmt.Sprintf("%s-%05d", g, i), GroupID: g, StudentID: fmt.Sprintf("s%02d", rng.IntN(25)),
					OccurredAt: randomTime(rng, m.zones[g]).Format(time.RFC3339Nano), Kind: "chat.message_sent",
					ChatType: []string{"tutor_me", "test", "flashcard", "material", "live_lecture", "main"}[rng.IntN(6)]}
				if rng.IntN(4) == 0 {
					in.Kind, in.ChatType = "live_lecture.session_created", ""
				}
				sent = append(sent, in)
			}
		}
		// The last events of each school come after the first answers.
		var later []platform.EventInput
		for i := len(sent) - 1; i >= 0; i -= 37 {
			later = append(later, sent[i])
			sent = slices.Delete(sent, i, i+1)
		}
		sendAll := func(sent []platform.EventInput) {
			for len(sent) > 0 {
				n := min(len(sent), 1+rng.IntN(300))
				e.send(sent[:n]...)
				for _, in := range sent[:n] {
					m.apply(in)
				}
				sent = sent[n:]
			}
		}
		sendAll(sent)
		earliest := time.Date(2024, 12, 15, 0, 0, 0, 0, time.UTC)
		// Every check asks the same questions first: the engine keeps each
		// school's figures of a period, and a change must reach them.
		check := func(label string, attached []string) {
			t.Helper()
			rng := rand.New(rand.NewPCG(7, 60))
			for i := range 40 {
				q := refDistrictQuery{endpoint: []string{"live-lecture", "chat"}[rng.IntN(2)], interval: []string{"", "day", "week", "month"}[rng.IntN(4)],
					perSchool: rng.IntN(2) == 0, schools: attached}
				q.first = earliest.AddDate(0, 0, rng.IntN(int(testNow.Sub(earliest).Hours()/24)-20))
				q.last = q.first.AddDate(0, 0, []int{0, 1 + rng.IntN(10), 10 + rng.IntN(50), 60 + rng.IntN(340)}[rng.IntN(4)])
				values := url.Values{"startDate": {q.first.Format(time.DateOnly)}, "endDate": {q.last.Format(time.DateOnly)}}
				if q.interval != "" {
					values.Set("interval", q.interval)
				}
				if q.perSchool {
					values.Set("schools", []string{"true", "TRUE"}[rng.IntN(2)])
				}
				if rng.IntN(2) == 0 {
					q.schools = nil
					for _, g := range attached {
						if rng.IntN(2) == 0 {
							q.schools = append(q.schools, g)
							values.Add("schoolId", g)
						}
					}
				}
				if len(q.schools) == 0 {
					q.schools = attached
					values.Del("schoolId")
				}
				got, leftOut := decodeDistrict(t, e.reportRequest(q.endpoint, key, values.Encode(), ""))
				want := m.answerDistrict(q, loc, names)
				if len(leftOut) != 0 || !reflect.DeepEqual(got, want) {
					gj, _ := json.MarshalIndent(got, "", " ")
					wj, _ := json.MarshalIndent(want, "", " ")
					t.Fatalf("%s query %d: %+v ?%s\n%s", label, i, q, values.Encode(), firstDiff(gj, wj))
				}
			}
		}
		check("", schools)
		sendAll(later)
		check("after more events", schools)
		// A school's zone changed: its days are cut anew.
		if _, err := e.platform.SetTimeZone(ctx, "s-b", "Pacific/Auckland"); err != nil {
			t.Fatal(err)
		}
		m.zones["s-b"], _ = time.LoadLocation("Pacific/Auckland")
		check("after a zone change", schools)
		// A student erased in one school leaves the others' of that id.
		e.mustCall("DELETE", "/v1/admin/groups/s-a/students/s03", e.token(), "", http.StatusNoContent)
		m.events["s-a"] = slices.DeleteFunc(m.events["s-a"], func(ev refEvent) bool { return ev.student == "s03" })
		delete(m.names["s-a"], "s03")
		check("after an erasure", schools)
		if err := e.platform.DetachSchool(ctx, "d1", "s-c"); err != nil {
			t.Fatal(err)
		}
		check("after a school detached", []string{"s-b", "s-a", "s-d"})
		resp := e.reportRequest("chat", key, "schoolId=s-c", "")
		if msg := resp.errorMessage(t); resp.status != http.StatusBadRequest || msg != `Invalid schoolId: no school "s-c" in this district` {
			t.Errorf("a detached school asked: %d %s", resp.status, msg)
		}
		if stores.Shards != nil {
			// A school moved to another shard: the district reads it there.
			loads, err := stores.Shards.Loads(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range loads {
				if !slices.Contains(l.Groups, "s-b") {
					if _, err := stores.Shards.MoveGroup(ctx, "s-b", l.Shard); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			check("after a school moved", []string{"s-b", "s-a", "s-d"})
		}
		// A retention cut of one school: the district's answers keep to the
		// days it keeps, and refuse those before, naming it.
		if _, err := e.platform.SetRetention(ctx, "s-d", "400d"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.platform.ExpireUsage(ctx, testNow); err != nil {
			t.Fatal(err)
		}
		today, _ := time.Parse(time.DateOnly, testNow.In(m.zones["s-d"]).Format(time.DateOnly))
		firstKept := today.AddDate(0, 0, -399)
		m.events["s-d"] = slices.DeleteFunc(m.events["s-d"], func(ev refEvent) bool {
			day, _ := time.Parse(time.DateOnly, ev.at.In(m.zones["s-d"]).Format(time.DateOnly))
			return day.Before(firstKept)
		})
		resp = e.reportRequest("chat", key, "startDate="+firstKept.AddDate(0, 0, -1).Format(time.DateOnly), "")
		if msg := resp.errorMessage(t); resp.status != http.StatusBadRequest || !strings.Contains(msg, `the first day school "s-d" keeps`) {
			t.Errorf("a range before a school's cut: %d %s", resp.status, msg)
		}
		earliest = firstKept
		check("after a retention cut", []string{"s-b", "s-a", "s-d"})
		// A school deleted and made again under its id is another school,
		// whatever was kept of the old one.
		e.mustCall("DELETE", "/v1/admin/groups/s-d", e.token(), "", http.StatusNoContent)
		if _, err := e.platform.CreateGroup(ctx, "s-d", names["s-d"], "UTC"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.platform.AddPlan(ctx, "s-d", "2024-01-01", "", 0); err != nil {
			t.Fatal(err)
		}
		if err := e.platform.AttachSchool(ctx, "d1", "s-d"); err != nil {
			t.Fatal(err)
		}
		m.zones["s-d"], m.events["s-d"], m.names["s-d"] = time.UTC, nil, nil
		var again []platform.EventInput
		for i := range 30 {
			again = append(again, platform.EventInput{ID: fmt.Sprintf("again-%02d", i), GroupID: "s-d", StudentID: fmt.Sprintf("s%02d", rng.IntN(25)),
				OccurredAt: randomTime(rng, time.UTC).Format(time.RFC3339Nano), Kind: "live_lecture.session_created"})
		}
		sendAll(again)
		check("after a school made again", []string{"s-b", "s-a", "s-d"})
	})
}

// TestDistrictAdministration: districts made, renamed, given schools and
// keys, and deleted through the admin API; a deleted district leaves its
// schools, and its keys stop working.
func TestDistrictAdministration(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		token := e.token()
		e.school("north", "UTC")
		e.school("south", "UTC")
		got := e.mustCall("POST", "/v1/admin/districts", token, `{"id": "river", "name": "River District", "timeZone": "America/Chicago"}`, http.StatusCreated)
		if got["timeZone"] != "America/Chicago" || len(got["schoolIds"].([]any)) != 0 {
			t.Errorf("created: %v", got)
		}
		for _, tt := range []struct{ body, want string }{
			{`{"id": "river"}`, `District "river" already exists`},
			{`{"id": "bad id"}`, `Invalid district id "bad id": expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`},
			{`{"id": "lake", "timeZone": "Mars/Olympus"}`, `Invalid timeZone "Mars/Olympus": expected an IANA time zone such as America/Chicago`},
		} {
			if resp := e.call("POST", "/v1/admin/districts", token, tt.body); resp.errorMessage(t) != tt.want {
				t.Errorf("%s: %d %s", tt.body, resp.status, resp.body)
			}
		}
		e.mustCall("PUT", "/v1/admin/districts/river/schools/north", token, "", http.StatusOK)
		got = e.mustCall("PUT", "/v1/admin/districts/river/schools/north", token, "", http.StatusOK) // again: nothing changes
		if fmt.Sprint(got["schoolIds"]) != "[north]" {
			t.Errorf("schools: %v", got["schoolIds"])
		}
		e.mustCall("POST", "/v1/admin/districts", token, `{"id": "lake"}`, http.StatusCreated)
		if resp := e.call("PUT", "/v1/admin/districts/lake/schools/north", token, ""); resp.status != http.StatusConflict ||
			resp.errorMessage(t) != `Group "north" is in district "river" already; detach it from there first` {
			t.Errorf("a school in two districts: %d %s", resp.status, resp.body)
		}
		if resp := e.call("PUT", "/v1/admin/districts/river/schools/nowhere", token, ""); resp.status != http.StatusNotFound {
			t.Errorf("an unknown school attached: %d %s", resp.status, resp.body)
		}
		e.mustCall("PUT", "/v1/admin/districts/river/schools/south", token, "", http.StatusOK)
		if g := e.mustCall("GET", "/v1/admin/groups/south", token, "", http.StatusOK); g["districtId"] != "river" {
			t.Errorf("the group's district: %v", g)
		}
		e.mustCall("PATCH", "/v1/admin/districts/river", token, `{"name": "Riverside"}`, http.StatusOK)
		got = e.mustCall("GET", "/v1/admin/districts/river", token, "", http.StatusOK)
		if got["name"] != "Riverside" || fmt.Sprint(got["schoolIds"]) != "[north south]" {
			t.Errorf("district: %v", got)
		}
		if list := e.mustCall("GET", "/v1/admin/districts", token, "", http.StatusOK); len(list["districts"].([]any)) != 2 {
			t.Errorf("districts: %v", list)
		}
		created := e.mustCall("POST", "/v1/admin/districts/river/keys", token, `{"label": "data office"}`, http.StatusCreated)
		key := created["key"].(string)
		if !strings.HasPrefix(key, "gad_") || created["districtId"] != "river" {
			t.Errorf("created key: %v", created)
		}
		if keys := e.mustCall("GET", "/v1/admin/districts/river/keys", token, "", http.StatusOK)["keys"].([]any); len(keys) != 1 || keys[0].(map[string]any)["key"] != nil {
			t.Errorf("keys: %v", keys)
		}
		decodeDistrict(t, e.reportRequest("chat", key, "", ""))
		e.mustCall("DELETE", "/v1/admin/districts/river/schools/south", token, "", http.StatusNoContent)
		if resp := e.call("DELETE", "/v1/admin/districts/river/schools/south", token, ""); resp.status != http.StatusNotFound {
			t.Errorf("detached twice: %d %s", resp.status, resp.body)
		}
		e.mustCall("DELETE", "/v1/admin/districts/river", token, "", http.StatusNoContent)
		if resp := e.reportRequest("chat", key, "", ""); resp.status != http.StatusForbidden {
			t.Errorf("a deleted district's key: %d %s", resp.status, resp.body)
		}
		if g := e.mustCall("GET", "/v1/admin/groups/north", token, "", http.StatusOK); g["districtId"] != nil {
			t.Errorf("a deleted district's school: %v", g)
		}
		k2 := e.mustCall("POST", "/v1/admin/districts/lake/keys", token, `{}`, http.StatusCreated)
		e.mustCall("DELETE", "/v1/admin/districts/lake/keys/"+k2["id"].(string), token, "", http.StatusNoContent)
		if resp := e.call("DELETE", "/v1/admin/districts/lake/keys/dkey_nope", token, ""); resp.status != http.StatusNotFound {
			t.Errorf("an unknown key revoked: %d", resp.status)
		}
	})
}

// TestDistrictIsolation tries a district's key and its schools' keys on
// each other's data: a district sees its own schools only, whichever way
// another school is named; a school's key never reaches its district or a
// sibling; a school without a plan is left out and named; a district with
// no school with a plan, or a revoked key, is the 403 of any bad key.
func TestDistrictIsolation(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		northKey := e.school("north", "UTC")
		e.school("south", "UTC")
		e.school("lapsed", "UTC")
		e.school("elsewhere", "UTC")
		e.send(session("north", "n1", "2026-11-20T10:00:00Z"), session("south", "s1", "2026-11-20T10:00:00Z"),
			session("elsewhere", "e1", "2026-11-20T10:00:00Z"), session("lapsed", "l1", "2026-11-20T10:00:00Z"))
		plans, _ := e.platform.Plans(ctx, "lapsed")
		if _, err := e.platform.CancelPlan(ctx, "lapsed", plans[0].ID); err != nil {
			t.Fatal(err)
		}
		key := e.district("river", "UTC", "north", "south", "lapsed")
		e.district("lake", "UTC", "elsewhere")
		got, leftOut := decodeDistrict(t, e.reportRequest("live-lecture", key, "startDate=2026-11-01", ""))
		if *got[0].NumStudentsUsed != 2 || fmt.Sprint(leftOut) != "[{lapsed School lapsed no valid plan}]" {
			t.Errorf("district: %+v left out %v", got, leftOut)
		}
		want := `{"kind":"district","district":{"id":"river","name":"District river","timeZone":"UTC"},"schools":[{"id":"north","name":"School north","timeZone":"UTC"},{"id":"south","name":"School south","timeZone":"UTC"}],"schoolsLeftOut":[{"schoolId":"lapsed","schoolName":"School lapsed","reason":"no valid plan"}]}`
		if resp := e.do("GET", "/api/me", key, ""); resp.status != http.StatusOK || strings.TrimSpace(string(resp.body)) != want {
			t.Errorf("GET /api/me: %d %s, want %s", resp.status, resp.body, want)
		}
		resp := e.reportRequest("live-lecture", key, "schools=true&startDate=2026-11-01", "")
		if resp.header.Get("Schools-Left-Out") != "lapsed" {
			t.Errorf("Schools-Left-Out: %q", resp.header.Get("Schools-Left-Out"))
		}
		if got, _ := decodeDistrict(t, resp); len(got) != 2 || *got[0].SchoolID != "north" || *got[1].SchoolID != "south" {
			t.Errorf("schools=true: %+v", got)
		}
		notHere := `Invalid schoolId: no school %q in this district`
		for _, tt := range []struct{ query, want string }{
			{"schoolId=elsewhere", fmt.Sprintf(notHere, "elsewhere")},
			{"schoolId=nowhere", fmt.Sprintf(notHere, "nowhere")},
			{"schoolId=North", fmt.Sprintf(notHere, "North")},
			{"schoolId=north&schoolId=elsewhere", fmt.Sprintf(notHere, "elsewhere")},
			{"schoolId=elsewhere&students=true", fmt.Sprintf(notHere, "elsewhere")},
			{"schoolId=north&schoolId=north", `Invalid schoolId: "north" is given twice`},
			{"schoolId=", "Missing params"},
			{"students=true", "Missing schoolId: students=true and classId ask one school's own reports; name the school with one schoolId"},
			{"classId=c1", "Missing schoolId: students=true and classId ask one school's own reports; name the school with one schoolId"},
			{"students=true&schoolId=north&schoolId=south", "Missing schoolId: students=true and classId ask one school's own reports; name the school with one schoolId"},
			{"students=true&schools=true&schoolId=north", "Invalid schools: schools=true gives each school's group report; students=true and classId ask one school's own reports, named with one schoolId"},
			{"students=true&schoolId=lapsed", `Invalid schoolId: school "lapsed" has no valid plan now, so its reports are not available`},
			{"schools=maybe", `Invalid schools: expected true or false, got "maybe"`},
		} {
			resp := e.reportRequest("chat", key, tt.query, "")
			if resp.status != http.StatusBadRequest || resp.errorMessage(t) != tt.want {
				t.Errorf("?%s: %d %s, want %s", tt.query, resp.status, resp.body, tt.want)
			}
		}
		if resp := e.reportRequest("chat", key, "", `{"schoolId": ["elsewhere"], "schools": true}`); resp.status != http.StatusBadRequest {
			t.Errorf("another district's school in the body: %d %s", resp.status, resp.body)
		}
		// A school's key takes no district parameter.
		for _, query := range []string{"schoolId=south", "schools=true", "schoolId=north"} {
			if resp := e.reportRequest("chat", northKey, query, ""); resp.status != http.StatusBadRequest ||
				!strings.Contains(resp.errorMessage(t), "for a district's key, and this key is a school's") {
				t.Errorf("a school's key with ?%s: %d %s", query, resp.status, resp.body)
			}
		}
		if resp := e.do("GET", "/api/classes?schoolId=south", northKey, ""); resp.status != http.StatusBadRequest {
			t.Errorf("a school's key asking a sibling's classes: %d %s", resp.status, resp.body)
		}
		// A school's own reports, through the district's key, as its own
		// key gets them, and in its access log under the district's key.
		mine := e.reports("chat", northKey, "students=true")
		theirs := e.reports("chat", key, "students=true&schoolId=north")
		if !reflect.DeepEqual(mine, theirs) {
			t.Errorf("a school's student reports through the district's key:\n%+v\nwant %+v", theirs, mine)
		}
		entries, _ := e.accessLog("/api/access-log?schoolId=north", key, "")
		if len(entries) != 2 {
			t.Fatalf("north's access log: %v", entries)
		}
		if k := entries[0]["key"].(map[string]any); k["district"] != "river" || k["label"] != "test" || !strings.HasPrefix(k["id"].(string), "dkey_") {
			t.Errorf("the district's key in the school's log: %v", k)
		}
		if entries, _ := e.accessLog("/api/access-log", northKey, ""); len(entries) != 2 {
			t.Errorf("north's own key reads %d entries", len(entries))
		}
		if resp := e.do("GET", "/api/access-log?schoolId=elsewhere", key, ""); resp.status != http.StatusBadRequest {
			t.Errorf("another district's school's log: %d %s", resp.status, resp.body)
		}
		if resp := e.do("GET", "/api/classes?schoolId=north", key, ""); resp.status != http.StatusOK || !strings.Contains(string(resp.body), `"forClasses":false`) {
			t.Errorf("a school's classes through the district's key: %d %s", resp.status, resp.body)
		}
		if resp := e.do("GET", "/api/classes", key, ""); resp.status != http.StatusBadRequest {
			t.Errorf("a district's key's classes without a school: %d %s", resp.status, resp.body)
		}
		// Every plan ended: the district's key is a bad key like any other.
		for _, g := range []string{"north", "south"} {
			plans, _ := e.platform.Plans(ctx, g)
			if _, err := e.platform.CancelPlan(ctx, g, plans[0].ID); err != nil {
				t.Fatal(err)
			}
		}
		if resp := e.reportRequest("chat", key, "", ""); resp.status != http.StatusForbidden || resp.errorMessage(t) != "Unauthorized" {
			t.Errorf("a district without a valid plan: %d %s", resp.status, resp.body)
		}
	})
}

// TestDistrictSmallCells: a school's minCellSize holds in its district's
// views. Its figures of too few students are hidden, and so is the
// smallest other school's where one school alone would follow from the
// district's sum (or, with no other school to hide, the sum); a sum over
// some of the schools shows a figure only when it holds none or all of
// those hiding it.
func TestDistrictSmallCells(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		for _, g := range []string{"a", "b", "c"} {
			e.school(g, "UTC")
		}
		if _, err := e.platform.SetMinCellSize(ctx, "a", 5); err != nil {
			t.Fatal(err)
		}
		key := e.district("river", "UTC", "a", "b", "c")
		at := "2026-11-20T10:00:00Z"
		e.send(message("a", "a1", "tutor_me", at), message("a", "a2", "tutor_me", at))
		figures := func(query string) [][]any {
			if !strings.Contains(query, "startDate") {
				query += "&startDate=2026-11-01"
			}
			got, _ := decodeDistrict(t, e.reportRequest("chat", key, query, ""))
			var out [][]any
			for _, r := range got {
				row := []any{}
				if r.SchoolID != nil {
					row = append(row, *r.SchoolID)
				}
				for _, v := range []*int64{r.Data[0].Value, r.Data[1].Value, r.Data[2].Value, r.NumStudentsUsed} {
					if v == nil {
						row = append(row, "hidden")
					} else {
						row = append(row, *v)
					}
				}
				out = append(out, row)
			}
			return out
		}
		// a alone used it: nothing else to hide, so the district's sum is.
		// Columns: Total Messages, Tutor Me Messages, Test Messages, numStudentsUsed.
		for query, want := range map[string]string{
			"schools=true": "[[a hidden hidden 0 hidden] [b 0 0 0 0] [c 0 0 0 0]]",
			"":             "[[hidden hidden 0 hidden]]",
			"schoolId=b":   "[[0 0 0 0]]",
		} {
			if got := fmt.Sprint(figures(query)); got != want {
				t.Errorf("a alone, ?%s: %s, want %s", query, got, want)
			}
		}
		var batch []platform.EventInput
		for i := range 10 {
			s := fmt.Sprint("b", i)
			batch = append(batch, message("b", s, "tutor_me", at), message("b", s, "tutor_me", at), message("b", s, "test", at))
		}
		for i := range 3 {
			batch = append(batch, message("c", fmt.Sprint("c", i), "tutor_me", at))
		}
		e.send(batch...)
		for query, want := range map[string]string{
			// c, the smallest, is hidden with a; the sum is shown.
			"schools=true":          "[[a hidden hidden 0 hidden] [b 30 20 10 10] [c hidden hidden 0 hidden]]",
			"":                      "[[35 25 10 15]]",
			"schoolId=a&schoolId=c": "[[5 5 0 5]]",
			"schoolId=a&schoolId=b": "[[hidden hidden 10 hidden]]",
			"schoolId=b&schoolId=c": "[[hidden hidden 10 hidden]]",
			"schoolId=a":            "[[hidden hidden 0 hidden]]",
			"schoolId=b":            "[[30 20 10 10]]",
			"schools=true&interval=day&startDate=2026-11-20&endDate=2026-11-21": "[[a hidden hidden 0 hidden] [b 30 20 10 10] [c hidden hidden 0 hidden] [a 0 0 0 0] [b 0 0 0 0] [c 0 0 0 0]]",
		} {
			if got := fmt.Sprint(figures(query)); got != want {
				t.Errorf("?%s: %s, want %s", query, got, want)
			}
		}
		// Adoption: a's students who used it hidden, c's with them, the total shown.
		resp := e.do("GET", "/api/adoption?startDate=2026-11-01", key, "")
		var adoption struct {
			Total   map[string]any   `json:"total"`
			Schools []map[string]any `json:"schools"`
		}
		json.Unmarshal(resp.body, &adoption)
		var used []any
		for _, s := range adoption.Schools {
			used = append(used, s["schoolId"], s["usedEither"], s["shareUsed"])
		}
		if fmt.Sprint(used) != "[a <nil> <nil> b 10 1 c <nil> <nil>]" || adoption.Total["usedEither"] != float64(15) {
			t.Errorf("adoption with small cells: %s", resp.body)
		}
		// The school's own key still sees its students, as ever.
		if got := e.reports("chat", e.key("a"), "students=true&startDate=2026-11-01"); len(got) != 2 || got[0].value("Tutor Me Messages") != 1 {
			t.Errorf("a's own student reports: %+v", got)
		}
	})
}

// TestAdoptionAgainstBruteForce: a district's adoption, each school's and
// the total, equals counts over the raw events and the rosters, for random
// ranges, on every store; and a school's key gets its own.
func TestAdoptionAgainstBruteForce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, stores storetest.Stores) {
		e := newEnv(t, stores)
		rng := rand.New(rand.NewPCG(3, 11))
		m := &refModel{zones: map[string]*time.Location{}, events: map[string][]refEvent{}, seen: map[string]bool{},
			names: map[string]map[string]string{}, keys: map[string]string{}, classes: map[string]map[string][]string{}}
		seats := map[string]int{"p": 30, "q": 0, "r": 12}
		for _, g := range []string{"p", "q", "r"} {
			zone := diffZones[rng.IntN(len(diffZones))]
			if _, err := e.platform.CreateGroup(ctx, g, "School "+g, zone); err != nil {
				t.Fatal(err)
			}
			if _, err := e.platform.AddPlan(ctx, g, "2024-01-01", "", seats[g]); err != nil {
				t.Fatal(err)
			}
			m.zones[g], _ = time.LoadLocation(zone)
			m.names[g] = map[string]string{}
			for s := range 5 {
				id := fmt.Sprint("idle", s)
				e.enrol(g, id, id)
				m.names[g][id] = id
			}
			var batch []platform.EventInput
			for i := range 200 {
				in := platform.EventInput{ID: fmt.Sprint(g, i), GroupID: g, StudentID: fmt.Sprintf("s%02d", rng.IntN(20)),
					OccurredAt: randomTime(rng, m.zones[g]).Format(time.RFC3339Nano), Kind: "chat.message_sent",
					ChatType: []string{"tutor_me", "live_lecture", "main"}[rng.IntN(3)]}
				if rng.IntN(3) == 0 {
					in.Kind, in.ChatType = "live_lecture.session_created", ""
				}
				batch = append(batch, in)
				m.apply(in)
			}
			e.send(batch...)
		}
		key := e.district("d", "UTC", "p", "q", "r")
		// Each check asks the same ranges: what the engine keeps of them
		// must follow the changes between.
		check := func(label string) {
			t.Helper()
			rng := rand.New(rand.NewPCG(3, 12))
			for i := range 30 {
				first := time.Date(2024, 12, 15, 0, 0, 0, 0, time.UTC).AddDate(0, 0, rng.IntN(700))
				last := first.AddDate(0, 0, rng.IntN(200))
				query := "startDate=" + first.Format(time.DateOnly) + "&endDate=" + last.Format(time.DateOnly)
				resp := e.do("GET", "/api/adoption?"+query, key, "")
				if resp.status != http.StatusOK {
					t.Fatalf("?%s: %d %s", query, resp.status, resp.body)
				}
				var got struct {
					Total   map[string]any   `json:"total"`
					Schools []map[string]any `json:"schools"`
				}
				json.Unmarshal(resp.body, &got)
				var sumEnrolled, sumEither int
				for j, g := range []string{"p", "q", "r"} {
					ll, chat, either := map[string]bool{}, map[string]bool{}, map[string]bool{}
					for _, ev := range m.events[g] {
						day, _ := time.Parse(time.DateOnly, ev.at.In(m.zones[g]).Format(time.DateOnly))
						if day.Before(first) || day.After(last) {
							continue
						}
						either[ev.student] = true
						if ev.kind == "live_lecture.session_created" || ev.chatType == "live_lecture" {
							ll[ev.student] = true
						}
						if ev.kind == "chat.message_sent" {
							chat[ev.student] = true
						}
					}
					s := got.Schools[j]
					want := fmt.Sprint(g, len(m.names[g]), len(ll), len(chat), len(either))
					if have := fmt.Sprint(s["schoolId"], s["enrolled"], s["usedLiveLecture"], s["usedChat"], s["usedEither"]); have != want {
						t.Fatalf("%s query %d ?%s school %s: %s, want %s", label, i, query, g, have, want)
					}
					if seats[g] > 0 && (s["seats"] != float64(seats[g]) || s["overSeats"] != (len(either) > seats[g])) {
						t.Fatalf("school %s seats: %v", g, s)
					}
					if seats[g] == 0 && (s["seats"] != nil || s["overSeats"] != nil || s["seatsUsedShare"] != nil) {
						t.Fatalf("school %s without seats: %v", g, s)
					}
					sumEnrolled += len(m.names[g])
					sumEither += len(either)
				}
				if got.Total["enrolled"] != float64(sumEnrolled) || got.Total["usedEither"] != float64(sumEither) || got.Total["seats"] != nil {
					t.Fatalf("total: %v, want enrolled %d, used %d, no seats (q says none)", got.Total, sumEnrolled, sumEither)
				}
			}
		}
		check("")
		// A student erased and new events: the same ranges again.
		e.mustCall("DELETE", "/v1/admin/groups/p/students/s03", e.token(), "", http.StatusNoContent)
		m.events["p"] = slices.DeleteFunc(m.events["p"], func(ev refEvent) bool { return ev.student == "s03" })
		delete(m.names["p"], "s03")
		var more []platform.EventInput
		for i := range 50 {
			in := platform.EventInput{ID: fmt.Sprint("q-more", i), GroupID: "q", StudentID: fmt.Sprintf("s%02d", 20+rng.IntN(10)),
				OccurredAt: randomTime(rng, m.zones["q"]).Format(time.RFC3339Nano), Kind: "live_lecture.session_created"}
			more = append(more, in)
			m.apply(in)
		}
		e.send(more...)
		check("after an erasure and more events")
		// A school's own key: its school alone; CSV; a teacher's key refused.
		resp := e.do("GET", "/api/adoption?startDate=2025-01-01&format=csv", e.key("p"), "")
		if lines := strings.Split(strings.TrimSpace(string(resp.body)), "\r\n"); resp.status != http.StatusOK || len(lines) != 3 ||
			!strings.HasPrefix(lines[1], "2025-01-01T00:00:00.000Z") && !strings.Contains(lines[1], ",p,School p,25,") {
			t.Errorf("a school's adoption as CSV: %d %q", resp.status, resp.body)
		}
		if got := resp.header.Get("Content-Disposition"); !strings.HasPrefix(got, `attachment; filename="p-adoption-2025-01-01-to-`) {
			t.Errorf("a school's adoption CSV is named %q", got)
		}
		if got := e.do("GET", "/api/adoption?startDate=2025-01-01&endDate=2025-01-31&format=csv", key, "").header.Get("Content-Disposition"); got != `attachment; filename="d-adoption-2025-01-01-to-2025-01-31.csv"` {
			t.Errorf("a district's adoption CSV is named %q", got)
		}
		if resp := e.do("GET", "/api/adoption?schoolId=q", e.key("p"), ""); resp.status != http.StatusBadRequest {
			t.Errorf("a school's key naming another school: %d %s", resp.status, resp.body)
		}
	})
}

// districtBundle is a district's bulk bundle: 20 schools of 30 classes,
// 10,000 students each in three classes of their school (one in ten also
// in a class of the next school), and a teacher a class. It returns each
// school's classes' students.
func districtBundle(rng *rand.Rand) (bundle, map[string]map[string][]string) {
	b := bundle{"orgs.csv": {orgsHeader, {"d1", "", "", "District", "district", "", ""}},
		"classes.csv": {classesHeader}, "users.csv": {usersHeader}, "enrollments.csv": {enrollmentsHeader}}
	members := map[string]map[string][]string{}
	school := func(i int) string { return fmt.Sprintf("sch%02d", i%20+1) }
	for s := range 20 {
		b["orgs.csv"] = append(b["orgs.csv"], []string{school(s), "", "", "School " + school(s), "school", "", "d1"})
		members[school(s)] = map[string][]string{}
		for c := range 30 {
			id := fmt.Sprintf("%s-c%02d", school(s), c)
			b["classes.csv"] = append(b["classes.csv"], []string{id, "", "", "Class " + id, "09", "", "", "scheduled", "", school(s), "", "", "", ""})
			b["users.csv"] = append(b["users.csv"], []string{"t-" + id, "", "", "true", "t-" + id, "", "Teacher", id, "", "", "", "", "", "", "", "", "", "", "", "", "", school(s), ""})
			b["enrollments.csv"] = append(b["enrollments.csv"], []string{"te-" + id, "", "", id, school(s), "t-" + id, "teacher", "", "", ""})
		}
	}
	enrol := func(s int, class, user string) {
		b["enrollments.csv"] = append(b["enrollments.csv"], []string{fmt.Sprintf("e%06d", len(b["enrollments.csv"])), "", "", class, school(s), user, "student", "", "", ""})
		members[school(s)][class] = append(members[school(s)][class], user)
	}
	for u := range 10_000 {
		id, s := fmt.Sprintf("u%05d", u), u%20
		b["users.csv"] = append(b["users.csv"], []string{id, "", "", "true", id, "", "Given" + id, "Family", "", "", "", "", "", "", "09", "", "", "", "", "", "", school(s), ""})
		for _, c := range rng.Perm(30)[:3] {
			enrol(s, fmt.Sprintf("%s-c%02d", school(s), c), id)
		}
		if u%10 == 0 {
			enrol(s+1, fmt.Sprintf("%s-c%02d", school(s+1), rng.IntN(30)), id)
		}
	}
	for _, classes := range members {
		for c := range classes {
			slices.Sort(classes[c])
		}
	}
	return b, members
}

// TestDistrictRosterImport: a district's bundle of 20 schools, 600 classes
// and 10,000 students through the admin API on every store, all or
// nothing: refused whole while one of its schools is another district's,
// a dry run that changes nothing, the import making the schools it lacks
// and putting each in the district with its classes and students, a
// delta, and a broken bundle refused with nothing changed.
func TestDistrictRosterImport(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		token := e.token()
		b, members := districtBundle(rand.New(rand.NewPCG(5, 8)))
		bulk := map[string]string{"orgs": "bulk", "classes": "bulk", "users": "bulk", "enrollments": "bulk"}
		e.school("sch01", "UTC")
		e.school("sch02", "UTC")
		e.district("river", "America/Chicago")
		e.district("other", "UTC", "sch02")
		post := func(query string, zip []byte) response {
			return e.do("POST", "/v1/admin/districts/river/roster"+query, "", string(zip), "Authorization", "Bearer "+token, "Content-Type", "application/zip")
		}
		resp := post("", b.zip(t, bulk))
		if resp.status != http.StatusConflict || !strings.Contains(resp.errorMessage(t), `school "sch02" is group "sch02" of district "other"`) {
			t.Fatalf("a school of another district: %d %s", resp.status, resp.body)
		}
		if _, err := e.platform.Group(ctx, "sch03"); err == nil {
			t.Fatal("a refused import made a school")
		}
		if err := e.platform.DetachSchool(ctx, "other", "sch02"); err != nil {
			t.Fatal(err)
		}
		resp = post("?dryRun=true", b.zip(t, bulk))
		if resp.status != http.StatusOK || !strings.Contains(string(resp.body), `"dryRun":true`) {
			t.Fatalf("dry run: %d %s", resp.status, resp.body)
		}
		if _, err := e.platform.Group(ctx, "sch03"); err == nil {
			t.Fatal("a dry run made a school")
		}
		resp = post("", b.zip(t, bulk))
		var res struct {
			Schools []struct {
				GroupID       string `json:"groupId"`
				Created       bool   `json:"created"`
				StudentsAdded int    `json:"studentsAdded"`
				ClassesAdded  int    `json:"classesAdded"`
			} `json:"schools"`
		}
		if err := json.Unmarshal(resp.body, &res); err != nil || resp.status != http.StatusOK || len(res.Schools) != 20 {
			t.Fatalf("import: %d %s", resp.status, resp.body)
		}
		if res.Schools[0].Created || res.Schools[1].Created || !res.Schools[2].Created || res.Schools[2].ClassesAdded != 30 {
			t.Errorf("schools made: %+v", res.Schools[:3])
		}
		d, err := e.platform.District(ctx, "river")
		if err != nil || len(d.Schools) != 20 {
			t.Fatalf("the district's schools: %v %v", d.Schools, err)
		}
		for school, classes := range members {
			got, err := e.platform.Classes(ctx, school)
			if err != nil || len(got) != 30 {
				t.Fatalf("%s: %d classes, %v", school, len(got), err)
			}
			for _, c := range got {
				if !slices.Equal(c.Members, classes[c.ID]) {
					t.Fatalf("%s class %s: %d members, want %d", school, c.ID, len(c.Members), len(classes[c.ID]))
				}
			}
		}
		if g, _ := e.platform.Group(ctx, "sch07"); g.TimeZone != "America/Chicago" || g.Name != "School sch07" {
			t.Errorf("a school made: %+v", g)
		}
		// A delta: a class of sch05 deleted, a student renamed.
		delta := bundle{"classes.csv": {classesHeader, {"sch05-c00", "tobedeleted", "2026-11-20", "Class sch05-c00", "09", "", "", "scheduled", "", "sch05", "", "", "", ""}},
			"users.csv": {usersHeader, {"u00004", "active", "2026-11-20", "true", "u00004", "", "Renamed", "Student", "", "", "", "", "", "", "09", "", "", "", "", "", "", "sch05", ""}},
			"orgs.csv":  b["orgs.csv"]}
		resp = post("", delta.zip(t, map[string]string{"orgs": "bulk", "classes": "delta", "users": "delta"}))
		if resp.status != http.StatusOK {
			t.Fatalf("delta: %d %s", resp.status, resp.body)
		}
		if _, err := e.platform.Class(ctx, "sch05", "sch05-c00"); analytics.ErrorCode(err) != analytics.NotFound {
			t.Errorf("the deleted class: %v", err)
		}
		if names := e.studentNames("sch05", token); names["u00004"] != "Renamed Student" {
			t.Errorf("the renamed student: %q", names["u00004"])
		}
		// Broken: nothing of it is imported, in any school.
		broken := bundle{"classes.csv": {classesHeader, {"sch09-new", "active", "2026-11-20", "", "09", "", "", "scheduled", "", "sch09", "", "", "", ""}},
			"orgs.csv": b["orgs.csv"]}
		resp = post("", broken.zip(t, map[string]string{"orgs": "bulk", "classes": "delta"}))
		if resp.status != http.StatusBadRequest || !strings.Contains(resp.errorMessage(t), "classes.csv line 2, column title") {
			t.Errorf("broken: %d %s", resp.status, resp.body)
		}
	})
}
