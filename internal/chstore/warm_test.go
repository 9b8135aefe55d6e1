package chstore_test

import (
	"fmt"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
)

// TestServingProcessWarmsStates: a serving process starts by loading the
// states of the groups with usage, whole (group rows, counts, ordinals),
// and its reports answer from them as the process that wrote them does;
// a group whose shard holds rows of a write after its placement's number
// (a write in progress) is left to its first read.
func TestServingProcessWarmsStates(t *testing.T) {
	f := newFixture(t)
	for _, g := range []string{"north", "south"} {
		f.group(g)
		if _, err := f.appendEvents([]analytics.Event{event(g, g+"1", "s1", day, analytics.MainChatMessages),
			event(g, g+"2", "s2", day, analytics.TutorMeMessages), event(g, g+"3", "s2", day, analytics.MainChatMessages)}); err != nil {
			t.Fatal(err)
		}
	}
	south, _, err := f.locks.Placement(ctx, "south")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.usage.InsertGroupRows(ctx, south, south.Seq+1, []analytics.Event{event("south", "south4", "s3", day, analytics.MainChatMessages)}); err != nil {
		t.Fatal(err)
	}

	other := storetest.OpenClickHouse(t, f.dsn, f.url).Shards // a process started since
	other.WaitWarm()
	if kept, withCounts, ordinals := other.KeptState("north"); !kept || !withCounts || !ordinals {
		t.Errorf("north after the warm-up: kept %v, with counts %v, ordinals %v; want all", kept, withCounts, ordinals)
	}
	if kept, _, _ := other.KeptState("south"); kept {
		t.Error("south, with rows of a write after its placement's number, was warmed")
	}
	d := analytics.DayOf(day, time.UTC)
	seg := analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: d, Last: d}}
	for _, g := range []string{"north", "south"} {
		want, got := reportsOf(t, f.usage, g, seg), reportsOf(t, other, g, seg)
		if got != want {
			t.Errorf("%s from the warmed process: %s, want %s", g, got, want)
		}
	}
}

// reportsOf is what a report of the group over seg reads from usage: the
// group row's counts and users, and each student's counts.
func reportsOf(t *testing.T, usage analytics.UsageStore, groupID string, seg analytics.Segment) string {
	t.Helper()
	settled, err := usage.Settle(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := usage.GroupRollups(settled, groupID, seg)
	if err != nil {
		t.Fatal(err)
	}
	ordinals, err := usage.Ordinals(settled, groupID)
	if err != nil {
		t.Fatal(err)
	}
	totals := [][]analytics.Counts{nil}
	if err := usage.StudentTotals(settled, groupID, []analytics.Segment{seg}, totals); err != nil {
		t.Fatal(err)
	}
	var group []string
	for _, r := range rows {
		group = append(group, fmt.Sprint(r.Counts, r.ChatUsers.Len(), r.LiveLectureUsers.Len()))
	}
	students := map[string]analytics.Counts{}
	for id, n := range ordinals {
		if n < len(totals[0]) {
			students[id] = totals[0][n]
		}
	}
	return fmt.Sprint(group, students)
}

// TestWarmUpKeepsWithinItsBudget: the warm-up keeps the states that fit
// its budget, each whole, and leaves the others to their first reads.
func TestWarmUpKeepsWithinItsBudget(t *testing.T) {
	f := newFixture(t)
	groups := []string{"a", "b", "c"}
	for _, g := range groups {
		f.group(g)
		if _, err := f.appendEvents([]analytics.Event{event(g, g+"1", "s1", day, analytics.MainChatMessages),
			event(g, g+"2", "s2", day, analytics.TutorMeMessages)}); err != nil {
			t.Fatal(err)
		}
	}
	f.usage.WaitWarm()
	// What a warm-up keeps of a group: its rows, and them packed.
	probe := storetest.OpenClickHouse(t, f.dsn, f.url).Shards
	probe.WaitWarm()
	one := probe.KeptBytes("a")
	if one <= f.usage.KeptBytes("a") || probe.KeptBytes("c") != one {
		t.Fatalf("a warm-up keeps %d and %d bytes of a and c, want the same, more than the writer's %d", one, probe.KeptBytes("c"), f.usage.KeptBytes("a"))
	}
	chstore.SetWarmBytes(t, 2*one+one/2)
	other := storetest.OpenClickHouse(t, f.dsn, f.url).Shards
	other.WaitWarm()
	d := analytics.DayOf(day, time.UTC)
	seg := analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: d, Last: d}}
	var warmed []string
	for _, g := range groups {
		if kept, withCounts, ordinals := other.KeptState(g); kept {
			if !withCounts || !ordinals || other.KeptBytes(g) != one {
				t.Errorf("%s warmed in part: with counts %v, ordinals %v, %d bytes of %d", g, withCounts, ordinals, other.KeptBytes(g), one)
			}
			warmed = append(warmed, g)
		}
	}
	if len(warmed) != 2 {
		t.Errorf("warmed %v with room for two", warmed)
	}
	for _, g := range groups {
		if want, got := reportsOf(t, f.usage, g, seg), reportsOf(t, other, g, seg); got != want {
			t.Errorf("%s from the warmed process: %s, want %s", g, got, want)
		}
	}

	// With room for less than one, none.
	chstore.SetWarmBytes(t, one/2)
	third := storetest.OpenClickHouse(t, f.dsn, f.url).Shards
	third.WaitWarm()
	for _, g := range groups {
		if kept, _, _ := third.KeptState(g); kept {
			t.Errorf("%s warmed with room for half a group", g)
		}
	}
}
