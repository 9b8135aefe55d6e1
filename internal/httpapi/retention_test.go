package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

// expire takes the group's events of the local days before first (a
// local date as a UTC midnight) out of the model, and returns how many.
func (m *refModel) expire(group string, first time.Time) int {
	before := len(m.events[group])
	cut := first.Format(time.DateOnly)
	m.events[group] = slices.DeleteFunc(m.events[group], func(ev refEvent) bool {
		return ev.at.In(m.zones[group]).Format(time.DateOnly) < cut
	})
	return before - len(m.events[group])
}

// localDate is the date of t in loc, as a UTC midnight (refQuery's form).
func localDate(t time.Time, loc *time.Location) time.Time {
	y, mo, d := t.In(loc).Date()
	return time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
}

// TestRetentionAgainstBruteForce: schools that keep 35 to 60 days of usage
// over random events and zones, the clock moving a day at a time so that
// the cut crosses weeks and a month, a retention run each day while a
// writer sends events of kept days: every report of kept days equals a
// brute-force count of the events kept, days before the cut are refused,
// and each run's receipt counts the events it deleted.
func TestRetentionAgainstBruteForce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, stores storetest.Stores) {
		e := newEnv(t, stores)
		rng := rand.New(rand.NewPCG(7, 30))
		start := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
		e.clock.Set(start)
		m := &refModel{zones: map[string]*time.Location{}, events: map[string][]refEvent{}, seen: map[string]bool{},
			names: map[string]map[string]string{}, keys: map[string]string{}, classes: map[string]map[string][]string{}}
		groups := []string{"r0", "r1", "r2"}
		keep := map[string]int{}
		var sent []platform.EventInput
		for i, g := range groups {
			zone := diffZones[rng.IntN(len(diffZones))]
			m.zones[g], _ = time.LoadLocation(zone)
			m.keys[g] = e.school(g, zone)
			for n := range 1500 {
				at := start.Add(-time.Duration(rng.Int64N(int64(80 * 24 * time.Hour))))
				in := platform.EventInput{ID: fmt.Sprintf("%s-%05d", g, n), GroupID: g, StudentID: fmt.Sprintf("s%02d", rng.IntN(30)),
					OccurredAt: at.Format(time.RFC3339Nano), Kind: analytics.KindMessageSent, ChatType: "main"}
				if rng.IntN(3) == 0 {
					in.Kind, in.ChatType = analytics.KindSessionCreated, ""
				}
				sent = append(sent, in)
			}
			keep[g] = []int{35, 47, 60}[i]
		}
		for batch := range slices.Chunk(sent, 500) {
			e.send(batch...)
			for _, in := range batch {
				m.apply(in)
			}
		}
		token := e.token()
		for _, g := range groups {
			got := e.mustCall("PATCH", "/v1/admin/groups/"+g, token, fmt.Sprintf(`{"retention":"%dd"}`, keep[g]), 200)
			if got["retention"] != fmt.Sprintf("%dd", keep[g]) {
				t.Fatalf("group %s after setting its retention: %v", g, got)
			}
		}
		var took []time.Duration // each day's run, of the three schools
		for day := range 14 {
			now := start.AddDate(0, 0, day)
			e.clock.Set(now)
			// A writer sends events of kept days while the run deletes.
			var late []platform.EventInput
			for n := range 60 {
				g := groups[rng.IntN(len(groups))]
				at := now.Add(-time.Duration(rng.Int64N(int64(30 * 24 * time.Hour))))
				late = append(late, platform.EventInput{ID: fmt.Sprintf("late-%02d-%02d", day, n), GroupID: g,
					StudentID: fmt.Sprintf("s%02d", rng.IntN(30)), OccurredAt: at.Format(time.RFC3339Nano), Kind: analytics.KindSessionCreated})
			}
			var wg sync.WaitGroup
			wg.Go(func() {
				for batch := range slices.Chunk(late, 6) {
					e.send(batch...)
				}
			})
			began := time.Now()
			receipts, err := e.platform.ExpireUsage(ctx, now)
			took = append(took, time.Since(began))
			// A run that finds a shard unable to write for now (a quorum
			// insert timed out on a loaded machine, a replica being down)
			// is run again, as the serving processes' next round would:
			// it goes on from the groups it had not cut.
			for try := 1; try < 5 && analytics.ErrorCode(err) == analytics.Unavailable; try++ {
				t.Logf("day %d: retention run %d: %v; again", day, try, err)
				time.Sleep(time.Second)
				var more []analytics.Receipt
				more, err = e.platform.ExpireUsage(ctx, now)
				receipts = append(receipts, more...)
			}
			wg.Wait()
			if err != nil {
				t.Fatalf("day %d: %v", day, err)
			}
			for _, in := range late {
				m.apply(in)
			}
			for _, g := range groups {
				first := localDate(now, m.zones[g]).AddDate(0, 0, 1-keep[g])
				removed := m.expire(g, first)
				i := slices.IndexFunc(receipts, func(r analytics.Receipt) bool { return r.GroupID == g })
				if i < 0 {
					if removed > 0 {
						t.Fatalf("day %d: no receipt for group %s, whose %d events before %s were due to go", day, g, removed, first.Format(time.DateOnly))
					}
					continue
				}
				r := receipts[i]
				events := int64(0)
				for _, d := range r.Deleted {
					if d.Table == "events" || d.Table == "usage_log" {
						events += d.Rows
					}
				}
				if r.KeptFrom.String() != first.Format(time.DateOnly) || events != int64(removed) || r.Action != analytics.ActionUsageExpired {
					t.Fatalf("day %d, group %s: receipt %+v; want the cut at %s and %d events", day, g, r, first.Format(time.DateOnly), removed)
				}
			}
			// Run again at once: the cut is made, nothing is done twice.
			if again, err := e.platform.ExpireUsage(ctx, now); err != nil || len(again) != 0 {
				t.Fatalf("day %d, the run again: %v, %v", day, again, err)
			}
			checkKeptReports(t, e, rng, m, groups, keep, fmt.Sprintf("day %d", day))
		}
		slices.Sort(took)
		t.Logf("a day's retention run of three schools, racing a writer: median %v, max %v", took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
		// Retention off, every day may be asked again: the days cut hold
		// nothing, and the rows of the weeks and months cut hold the days
		// kept only.
		for _, g := range groups {
			e.mustCall("PATCH", "/v1/admin/groups/"+g, token, `{"retention":"off"}`, 200)
		}
		for i := range 60 {
			g := groups[rng.IntN(len(groups))]
			q := refQuery{group: g, endpoint: []string{"live-lecture", "chat"}[rng.IntN(2)],
				interval: []string{"", "day", "week", "month"}[rng.IntN(4)], students: rng.IntN(3) == 0}
			q.first = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, rng.IntN(100))
			q.last = q.first.AddDate(0, 0, rng.IntN(60))
			if rng.IntN(2) == 0 {
				q.first = q.first.AddDate(0, 0, 1-q.first.Day()) // whole months, read from their rows
			}
			query, body := encodeQuery(rng, q, m.zones[g])
			got := decodeReports(t, e.reportRequest(q.endpoint, m.keys[g], query, body))
			if want := m.answer(q); !reflect.DeepEqual(got, want) {
				gj, _ := json.MarshalIndent(got, "", " ")
				wj, _ := json.MarshalIndent(want, "", " ")
				t.Fatalf("retention off, query %d: %+v\n?%s %s\n%s", i, q, query, body, firstDiff(gj, wj))
			}
		}
	})
}

