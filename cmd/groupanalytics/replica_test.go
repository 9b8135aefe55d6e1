package main

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"groupanalytics/internal/stores/storetest"
)

// replicaStoreTimeout is the service's --store-timeout in the replica
// tests: longer than a quorum insert's timeout (5 s), so that a write
// that waited for a lost replica's quorum still answers 503 itself.
const replicaStoreTimeout = 6 * time.Second

// startReplicated starts a service on a one-shard cluster of two
// replicas with a group, and returns the cluster, the service's base
// URL, the group's key and a platform token.
func startReplicated(t *testing.T) (cluster *storetest.Cluster, usage, base, key, token string) {
	t.Helper()
	cluster = storetest.NewReplicatedCluster(t, 19600, 1, 2)
	usage = cluster.URL("replicas")
	stores := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", usage}
	bin := buildBinary(t)
	key, token = setupGroup(t, bin, stores, "crash")
	srv := startServer(t, bin, append(stores, "--store-timeout", replicaStoreTimeout.String()))
	return cluster, usage, srv.Base, key, token
}

// TestReplicaLostForGood kills one replica of the shard with SIGKILL
// while a client streams batches, deletes its data and starts an empty
// server in its place. Meanwhile reports answer, with every acknowledged
// batch; a write answers 503. Once the replacement is up, ingestion goes
// on by itself, every acknowledged batch counts once, and the replacement
// holds what its peer holds.
func TestReplicaLostForGood(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server process and kills a ClickHouse replica")
	}
	cluster, usage, base, key, token := startReplicated(t)
	acked, inFlight := streamUntilFault(t, base, token, func() { cluster.KillReplica(1, 2) })

	counts := perBatchCounts(t, base, key)
	for b := range acked {
		if counts[batchStudent(b)] != batchSize {
			t.Errorf("with a replica down, acknowledged batch %d counts %d, want %d", b, counts[batchStudent(b)], batchSize)
		}
	}
	// Once ZooKeeper has seen the replica's session end (4 s), a write
	// is refused at once rather than after the quorum's timeout.
	time.Sleep(5 * time.Second)
	start := time.Now()
	if _, _, err := sendBatch(base, token, inFlight); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("a write with one replica of two: %v, want a 503", err)
	}
	t.Logf("with a replica down, a write answered 503 in %v", time.Since(start).Round(time.Millisecond))

	cluster.Replace(1, 2)
	start = time.Now()
	for {
		if _, _, err := sendBatch(base, token, inFlight); err == nil {
			break
		} else if time.Since(start) > time.Minute {
			t.Fatalf("ingestion did not resume within a minute of the replacement: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("ingestion resumed %v after the replacement started", time.Since(start).Round(time.Millisecond))
	checkEveryBatchOnce(t, base, key, token, acked, inFlight)
	storetest.CheckReplicasAlike(t, usage)
}

// TestZooKeeperStoppedMidStream stops ZooKeeper for 20 s while a client
// streams batches, sending each until it is acknowledged: reports answer
// all along with every batch acknowledged before them, every write
// answers within the store timeout, ingestion goes on once ZooKeeper is
// back, and every batch counts once.
func TestZooKeeperStoppedMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server process and stops ZooKeeper")
	}
	cluster, usage, base, key, token := startReplicated(t)
	var acked atomic.Int64 // batches 0…acked-1 are acknowledged
	var failures atomic.Int64
	var slowest atomic.Int64 // the longest answer, in nanoseconds
	stop := make(chan struct{})
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		for b := 0; b < 2000; {
			start := time.Now()
			_, _, err := sendBatch(base, token, b)
			slowest.Store(max(slowest.Load(), int64(time.Since(start))))
			if err != nil {
				failures.Add(1)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			b++
			acked.Store(int64(b))
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				close(stop)
				<-streamed
				t.Fatalf("%s: not within a minute", what)
			}
		}
	}
	waitFor("twelve batches acknowledged", func() bool { return acked.Load() >= 12 })

	cluster.StopZooKeeper()
	stopped, reports := time.Now(), 0
	for time.Since(stopped) < 20*time.Second {
		n := acked.Load()
		counts := perBatchCounts(t, base, key)
		for b := range int(n) {
			if counts[batchStudent(b)] != batchSize {
				t.Fatalf("without ZooKeeper, acknowledged batch %d counts %d, want %d", b, counts[batchStudent(b)], batchSize)
			}
		}
		reports++
		time.Sleep(500 * time.Millisecond)
	}
	during := acked.Load()
	cluster.StartZooKeeper()
	waitFor("ten batches acknowledged after ZooKeeper came back", func() bool { return acked.Load() >= during+10 })
	close(stop)
	<-streamed

	t.Logf("%d reports answered without ZooKeeper; %d writes refused; the slowest answer took %v",
		reports, failures.Load(), time.Duration(slowest.Load()).Round(time.Millisecond))
	if failures.Load() == 0 {
		t.Error("no write was refused without ZooKeeper")
	}
	if d := time.Duration(slowest.Load()); d > replicaStoreTimeout+2*time.Second {
		t.Errorf("a write took %v to answer, want the store timeout (%v) at most", d, replicaStoreTimeout)
	}
	n := int(acked.Load())
	counts := perBatchCounts(t, base, key)
	for b := range n {
		if counts[batchStudent(b)] != batchSize {
			t.Errorf("batch %d counts %d, want %d", b, counts[batchStudent(b)], batchSize)
		}
	}
	if len(counts) != n {
		t.Errorf("%d students, want one per batch: %d", len(counts), n)
	}
	storetest.CheckReplicasAlike(t, usage)
}
