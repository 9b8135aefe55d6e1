package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/stores/storetest"
)

// TestGroupsRollupsOfADistrict: the rollups of many groups and segments
// read at once are each group's own, segment by segment, also when the
// groups asked are more than SQLite binds in a statement for each
// segment (a district's schools are bound once).
func TestGroupsRollupsOfADistrict(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			store := storetest.Open(t, dialect)
			first := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
			var events []analytics.Event
			groups := []string{"a", "b", "c"}
			for gi, g := range groups {
				if err := store.CreateGroup(ctx, analytics.Group{ID: g, Name: g, TimeZone: "UTC", Created: time.Now()}); err != nil {
					t.Fatal(err)
				}
				for d := gi; d < 70; d += gi + 2 {
					when := first.AddDate(0, 0, d)
					events = append(events, analytics.Event{GroupID: g, ID: fmt.Sprintf("e%d", d), StudentID: fmt.Sprintf("s%d", d%5),
						OccurredAt: when, Metric: analytics.Metric(d % int(analytics.NumMetrics)), Day: analytics.DayOf(when, time.UTC)})
				}
			}
			if _, err := store.AppendEvents(ctx, events); err != nil {
				t.Fatal(err)
			}
			r := analytics.DayRange{First: analytics.DayOf(first, time.UTC) + 3, Last: analytics.DayOf(first, time.UTC) + 66}
			segs := analytics.Runs(analytics.GroupSegments(r))
			asked := slices.Clone(groups)
			for i := len(asked); i < 12000; i++ { // 12,000 × len(segs) ids would not bind on SQLite
				asked = append(asked, fmt.Sprintf("absent-%d", i))
			}
			settled, err := store.SettleGroups(ctx, groups)
			if err != nil {
				t.Fatal(err)
			}
			got := groupsRollups(t, settled, store, groupsOf(t, store, asked...), make([]string, len(asked)), segs)
			if len(got) != len(segs) || len(segs) < 3 {
				t.Fatalf("%d maps for %d segments", len(got), len(segs))
			}
			for i, seg := range segs {
				for id, rows := range got[i] {
					if !slices.Contains(groups, id) {
						t.Errorf("segment %v: rows of %q", seg, id)
					}
					slices.SortFunc(rows, func(a, b analytics.GroupRollup) int { return int(a.Key - b.Key) })
				}
				for _, g := range groups {
					want, err := store.GroupRollups(settled, g, seg)
					if err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(got[i][g]) != fmt.Sprint(want) {
						t.Errorf("segment %v of %s: %v, want %v", seg, g, got[i][g], want)
					}
				}
			}
		})
	}
}

// TestKeptRowsMatchTheDatabase: the rows GroupsRollups takes from those
// kept in the process are the database's, range after random range,
// before they are loaded, once they are, and after each write that moves
// them: appends, an erasure, a retention cut, and a group deleted and
// made again under its id, written as many times as before.
func TestKeptRowsMatchTheDatabase(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			store := storetest.Open(t, dialect)
			rng := rand.New(rand.NewPCG(7, 8))
			first := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
			groups := []string{"a", "b", "c", "d"}
			n := 0
			write := func(g string, events int) {
				t.Helper()
				batch := make([]analytics.Event, events)
				for i := range batch {
					n++
					when := first.Add(time.Duration(rng.IntN(80*24)) * time.Hour)
					batch[i] = analytics.Event{GroupID: g, ID: fmt.Sprintf("e%d", n), StudentID: fmt.Sprintf("s%d", rng.IntN(12)),
						OccurredAt: when, Metric: analytics.Metric(rng.IntN(int(analytics.NumMetrics))), Day: analytics.DayOf(when, time.UTC)}
				}
				if _, err := store.AppendEvents(ctx, batch); err != nil {
					t.Fatal(err)
				}
			}
			for _, g := range groups {
				if err := store.CreateGroup(ctx, analytics.Group{ID: g, Name: g, TimeZone: "UTC", Created: time.Now()}); err != nil {
					t.Fatal(err)
				}
				write(g, 300)
			}
			asked := append(slices.Clone(groups), "absent")
			check := func(when string) {
				t.Helper()
				day0 := analytics.DayOf(first, time.UTC)
				for range 15 {
					from := day0 - 5 + analytics.Day(rng.IntN(85))
					segs := analytics.Runs(analytics.GroupSegments(analytics.DayRange{First: from, Last: from + analytics.Day(rng.IntN(60))}))
					settled, err := store.SettleGroups(ctx, groups)
					if err != nil {
						t.Fatal(err)
					}
					versions, err := store.UsageVersions(settled, asked)
					if err != nil {
						t.Fatal(err)
					}
					got := groupsRollups(t, settled, store, groupsOf(t, store, asked...), versions, segs)
					for i, seg := range segs {
						for _, g := range groups {
							want, err := store.GroupRollups(settled, g, seg)
							if err != nil {
								t.Fatal(err)
							}
							rows := slices.Clone(got[i][g])
							slices.SortFunc(rows, func(a, b analytics.GroupRollup) int { return int(a.Key - b.Key) })
							if fmt.Sprint(rows) != fmt.Sprint(want) {
								t.Fatalf("%s: segment %v of %s: %v, want %v", when, seg, g, rows, want)
							}
						}
					}
				}
			}
			kept := func(when string) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					if !slices.ContainsFunc(groups, func(g string) bool { return !store.RowsKept(ctx, g) }) {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: after 10 s, the groups' rows are not all kept", when)
					}
				}
			}
			check("before they are kept")
			kept("read once")
			check("kept")
			write("b", 20)
			if _, err := store.EraseStudent(ctx, "a", "s3"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := store.ExpireDays(ctx, "c", analytics.DayOf(first, time.UTC)+20); err != nil {
				t.Fatal(err)
			}
			versions, err := store.UsageVersions(ctx, []string{"d"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.EraseGroup(ctx, "d"); err != nil {
				t.Fatal(err)
			}
			if err := store.CreateGroup(ctx, analytics.Group{ID: "d", Name: "d", TimeZone: "UTC", Created: time.Now()}); err != nil {
				t.Fatal(err)
			}
			for again := []string{""}; again[0] < versions[0]; write("d", 1) {
				if again, err = store.UsageVersions(ctx, []string{"d"}); err != nil {
					t.Fatal(err)
				}
				if len(again[0]) > len(versions[0]) || len(again[0]) == len(versions[0]) && again[0] >= versions[0] {
					break
				}
			}
			check("written since they were kept")
			kept("read again")
			check("kept again")
		})
	}
}

