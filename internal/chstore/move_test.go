package chstore_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
)

// usageOf is what reports read of a group over November and December
// 2026: its day and month rollups and its students' totals.
func (f *fixture) usageOf(group string) string {
	f.t.Helper()
	first, last := analytics.DayOf(day, time.UTC).MonthStart(), analytics.DayOf(day.AddDate(0, 1, 10), time.UTC)
	var b strings.Builder
	for _, span := range []analytics.Span{analytics.SpanDay, analytics.SpanMonth} {
		seg := analytics.Segment{Span: span, Keys: analytics.DayRange{First: first, Last: last}}
		rows, err := f.usage.GroupRollups(ctx, group, seg)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, r := range rows {
			fmt.Fprintf(&b, "%d %s %v live %d chat %d\n", span, r.Key, r.Counts, r.LiveLectureUsers.Len(), r.ChatUsers.Len())
		}
		ordinals, err := f.usage.Ordinals(ctx, group)
		if err != nil {
			f.t.Fatal(err)
		}
		totals := make([][]analytics.Counts, 1)
		if err := f.usage.StudentTotals(ctx, group, []analytics.Segment{seg}, totals); err != nil {
			f.t.Fatal(err)
		}
		for _, id := range slices.Sorted(maps.Keys(ordinals)) {
			if n := ordinals[id]; n < len(totals[0]) {
				fmt.Fprintf(&b, "%d %s %v\n", span, id, totals[0][n])
			}
		}
	}
	return b.String()
}

// fill gives the group n events of five students over two months.
func (f *fixture) fill(group string, n int) {
	f.t.Helper()
	var events []analytics.Event
	for i := range n {
		at := day.Add(time.Duration(i) * 7 * time.Hour)
		events = append(events, event(group, fmt.Sprintf("e%04d", i), fmt.Sprintf("s%d", i%5), at, analytics.Metric(i%7)))
	}
	if _, err := f.appendEvents(events); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) shardOf(group string) string {
	f.t.Helper()
	p, ok, err := f.locks.Placement(ctx, group)
	if err != nil || !ok {
		f.t.Fatalf("placement of %s: %v %v", group, ok, err)
	}
	return p.Shard
}

func (f *fixture) otherShard(group string) string { return f.otherShardOf(f.shardOf(group)) }

// eventsOn counts the group's events on each shard.
func (f *fixture) eventsOn(group string) map[string]uint64 {
	f.t.Helper()
	n := map[string]uint64{}
	for _, s := range f.usage.Shards() {
		c, err := f.usage.GroupEventsOn(ctx, s, group)
		if err != nil {
			f.t.Fatal(err)
		}
		n[s] = c
	}
	return n
}

// TestMoveGroup: a moved group answers the same on its new shard, its old
// shard keeps nothing of it, re-sent ids stay duplicates, and it moves
// back just as well.
func TestMoveGroup(t *testing.T) {
	f := newFixture(t)
	f.group("west")
	f.fill("west", 300)
	if _, err := f.usage.EraseStudent(ctx, "west", "s4"); err != nil {
		t.Fatal(err)
	}
	before := f.usageOf("west")
	for range 2 {
		from, to := f.shardOf("west"), f.otherShard("west")
		res, err := f.usage.MoveGroup(ctx, "west", to)
		if err != nil {
			t.Fatal(err)
		}
		if res.From != from || res.To != to || res.Events != 240 {
			t.Errorf("moved %+v, want 240 events from %s to %s", res, from, to)
		}
		if got := f.shardOf("west"); got != to {
			t.Errorf("placed on %s after the move, want %s", got, to)
		}
		if got := f.eventsOn("west"); got[from] != 0 || got[to] != 240 {
			t.Errorf("events per shard %v, want all 240 on %s", got, to)
		}
		if after := f.usageOf("west"); after != before {
			t.Errorf("reports after the move:\n%s\nbefore:\n%s", after, before)
		}
		res2, err := f.appendEvents([]analytics.Event{event("west", "e0001", "s1", day, analytics.Metric(1))})
		if err != nil || res2.Duplicates != 1 {
			t.Errorf("re-sent id after the move: %+v %v, want a duplicate", res2, err)
		}
	}
	if res, err := f.usage.MoveGroup(ctx, "west", f.shardOf("west")); err != nil || res.Events != 0 {
		t.Errorf("move to its own shard: %+v %v, want nothing done", res, err)
	}
	if _, err := f.usage.MoveGroup(ctx, "west", "127.0.0.1:1"); analytics.ErrorCode(err) != analytics.Invalid {
		t.Errorf("move to an unknown shard: %v, want invalid", err)
	}
	// A group without usage is placed where it is sent.
	f.group("empty")
	to := f.usage.Shards()[1]
	if _, err := f.usage.MoveGroup(ctx, "empty", to); err != nil || f.shardOf("empty") != to {
		t.Errorf("empty group: %v, placed on %s, want %s", err, f.shardOf("empty"), to)
	}
}

