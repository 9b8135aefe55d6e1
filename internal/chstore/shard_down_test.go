package chstore_test

import (
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
)

// TestOneShardDown: with one shard killed, the groups of the other keep
// ingesting and answering, the down shard's groups get a quick
// unavailable error unless their writer can answer without the shard, and
// when the shard is back everything acknowledged is there.
func TestOneShardDown(t *testing.T) {
	cluster := storetest.NewCluster(t, 19300, 2)
	url := cluster.URL("shard_down")
	dirDSN := storetest.NewPostgresDatabase(t)
	s := storetest.OpenClickHouse(t, dirDSN, url)
	usage := s.Usage.(*chstore.Store)
	f := &fixture{t: t, dir: s.Directory, locks: s.Directory, usage: usage, url: url}
	shardOf := map[string]string{}
	for _, g := range []string{"g1", "g2"} {
		f.group(g)
		if _, err := f.appendEvents([]analytics.Event{event(g, "e1", "s1", day, analytics.MainChatMessages)}); err != nil {
			t.Fatal(err)
		}
		p, _, err := f.locks.Placement(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		shardOf[p.Shard] = g
	}
	up, down := shardOf[cluster.Shard(1)], shardOf[cluster.Shard(2)]
	if up == "" || down == "" {
		t.Fatalf("placements %v: want one group per shard", shardOf)
	}
	// Another process: it warms its states of the groups as they are,
	// and a write since leaves it the down group's stale.
	other := storetest.OpenClickHouse(t, dirDSN, url).Shards
	other.WaitWarm()
	if _, err := f.appendEvents([]analytics.Event{event(down, "e1b", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Fatal(err)
	}
	cluster.Kill(2)
	time.Sleep(200 * time.Millisecond)

	if _, err := f.appendEvents([]analytics.Event{event(up, "e2", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Errorf("group on the live shard: %v", err)
	}
	if got := f.dayRollup(up).Counts[analytics.MainChatMessages]; got != 2 {
		t.Errorf("group on the live shard counts %d, want 2", got)
	}
	// A process that holds the group's current rows (it wrote them)
	// answers from them; another must ask the shard, and cannot.
	if rows, err := usage.GroupRollups(ctx, down, daySegment()); err != nil || len(rows) != 1 || rows[0].Counts[analytics.MainChatMessages] != 2 {
		t.Errorf("reading the down shard's group from the writer's rows: %v %+v, want its 2 events", err, rows)
	}
	if _, err := other.GroupRollups(ctx, down, daySegment()); analytics.ErrorCode(err) != analytics.Unavailable {
		t.Errorf("reading the down shard from another process: %v, want unavailable", err)
	}
	// The writer also keeps the ids the group's shard holds: a new id
	// cannot be one of them, and is logged; a re-sent one could be, and
	// only the shard can tell. Another process must ask the shard for
	// any id.
	start := time.Now()
	if res, err := usage.AppendEvents(ctx, []analytics.Event{event(down, "e2", "s1", day, analytics.MainChatMessages)}); err != nil || res.Accepted != 1 {
		t.Errorf("a new event of the down shard's group, from its writer: %+v %v, want it logged", res, err)
	}
	if _, err := usage.AppendEvents(ctx, []analytics.Event{event(down, "e1", "s1", day, analytics.MainChatMessages)}); analytics.ErrorCode(err) != analytics.Unavailable {
		t.Errorf("an event of the down shard's group sent again: %v, want unavailable", err)
	}
	if _, err := other.AppendEvents(ctx, []analytics.Event{event(down, "e2b", "s1", day, analytics.MainChatMessages)}); analytics.ErrorCode(err) != analytics.Unavailable {
		t.Errorf("a new event of the down shard's group, from another process: %v, want unavailable", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("ingesting on the down shard took %v, want each answer within 5 s", time.Since(start))
	}
	// With an event of its in the log, the group's reports, which settle
	// it first, wait for the shard.
	if _, err := usage.Settle(ctx, down); analytics.ErrorCode(err) != analytics.Unavailable {
		t.Errorf("settling the down shard's group with an event logged: %v, want unavailable", err)
	}
	if err := usage.Ping(ctx); err != nil {
		t.Errorf("ping with one shard up: %v", err)
	}

	cluster.Start()
	if _, err := usage.Settle(ctx, down); err != nil {
		t.Fatalf("settling after the shard came back: %v", err)
	}
	if got := f.dayRollup(down).Counts[analytics.MainChatMessages]; got != 3 {
		t.Errorf("after the shard came back: %d, want the 3 acknowledged events", got)
	}
	if _, err := f.appendEvents([]analytics.Event{event(down, "e3", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Fatalf("after the shard came back: %v", err)
	}
	if got := f.dayRollup(down).Counts[analytics.MainChatMessages]; got != 4 {
		t.Errorf("after the shard came back and one more event: %d, want 4", got)
	}
}
