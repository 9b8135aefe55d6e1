package httpapi_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

// useLine is one student's line of GET /api/last-use.
type useLine struct {
	StudentID       string  `json:"studentId"`
	StudentName     string  `json:"studentName"`
	Status          string  `json:"status"`
	LastUsed        *string `json:"lastUsed"`
	DaysSince       *int    `json:"daysSince"`
	LastLiveLecture *string `json:"lastLiveLecture"`
	LastChat        *string `json:"lastChat"`
}

type useList struct {
	Today         string         `json:"today"`
	InactiveAfter int            `json:"inactiveAfter"`
	Counts        map[string]int `json:"counts"`
	Students      []useLine      `json:"students"`
}

func (e *testEnv) lastUse(key, query string) useList {
	e.t.Helper()
	resp := e.do("GET", "/api/last-use?"+query, key, "")
	if resp.status != http.StatusOK {
		e.t.Fatalf("GET /api/last-use?%s: %d %s", query, resp.status, resp.body)
	}
	var l useList
	if err := json.Unmarshal(resp.body, &l); err != nil {
		e.t.Fatal(err)
	}
	return l
}

// refLastUse is the list as a brute force over the raw events tells it:
// the students of group (of members, when not nil), on the local date of
// now, stopped after n days.
func (m *refModel) refLastUse(group string, members []string, now time.Time, n int) useList {
	loc := m.zones[group]
	date := func(t time.Time) string { return t.In(loc).Format(time.DateOnly) }
	today := date(now)
	live, chat := map[string]string{}, map[string]string{}
	for _, ev := range m.events[group] {
		d := date(ev.at)
		if (ev.kind == "live_lecture.session_created" || ev.chatType == "live_lecture") && d > live[ev.student] {
			live[ev.student] = d
		}
		if ev.kind == "chat.message_sent" && d > chat[ev.student] {
			chat[ev.student] = d
		}
	}
	l := useList{Today: today, InactiveAfter: n, Counts: map[string]int{"never": 0, "stopped": 0, "active": 0}}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	for id, name := range m.names[group] {
		if members != nil && !slices.Contains(members, id) {
			continue
		}
		u := useLine{StudentID: id, StudentName: name, Status: "never", LastLiveLecture: opt(live[id]), LastChat: opt(chat[id]),
			LastUsed: opt(max(live[id], chat[id]))}
		if u.LastUsed != nil {
			a, _ := time.Parse(time.DateOnly, *u.LastUsed)
			b, _ := time.Parse(time.DateOnly, today)
			days := max(0, int(b.Sub(a).Hours()/24+0.5))
			u.DaysSince, u.Status = &days, "active"
			if days >= n {
				u.Status = "stopped"
			}
		}
		l.Counts[u.Status]++
		l.Students = append(l.Students, u)
	}
	since := func(u useLine) int {
		if u.DaysSince == nil {
			return 1 << 30
		}
		return *u.DaysSince
	}
	slices.SortFunc(l.Students, func(a, b useLine) int {
		return cmp.Or(cmp.Compare(since(b), since(a)), strings.Compare(a.StudentName, b.StudentName), strings.Compare(a.StudentID, b.StudentID))
	})
	return l
}