// groupsRollups returns what GroupsRollups passes, segment by segment,
// each group's rows under its id (copies), failing t when a group's rows
// do not come one after another.
func groupsRollups(t *testing.T, ctx context.Context, store *sqlstore.Store, groups []analytics.Group, versions []string, segs []analytics.Segment) []map[string][]analytics.GroupRollup {
	t.Helper()
	rollups := make([]map[string][]analytics.GroupRollup, len(segs))
	for i := range rollups {
		rollups[i] = map[string][]analytics.GroupRollup{}
	}
	passed := map[int]bool{}
	last := -1
	err := store.GroupsRollups(ctx, groups, versions, segs, func(group, seg int, r *analytics.GroupRollup) {
		if group != last && passed[group] {
			t.Errorf("rows of %s passed apart", groups[group].ID)
		}
		passed[group], last = true, group
		row := *r
		row.LiveLectureUsers, row.ChatUsers = slices.Clone(r.LiveLectureUsers), slices.Clone(r.ChatUsers)
		rollups[seg][groups[group].ID] = append(rollups[seg][groups[group].ID], row)
	})
	if err != nil {
		t.Fatal(err)
	}
	return rollups
}

// groupsOf returns the groups of the ids as the directory holds them, or
// with their id alone when it holds none.
func groupsOf(t *testing.T, store *sqlstore.Store, ids ...string) []analytics.Group {
	t.Helper()
	groups := make([]analytics.Group, len(ids))
	for i, id := range ids {
		g, err := store.Group(context.Background(), id)
		if analytics.ErrorCode(err) == analytics.NotFound {
			g = analytics.Group{ID: id}
		} else if err != nil {
			t.Fatal(err)
		}
		groups[i] = g
	}
	return groups
}

// TestStartKeepsWhatADistrictReads: a serving process starts by keeping,
// before any read asks, every district's schools and the rollup rows of
// those written, and of no group outside a district.
func TestStartKeepsWhatADistrictReads(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.NewDSN(t, dialect)
			store := storetest.OpenDSN(t, dsn)
			if err := store.CreateDistrict(ctx, analytics.District{ID: "north", Name: "North", TimeZone: "UTC", Created: time.Now()}); err != nil {
				t.Fatal(err)
			}
			at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
			for _, g := range []string{"a", "b", "alone"} {
				if err := store.CreateGroup(ctx, analytics.Group{ID: g, Name: g, TimeZone: "UTC", Created: time.Now()}); err != nil {
					t.Fatal(err)
				}
				if g != "alone" {
					if err := store.AttachSchool(ctx, "north", g); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := store.AppendEvents(ctx, []analytics.Event{{GroupID: g, ID: "e1", StudentID: "s1", OccurredAt: at, Day: analytics.DayOf(at, time.UTC)}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := store.SettleGroups(ctx, []string{"a", "b", "alone"}); err != nil {
				t.Fatal(err)
			}
			started := storetest.OpenDSN(t, dsn) // another process, which has read nothing
			if started.RowsKept(ctx, "a") || started.DistrictKept(ctx, "north") {
				t.Fatal("kept before the start")
			}
			started.Start()
			for deadline := time.Now().Add(10 * time.Second); !started.RowsKept(ctx, "a") || !started.RowsKept(ctx, "b") || !started.DistrictKept(ctx, "north"); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("after 10 s, the start has not kept the groups' rows and the district's schools")
				}
			}
			if started.RowsKept(ctx, "alone") {
				t.Error("the start kept the rows of a group in no district")
			}
		})
	}
}
