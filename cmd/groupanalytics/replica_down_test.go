package main

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"groupanalytics/internal/stores/storetest"
)

// TestStartWithAReplicaDown: with one replica of a shard killed, a new
// serve starts and answers from the other, the commands that read the
// directory work, shard list names the replica down, and migrate refuses
// to say the schema is done until the replica is back, then migrates it.
// Then the cluster grows a shard by the documented commands and schools
// move there while a firehose runs: every acknowledged event counts once.
func TestStartWithAReplicaDown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes and kills a ClickHouse server")
	}
	cluster := storetest.NewReplicatedCluster(t, 19700, 1, 2)
	stores := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", cluster.URL("replica_down")}
	bin := buildBinary(t)
	key, token := setupGroup(t, bin, stores, "crash")
	first := startServer(t, bin, stores)
	if _, _, err := sendBatch(first.Base, token, 0); err != nil {
		t.Fatal(err)
	}
	want := perBatchCounts(t, first.Base, key) // applied on both replicas
	first.Cmd.Process.Kill()
	first.Cmd.Wait()

	cluster.KillReplica(1, 2)
	down := cluster.Replica(1, 2)
	if out := runBinary(t, bin, append([]string{"group", "list"}, stores...)...); !strings.Contains(out, "crash") {
		t.Errorf("group list with a replica down:\n%s", out)
	}
	if out := runBinary(t, bin, append([]string{"shard", "list"}, stores...)...); !strings.Contains(out, "up, replica down: "+down) {
		t.Errorf("shard list does not name the replica down:\n%s", out)
	}
	out, err := runCommand(bin, append([]string{"migrate"}, stores...)...)
	if err == nil || !strings.Contains(string(out), "1 ClickHouse server not migrated: cannot be reached ("+down+")") {
		t.Errorf("migrate with a replica down: %v\n%s", err, out)
	}
	srv := startServer(t, bin, stores)
	if got := perBatchCounts(t, srv.Base, key); len(got) != len(want) || got[batchStudent(0)] != want[batchStudent(0)] {
		t.Errorf("a report served with a replica down: %v, want %v", got, want)
	}

	cluster.Start()
	if out := runBinary(t, bin, append([]string{"migrate"}, stores...)...); !strings.Contains(out, "nothing to migrate") {
		t.Errorf("migrate once the replica is back: %s", out)
	}

	// The cluster grows a shard by the documented commands, keeping its
	// replicas; a killed server of it comes back with cluster restart; the
	// school moves there and counts as before.
	if out, err := cluster.Script("start", "1", "--replicas", "1"); err == nil || !strings.Contains(out, "holds a cluster of 2 replica(s) a shard") {
		t.Errorf("cluster start with another number of replicas: %v\n%s", err, out)
	}
	if out, err := cluster.Script("start", "2"); err != nil {
		t.Fatalf("cluster start 2: %v\n%s", err, out)
	}
	cluster.KillReplica(2, 2)
	if out, err := cluster.Script("restart", "2", "2"); err != nil {
		t.Fatalf("cluster restart 2 2: %v\n%s", err, out)
	}
	srv.Cmd.Process.Kill()
	srv.Cmd.Wait()
	newShard := cluster.Replica(2, 1) + "|" + cluster.Replica(2, 2)
	grown := []string{stores[0], stores[1], "--usage", "clickhouse://" + cluster.Replica(1, 1) + "|" + cluster.Replica(1, 2) + "," + newShard + "/replica_down"}
	if out := runBinary(t, bin, append([]string{"migrate"}, grown...)...); !strings.Contains(out, "migrated") {
		t.Errorf("migrate the new shard: %s", out)
	}
	// The moves run beside a firehose over other schools, one of which
	// moves too.
	srv = startServer(t, bin, grown)
	keys, fhToken := setupGroups(t, bin, grown, 3)
	var base atomic.Pointer[string]
	base.Store(&srv.Base)
	f := startFirehose(t, &base, fhToken, keys, 8)
	time.Sleep(time.Second)
	moveGroup(t, bin, grown, "crash", newShard)
	if out := moveGroup(t, bin, grown, "fh0", newShard); strings.Contains(out, "already on") {
		moveGroup(t, bin, grown, "fh0", cluster.Replica(1, 1)+"|"+cluster.Replica(1, 2))
	}
	time.Sleep(time.Second)
	acked, unacked := f.stop()
	checkFirehoseCounts(t, srv.Base, fhToken, keys, acked, unacked)
	if _, _, err := sendBatch(srv.Base, token, 1); err != nil {
		t.Fatal(err)
	}
	if got := perBatchCounts(t, srv.Base, key); len(got) != 2 || got[batchStudent(0)] != want[batchStudent(0)] || got[batchStudent(1)] != batchSize {
		t.Errorf("on the new shard: %v, want batches 0 and 1 of %d", got, batchSize)
	}
}