// TestLastUseAgainstBruteForce: every student's last day of use of each
// endpoint, the days since and their status, for several days counted
// as stopped and several todays, equal a brute force over the raw
// events, also after more events, an erasure, a change of zone, a move
// to another shard and a retention cut, on every store.
func TestLastUseAgainstBruteForce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, stores storetest.Stores) {
		e := newEnv(t, stores)
		rng := rand.New(rand.NewPCG(61, 7))
		m := &refModel{zones: map[string]*time.Location{}, events: map[string][]refEvent{}, seen: map[string]bool{},
			names: map[string]map[string]string{}, keys: map[string]string{}, classes: map[string]map[string][]string{}}
		groups := []string{"p", "q"}
		sendSome := func(g, prefix string, n int, near time.Time) {
			var batch []platform.EventInput
			for i := range n {
				at := randomTime(rng, m.zones[g])
				if !near.IsZero() {
					at = near.Add(-time.Duration(rng.IntN(20*24*3600)) * time.Second)
				}
				in := platform.EventInput{ID: fmt.Sprint(prefix, i), GroupID: g, StudentID: fmt.Sprintf("s%02d", rng.IntN(25)),
					OccurredAt: at.Format(time.RFC3339Nano), Kind: "chat.message_sent",
					ChatType: []string{"tutor_me", "live_lecture", "main", "test"}[rng.IntN(4)]}
				if rng.IntN(3) == 0 {
					in.Kind, in.ChatType = "live_lecture.session_created", ""
				}
				batch = append(batch, in)
				m.apply(in)
			}
			e.send(batch...)
		}
		for _, g := range groups {
			zone := diffZones[rng.IntN(len(diffZones))]
			m.keys[g] = e.school(g, zone)
			m.zones[g], _ = time.LoadLocation(zone)
			m.names[g] = map[string]string{}
			for s := range 4 {
				id := fmt.Sprint("idle", s)
				e.enrol(g, id, fmt.Sprint("Idle ", 3-s))
				m.names[g][id] = fmt.Sprint("Idle ", 3-s)
			}
			sendSome(g, g, 300, time.Time{})
		}
		members := []string{"idle1", "s01", "s02", "s03", "s05", "s08", "s13", "s21"}
		e.mustCall("POST", "/v1/admin/groups/p/classes", e.token(), `{"id": "c1", "name": "Class 1", "studentIds": ["`+strings.Join(members, `", "`)+`"]}`, 201)
		check := func(label string) {
			t.Helper()
			for _, g := range groups {
				for _, ask := range []struct {
					days  int
					n     int
					query string
				}{{0, 7, ""}, {3, 1, "inactiveAfter=1"}, {-40, 30, "inactiveAfter=30"}, {-200, 200, "inactiveAfter=200"}, {12, 7, "format=json"}} {
					now := testNow.AddDate(0, 0, ask.days)
					e.clock.Set(now)
					want := m.refLastUse(g, nil, now, ask.n)
					if got := e.lastUse(m.keys[g], ask.query); !equalJSON(got, want) {
						t.Fatalf("%s: school %s on %s, stopped after %d days: %s", label, g, want.Today, ask.n, firstDiff(indented(got), indented(want)))
					}
					if g == "p" {
						want := m.refLastUse(g, members, now, ask.n)
						if got := e.lastUse(m.keys[g], ask.query+"&classId=c1"); !equalJSON(got, want) {
							t.Fatalf("%s: class c1 on %s, stopped after %d days: %s", label, want.Today, ask.n, firstDiff(indented(got), indented(want)))
						}
					}
				}
			}
			e.clock.Set(testNow)
		}
		check("")
		// More events, some of them the latest of their students.
		sendSome("p", "p-more", 80, testNow)
		sendSome("q", "q-more", 40, time.Time{})
		check("after more events")
		e.mustCall("DELETE", "/v1/admin/groups/p/students/s05", e.token(), "", http.StatusNoContent)
		m.events["p"] = slices.DeleteFunc(m.events["p"], func(ev refEvent) bool { return ev.student == "s05" })
		delete(m.names["p"], "s05")
		members = slices.DeleteFunc(members, func(id string) bool { return id == "s05" })
		check("after an erasure")
		zone := "Pacific/Kiritimati"
		e.mustCall("PATCH", "/v1/admin/groups/q", e.token(), `{"timeZone": "`+zone+`"}`, http.StatusOK)
		m.zones["q"], _ = time.LoadLocation(zone)
		check("after a change of zone")
		if stores.Shards != nil {
			loads, err := stores.Shards.Loads(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range loads {
				if !slices.Contains(l.Groups, "p") {
					if _, err := stores.Shards.MoveGroup(ctx, "p", l.Shard); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			check("after a move to another shard")
			sendSome("p", "p-moved", 30, testNow)
			check("after events on the new shard")
		}
		if _, err := e.platform.SetRetention(ctx, "p", "120d"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.platform.ExpireUsage(ctx, testNow); err != nil {
			t.Fatal(err)
		}
		today, _ := time.Parse(time.DateOnly, testNow.In(m.zones["p"]).Format(time.DateOnly))
		firstKept := today.AddDate(0, 0, -119).Format(time.DateOnly)
		m.events["p"] = slices.DeleteFunc(m.events["p"], func(ev refEvent) bool {
			return ev.at.In(m.zones["p"]).Format(time.DateOnly) < firstKept
		})
		check("after a retention cut")
		// The group's own setting, for an answer without inactiveAfter.
		e.mustCall("PATCH", "/v1/admin/groups/p", e.token(), `{"inactiveAfter": 14}`, http.StatusOK)
		if got, want := e.lastUse(m.keys["p"], "status=stopped,never"), m.refLastUse("p", nil, testNow, 14); got.InactiveAfter != 14 ||
			len(got.Students) != want.Counts["stopped"]+want.Counts["never"] || !equalJSON(got.Counts, want.Counts) {
			t.Fatalf("the group's inactiveAfter 14 and status=stopped,never: %s, want counts %v", mustJSON(got), want.Counts)
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func indented(v any) []byte {
	b, _ := json.MarshalIndent(v, "", " ")
	return b
}

func equalJSON(a, b any) bool { return string(mustJSON(a)) == string(mustJSON(b)) }

// TestLastUseIsolation: a teacher's key lists its classes' students only,
// a school's key never another school's, a district's key one of its own
// schools named with schoolId; every answer leaves an access log entry
// under its key, and refusals leave none.
func TestLastUseIsolation(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		northKey := e.school("north", "UTC")
		e.school("south", "UTC")
		e.school("elsewhere", "UTC")
		e.send(session("north", "n1", "2026-11-20T10:00:00Z"), session("north", "n2", "2026-11-01T10:00:00Z"),
			message("north", "n3", "main", "2026-11-21T09:00:00Z"), session("south", "s1", "2026-11-20T10:00:00Z"),
			session("elsewhere", "e1", "2026-11-20T10:00:00Z"))
		e.enrol("north", "n4", "Never Used")
		e.mustCall("POST", "/v1/admin/groups/north/classes", e.token(), `{"id": "c1", "name": "C1", "studentIds": ["n2", "n4"]}`, 201)
		e.mustCall("POST", "/v1/admin/groups/north/classes", e.token(), `{"id": "c2", "name": "C2", "studentIds": ["n3"]}`, 201)
		teacher := e.mustCall("POST", "/v1/admin/groups/north/keys", e.token(), `{"label": "Ms C1", "classIds": ["c1"]}`, 201)["key"].(string)
		district := e.district("river", "UTC", "north", "south")
		e.district("lake", "UTC", "elsewhere")
		ids := func(l useList) string {
			var out []string
			for _, u := range l.Students {
				out = append(out, u.StudentID+":"+u.Status)
			}
			return strings.Join(out, " ")
		}
		for _, tt := range []struct{ key, query, want string }{
			{northKey, "", "n4:never n2:stopped n1:active n3:active"},
			{northKey, "status=stopped&status=never", "n4:never n2:stopped"},
			{northKey, "classId=c2", "n3:active"},
			{teacher, "", "n4:never n2:stopped"},
			{teacher, "classId=c1&status=active", ""},
			{district, "schoolId=north&status=active", "n1:active n3:active"},
			{district, "schoolId=south", "s1:active"},
		} {
			if got := ids(e.lastUse(tt.key, tt.query)); got != tt.want {
				t.Errorf("?%s: %q, want %q", tt.query, got, tt.want)
			}
		}
		for _, tt := range []struct{ key, query, want string }{
			{teacher, "classId=c2", `Invalid classId: no class "c2" in this group`},
			{northKey, "classId=c9", `Invalid classId: no class "c9" in this group`},
			{northKey, "schoolId=south", "Invalid schoolId: it is for a district's key, and this key is a school's"},
			{district, "", "Missing schoolId: a district's key names the school with one schoolId"},
			{district, "schoolId=elsewhere", `Invalid schoolId: no school "elsewhere" in this district`},
			{district, "schoolId=north&schoolId=south", "Missing schoolId: a district's key names the school with one schoolId"},
			{northKey, "inactiveAfter=0", `Invalid inactiveAfter: expected a number of days from 1 to 366, got "0"`},
			{northKey, "inactiveAfter=x", `Invalid inactiveAfter: expected a number of days from 1 to 366, got "x"`},
			{northKey, "status=stopped,gone", `Invalid status: expected never, stopped or active, got "gone"`},
			{northKey, "startDate=2026-11-01", `Unknown parameter "startDate": expected classId, status, inactiveAfter, format, schoolId`},
			{northKey, "format=xml", `Invalid format: expected json or csv, got "xml"`},
			{northKey, "classId=", "Missing params"},
		} {
			if resp := e.do("GET", "/api/last-use?"+tt.query, tt.key, ""); resp.status != http.StatusBadRequest || resp.errorMessage(t) != tt.want {
				t.Errorf("?%s: %d %s, want 400 %s", tt.query, resp.status, resp.body, tt.want)
			}
		}
		if resp := e.do("GET", "/api/last-use", "gak_NOTAKEYNOTAKEYNOTAKEYNOTA", ""); resp.status != http.StatusForbidden {
			t.Errorf("a bad key: %d %s", resp.status, resp.body)
		}
		// CSV: a row a student, days of no use empty.
		resp := e.do("GET", "/api/last-use?format=csv&status=never,stopped", northKey, "")
		want := "studentId,studentName,status,lastUsed,daysSince,lastLiveLecture,lastChat\r\nn4,Never Used,never,,,,\r\nn2,n2,stopped,2026-11-01,20,2026-11-01,\r\n"
		if resp.status != http.StatusOK || string(resp.body) != want || resp.header.Get("Content-Disposition") != `attachment; filename="north-last-use-2026-11-21.csv"` {
			t.Errorf("CSV: %d %q %q", resp.status, resp.body, resp.header.Get("Content-Disposition"))
		}
		// Each answer above is in its school's log, under its key; the
		// refusals are not.
		entries, _ := e.accessLog("/api/access-log?limit=1000", northKey, "")
		var north []string
		for _, en := range entries {
			if en["endpoint"] != "/api/last-use" {
				t.Errorf("an entry of %v", en["endpoint"])
			}
			key, _ := en["key"].(map[string]any)
			prefix, _ := key["prefix"].(string)
			north = append(north, fmt.Sprintf("%.4s %v %v %v %v", prefix, key["label"], en["classIds"], en["allStudents"], en["format"]))
		}
		slices.Sort(north)
		if got, want := strings.Join(north, "; "), "gad_ test [] true json; gak_ Ms C1 [c1] true json; gak_ Ms C1 [c1] true json; "+
			"gak_ test [] true csv; gak_ test [] true json; gak_ test [] true json; gak_ test [c2] true json"; got != want {
			t.Errorf("north's access log: %s, want %s", got, want)
		}
	})
}