// TestUnfinishedMoveIsSettled: a move that died before changing the
// placement is undone, one that died after is finished, by the group's
// next write; reads go on meanwhile and count everything once.
func TestUnfinishedMoveIsSettled(t *testing.T) {
	for _, flipped := range []bool{false, true} {
		t.Run(fmt.Sprintf("flipped=%v", flipped), func(t *testing.T) {
			f := newFixture(t)
			f.group("east")
			f.fill("east", 100)
			before := f.usageOf("east")
			from, to := f.shardOf("east"), f.otherShard("east")
			if err := f.usage.MoveHalfway(ctx, "east", to, flipped); err != nil {
				t.Fatal(err)
			}
			if got := f.usageOf("east"); got != before {
				t.Errorf("reads during the dead move:\n%s\nwant:\n%s", got, before)
			}
			res, err := f.appendEvents([]analytics.Event{
				event("east", "e0001", "s1", day, analytics.Metric(1)), event("east", "new", "s1", day, analytics.Metric(1))})
			if err != nil || res.Accepted != 1 || res.Duplicates != 1 {
				t.Fatalf("next write: %+v %v, want 1 accepted, 1 duplicate", res, err)
			}
			home := from
			if flipped {
				home = to
			}
			if got, want := f.eventsOn("east"), map[string]uint64{home: 101, f.otherShardOf(home): 0}; !reflect.DeepEqual(got, want) {
				t.Errorf("events per shard %v, want %v", got, want)
			}
			if p, _, _ := f.locks.Placement(ctx, "east"); p.Shard != home || p.Intent != nil {
				t.Errorf("placement %s intent %s, want %s and no intent", p.Shard, p.Intent, home)
			}
		})
	}
}

func (f *fixture) otherShardOf(shard string) string {
	for _, s := range f.usage.Shards() {
		if s != shard {
			return s
		}
	}
	return ""
}

// TestAddShard follows docs/scaling.md's procedure for adding a shard to a
// running cluster: migrate with the longer URL, restart the services on
// it; new groups go to the empty shard and groups move to it, while every
// group answers as before.
func TestAddShard(t *testing.T) {
	twoShards := storetest.NewClickHouseURL(t)
	hosts, db, _ := strings.Cut(strings.TrimPrefix(twoShards, "clickhouse://"), "/")
	first, added, _ := strings.Cut(hosts, ",")
	pg := storetest.NewPostgresDatabase(t)
	one := storetest.OpenClickHouse(t, pg, "clickhouse://"+first+"/"+db)
	f := &fixture{t: t, dir: one.Directory, locks: one.Directory, usage: one.Usage.(*chstore.Store)}
	groups := []string{"a", "b", "c"}
	for _, g := range groups {
		f.group(g)
		f.fill(g, 60)
	}
	before := map[string]string{}
	for _, g := range groups {
		before[g] = f.usageOf(g)
	}

	two := storetest.OpenClickHouse(t, pg, twoShards)
	f.usage = two.Usage.(*chstore.Store)
	f.group("d")
	f.fill("d", 10)
	if got := f.shardOf("d"); got != added {
		t.Errorf("new group placed on %s, want the new shard %s", got, added)
	}
	if _, err := f.usage.MoveGroup(ctx, "a", added); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if got := f.usageOf(g); got != before[g] {
			t.Errorf("group %s after adding a shard:\n%s\nwant:\n%s", g, got, before[g])
		}
	}
	loads, err := f.usage.Loads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A shard lists as down the replicas that did not answer the test
	// cluster's probe (CI runs the tests again with one replica of each
	// shard killed).
	for i, load := range loads {
		var down []string
		for _, d := range load.Down {
			addr, _, _ := strings.Cut(d, " ")
			down = append(down, addr)
		}
		up := storetest.UpReplicas(load.Shard)
		if want := slices.DeleteFunc(strings.Split(load.Shard, "|"), func(addr string) bool { return slices.Contains(up, addr) }); !slices.Equal(down, want) {
			t.Errorf("shard %s lists %v as down, want %v", load.Shard, load.Down, want)
		}
		loads[i].Down = nil
	}
	want := []chstore.ShardLoad{{Shard: first, Groups: []string{"b", "c"}, Events: 120}, {Shard: added, Groups: []string{"a", "d"}, Events: 70}}
	if !reflect.DeepEqual(loads, want) {
		t.Errorf("loads %+v, want %+v", loads, want)
	}
}