// TestThreeReplicasOneDown: a shard of three replicas, whose writes need
// two, takes and applies events and answers reports as before with one
// of them killed, and the replica catches up when it is back.
func TestThreeReplicasOneDown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes and kills a ClickHouse server")
	}
	cluster := storetest.NewReplicatedCluster(t, 20500, 1, 3)
	stores := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", cluster.URL("three_replicas")}
	bin := buildBinary(t)
	key, token := setupGroup(t, bin, stores, "crash")
	srv := startServer(t, bin, stores)
	send := func(b int) {
		t.Helper()
		if accepted, _, err := sendBatch(srv.Base, token, b); err != nil || accepted != batchSize {
			t.Fatalf("batch %d: %d accepted, %v", b, accepted, err)
		}
	}
	send(0)
	perBatchCounts(t, srv.Base, key)
	cluster.KillReplica(1, 3)
	for b := 1; b <= 3; b++ {
		send(b)
	}
	got := perBatchCounts(t, srv.Base, key)
	for b := 0; b <= 3; b++ {
		if got[batchStudent(b)] != batchSize {
			t.Errorf("batch %d with a replica of three down: %d messages, want %d", b, got[batchStudent(b)], batchSize)
		}
	}
	if out := runBinary(t, bin, append([]string{"shard", "list"}, stores...)...); !strings.Contains(out, "up, replica down: "+cluster.Replica(1, 3)) {
		t.Errorf("shard list does not name the replica down:\n%s", out)
	}
	if status := eraseStudent(t, srv.Base, token, "crash", batchStudent(1)); status != http.StatusNoContent {
		t.Errorf("erasure with a replica of three down: %d, want 204", status)
	}
	if n := studentReceipts(t, srv.Base, token, "crash", batchStudent(1)); n != 1 {
		t.Errorf("%d receipts of the erasure, want 1", n)
	}
	cluster.Start()
	send(4)
	if got := perBatchCounts(t, srv.Base, key); got[batchStudent(4)] != batchSize || len(got) != 4 || got[batchStudent(1)] != 0 {
		t.Errorf("after the replica came back: %v, want batches 0, 2, 3 and 4", got)
	}
	storetest.CheckReplicasAlike(t, cluster.URL("three_replicas"))
}

// moveGroup moves a group to a shard with the command line and returns
// what it printed. A replica started again takes a few seconds to count
// as alive in ZooKeeper: until then the shard's writes answer 503, and
// the move, which writes there, is tried again as an operator would. A
// try cut short by the 503 left the group placed there, its move
// finished by the next write or read (an intent, as any write's).
func moveGroup(t *testing.T, bin string, stores []string, group, shard string) string {
	t.Helper()
	var moved []byte
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if moved, err = runCommand(bin, append([]string{"group", "move", "--group", group, "--shard", shard}, stores...)...); err == nil {
			break
		}
	}
	if err != nil || !strings.Contains(string(moved), "moved group "+group) && !strings.Contains(string(moved), "already on "+shard) {
		t.Fatalf("group move of %s to %s: %v\n%s", group, shard, err, moved)
	}
	return string(moved)
}
