package chstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
)

// lagging stops merges, and so mutations, on the last replica of the
// shard named, until the test ends or the returned function is called.
func lagging(t *testing.T, shard string) (conn clickhouse.Conn, catchUp func()) {
	t.Helper()
	replicas := strings.Split(shard, "|")
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{replicas[len(replicas)-1]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Exec(ctx, "SYSTEM STOP MERGES"); err != nil {
		t.Fatal(err)
	}
	catchUp = func() {
		if err := conn.Exec(ctx, "SYSTEM START MERGES"); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(catchUp)
	return conn, catchUp
}

// waitsForTheLaggard runs op, checks that it has not returned while the
// lagging replica has not done its mutations, lets the replica catch up,
// and checks that op then returns without error.
func waitsForTheLaggard(t *testing.T, what string, catchUp func(), op func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while a replica had yet to apply it", what, err)
	case <-time.After(3 * time.Second):
	}
	catchUp()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(25 * time.Second):
		t.Fatalf("%s did not return once the replica caught up", what)
	}
}

// TestErasureAndMoveWaitForALaggingReplica: with one replica of a shard
// not applying mutations, an erasure and a group move answer only once
// that replica has deleted the rows too; then neither replica holds them.
func TestErasureAndMoveWaitForALaggingReplica(t *testing.T) {
	shards := storetest.ClickHouseShards()
	if !strings.Contains(shards[0], "|") {
		t.Skip("the test cluster's shards have no replicas: set GROUPANALYTICS_TEST_CLICKHOUSE to host:port|host:port,… (deploy/clickhouse/cluster start 2 --replicas 2)")
	}
	f := newFixture(t)
	f.group("west")
	f.fill("west", 60)
	cfg, err := chstore.ParseURL(f.url)
	if err != nil {
		t.Fatal(err)
	}
	count := func(conn clickhouse.Conn, where string, args ...any) uint64 {
		t.Helper()
		var n uint64
		if err := conn.QueryRow(ctx, `SELECT count() FROM `+cfg.Database+`.events WHERE `+where, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	home := f.shardOf("west")
	laggard, catchUp := lagging(t, home)
	waitsForTheLaggard(t, "erasure", catchUp, func() error { _, err := f.usage.EraseStudent(ctx, "west", "s1"); return err })
	if n := count(laggard, "group_id = 'west' AND student_id = 's1'"); n != 0 {
		t.Errorf("the lagging replica holds %d events of the erased student", n)
	}
	if raw, _ := f.usage.RawEvents(ctx, "west"); len(raw) != 48 {
		t.Errorf("%d events after the erasure, want the 48 of the other students", len(raw))
	}

	laggard, catchUp = lagging(t, home)
	to := f.otherShard("west")
	waitsForTheLaggard(t, "move", catchUp, func() error { _, err := f.usage.MoveGroup(ctx, "west", to); return err })
	if n := count(laggard, "group_id = 'west'"); n != 0 {
		t.Errorf("the lagging replica of the shard left holds %d events of the group", n)
	}
	if got := f.eventsOn("west"); got[to] != 48 || got[home] != 0 {
		t.Errorf("events per shard after the move: %v, want 48 on %s", got, to)
	}
}