// checkKeptReports compares random reports of kept days with the model,
// and checks that a report of a day before the cut is refused, naming the
// first day kept, and that one without startDate starts there.
func checkKeptReports(t *testing.T, e *testEnv, rng *rand.Rand, m *refModel, groups []string, keep map[string]int, label string) {
	t.Helper()
	now := e.clock.Now()
	for i := range 24 {
		g := groups[rng.IntN(len(groups))]
		loc := m.zones[g]
		today := localDate(now, loc)
		first := today.AddDate(0, 0, 1-keep[g])
		q := refQuery{group: g, endpoint: []string{"live-lecture", "chat"}[rng.IntN(2)],
			interval: []string{"", "day", "week", "month"}[rng.IntN(4)], students: rng.IntN(3) == 0}
		q.first = first.AddDate(0, 0, rng.IntN(keep[g]))
		if rng.IntN(3) == 0 {
			q.first = first
		}
		q.last = q.first.AddDate(0, 0, rng.IntN(int(today.Sub(q.first).Hours()/24)+1))
		query, body := encodeQuery(rng, q, loc)
		got := decodeReports(t, e.reportRequest(q.endpoint, m.keys[g], query, body))
		if want := m.answer(q); !reflect.DeepEqual(got, want) {
			gj, _ := json.MarshalIndent(got, "", " ")
			wj, _ := json.MarshalIndent(want, "", " ")
			t.Fatalf("%s, query %d: %+v\n?%s %s\n%s", label, i, q, query, body, firstDiff(gj, wj))
		}
	}
	for _, g := range groups {
		first := localDate(now, m.zones[g]).AddDate(0, 0, 1-keep[g]).Format(time.DateOnly)
		day := localDate(now, m.zones[g]).AddDate(0, 0, -keep[g]).Format(time.DateOnly)
		resp := e.reportRequest("chat", m.keys[g], "startDate="+day, "")
		want := fmt.Sprintf("Invalid startDate: %s is before %s, the first day this group keeps (its usage is kept %dd)", day, first, keep[g])
		if resp.status != 400 || resp.errorMessage(t) != want {
			t.Fatalf("%s, group %s, a report from %s: %d %s; want 400 %q", label, g, day, resp.status, resp.body, want)
		}
		reports := e.reports("chat", m.keys[g], "")
		if len(reports) != 1 || !strings.HasPrefix(reports[0].StartDate, refDayStart(localDate(e.clock.Now(), m.zones[g]).AddDate(0, 0, 1-keep[g]), m.zones[g]).UTC().Format("2006-01-02T15")) {
			t.Fatalf("%s, group %s: a report without startDate starts at %v, not at the first day kept, %s", label, g, reports, first)
		}
	}
}

