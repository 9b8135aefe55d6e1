package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
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
			got, err := store.GroupsRollups(settled, asked, segs)
			if err != nil {
				t.Fatal(err)
			}
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
