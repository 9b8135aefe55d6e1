package chstore_test

import (
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
)

// dayRows returns the group's rollups of the days first to last, as a
// report reads them, those without usage left out.
func (f *fixture) dayRows(usage *chstore.Store, group string, first, last analytics.Day) map[analytics.Day]analytics.Counts {
	f.t.Helper()
	if _, err := usage.Settle(ctx, group); err != nil {
		f.t.Fatal(err)
	}
	rows, err := usage.GroupRollups(ctx, group, analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: first, Last: last}})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[analytics.Day]analytics.Counts{}
	for _, r := range rows {
		if r.Counts != (analytics.Counts{}) {
			out[r.Key] = r.Counts
		}
	}
	return out
}

// TestExpiryOfKeptStates: a retention run empties the days before its cut
// in the state a process keeps of the group, as in a new process's, and
// one that dies half way is finished by the next read, then run again
// without deleting anything twice.
func TestExpiryOfKeptStates(t *testing.T) {
	f := newFixture(t)
	f.group("north")
	first := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	d := analytics.DayOf(first, time.UTC)
	var events []analytics.Event // 29 October to 3 November
	for i := range 6 {
		events = append(events, event("north", "e"+string(rune('a'+i)), "s1", first.AddDate(0, 0, i-3), analytics.TutorMeMessages))
	}
	if _, err := f.appendEvents(events); err != nil {
		t.Fatal(err)
	}
	if got := f.dayRows(f.usage, "north", d-3, d+2); len(got) != 6 {
		t.Fatalf("before: %v", got)
	}
	// A cut at the start of a month: the days before it are emptied, not
	// recomputed.
	deleted, ran, err := f.usage.ExpireDays(ctx, "north", d)
	if err != nil || !ran {
		t.Fatalf("ExpireDays: %v, %v", ran, err)
	}
	if deleted[0].Table != "events" || deleted[0].Rows != 3 {
		t.Errorf("deleted %+v, want 3 events first", deleted)
	}
	other := storetest.OpenClickHouse(t, f.dsn, f.url).Usage.(*chstore.Store)
	for name, usage := range map[string]*chstore.Store{"the process that ran it": f.usage, "another": other} {
		if got := f.dayRows(usage, "north", d-3, d+2); len(got) != 3 || got[d-1] != (analytics.Counts{}) || got[d][analytics.TutorMeMessages] != 1 {
			t.Errorf("%s, after the run: %v, want the 3 days from %s", name, got, d)
		}
	}
	if _, ran, err := f.usage.ExpireDays(ctx, "north", d); err != nil || ran {
		t.Errorf("the same cut again: ran %v, %v", ran, err)
	}
	// A run that dies after deleting the events: the next write repairs
	// its rollups (a read too, when it can within its wait), and the run
	// made again finds nothing left to delete.
	if err := f.usage.ExpireHalfway(ctx, "north", d+1); err != nil {
		t.Fatal(err)
	}
	deleted, ran, err = f.usage.ExpireDays(ctx, "north", d+1)
	if err != nil || !ran || len(deleted) != 0 {
		t.Errorf("the cut it meant, made: %+v, %v, %v; want nothing left to delete", deleted, ran, err)
	}
	for name, usage := range map[string]*chstore.Store{"the process that ran it": f.usage, "another": other} {
		if got := f.dayRows(usage, "north", d-3, d+2); len(got) != 2 || got[d] != (analytics.Counts{}) {
			t.Errorf("%s, after a run that died, repaired: %v, want the days from %s", name, got, d+1)
		}
	}
}