// TestRetentionSetting: the admin API and its checks, events of days
// before the cut refused at ingestion, and the receipt of a run.
func TestRetentionSetting(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		e.school("north", "Europe/Berlin")
		token := e.token()
		if got := e.mustCall("GET", "/v1/admin/groups/north", token, "", 200); got["retention"] != "off" {
			t.Errorf("a new group's retention: %v", got["retention"])
		}
		for _, bad := range []string{`"20d"`, `"36601d"`, `"1y"`, `"400"`, `400`, `""`} {
			resp := e.call("PATCH", "/v1/admin/groups/north", token, `{"retention":`+bad+`}`)
			if resp.status != 400 || !strings.Contains(string(resp.body), "retention") {
				t.Errorf("retention %s: %d %s", bad, resp.status, resp.body)
			}
		}
		// testNow is 2026-11-21 12:00 UTC; in Berlin too. 40 days kept:
		// from 2026-10-13.
		e.send(message("north", "s1", "main", "2026-10-12T21:59:59.999Z"), // 23:59:59.999 in Berlin, 12 October
			message("north", "s1", "main", "2026-10-12T22:00:00Z"))
		e.mustCall("PATCH", "/v1/admin/groups/north", token, `{"retention":"40d"}`, 200)
		var res platform.IngestResult
		resp := e.call("POST", "/v1/events", token, `[{"id":"old","groupId":"north","studentId":"s1","occurredAt":"2026-10-12T21:59:59.999Z","kind":"live_lecture.session_created"},
			{"id":"new","groupId":"north","studentId":"s1","occurredAt":"2026-10-12T22:00:00Z","kind":"live_lecture.session_created"}]`)
		if err := json.Unmarshal(resp.body, &res); err != nil || resp.status != 200 {
			t.Fatalf("events around the cut: %d %s", resp.status, resp.body)
		}
		want := `Invalid occurredAt: 2026-10-12T21:59:59.999Z is on 2026-10-12; group "north" keeps 40d of usage, from 2026-10-13`
		if res.Accepted != 1 || len(res.Rejected) != 1 || res.Rejected[0].Index != 0 || res.Rejected[0].Reason != want {
			t.Errorf("events around the cut: %+v", res)
		}
		key := e.key("north")
		if got := e.do("GET", "/api/classes", key, "").json(t)["firstKeptDay"]; got != "2026-10-13" {
			t.Errorf("the key's classes say the first day kept is %v", got)
		}
		receipts, err := e.platform.ExpireUsage(ctx, e.clock.Now())
		if err != nil || len(receipts) != 1 {
			t.Fatalf("the run: %v, %v", receipts, err)
		}
		listed := e.mustCall("GET", "/v1/admin/receipts?groupId=north", token, "", 200)["receipts"].([]any)
		r := listed[0].(map[string]any)
		if r["action"] != "usage expired" || r["keptFrom"] != "2026-10-13" || r["requestedBy"] != "retention 40d" || r["studentId"] != nil {
			t.Errorf("the run's receipt: %v", r)
		}
		if got := e.reports("chat", key, "startDate=2026-10-13"); got[0].Data[0].Value != 1 {
			t.Errorf("after the run, the kept day's messages: %v", got)
		}
		e.mustCall("PATCH", "/v1/admin/groups/north", token, `{"retention":"off"}`, 200)
		if got := e.reports("chat", key, "startDate=2025-01-01"); got[0].Data[0].Value != 1 {
			t.Errorf("retention off: the days deleted stay deleted, the others are asked again: %v", got)
		}
	})
}
