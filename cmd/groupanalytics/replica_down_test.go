package main

import (
	"strings"
	"testing"

	"groupanalytics/internal/stores/storetest"
)

// TestStartWithAReplicaDown: with one replica of a shard killed, a new
// serve starts and answers from the other, the commands that read the
// directory work, shard list names the replica down, and migrate refuses
// to say the schema is done until the replica is back, then migrates it.
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
}
