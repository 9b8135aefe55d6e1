package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// replicated is a service on a replicated cluster of the test's, with a
// group "crash": the group's key, a platform token, and the service's
// metrics, recorded from its start.
type replicated struct {
	cluster     *storetest.Cluster
	usage, base string
	key, token  string
	metrics     *metricsRecorder
}

// startReplicated starts a service on a one-shard cluster of two
// replicas, on ports from basePort (each test its own, so that they run
// in parallel).
func startReplicated(t *testing.T, basePort int) replicated {
	t.Helper()
	return startOn(t, storetest.NewReplicatedCluster(t, basePort, 1, 2))
}

// startOn is startReplicated on a cluster of the test's.
func startOn(t *testing.T, cluster *storetest.Cluster) replicated {
	t.Helper()
	r := replicated{cluster: cluster, usage: cluster.URL("replicas")}
	stores := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", r.usage}
	bin := buildBinary(t)
	r.key, r.token = setupGroup(t, bin, stores, "crash")
	// The tests ask for reports until the replicas answer, for up to a
	// minute: more than the default key rate (60 a minute) allows.
	addr := freePort(t)
	srv := startServer(t, bin, append(stores, "--store-timeout", replicaStoreTimeout.String(), "--key-rate-limit", "off", "--metrics-addr", addr))
	r.base, r.metrics = srv.Base, recordMetrics(t, addr)
	return r
}

// TestReplicaLostForGood kills one replica of the shard with SIGKILL
// while a client streams batches, deletes its data and starts an empty
// server in its place. Meanwhile every write is acknowledged (into the
// write-behind log) and every report answers within the store timeout
// with every acknowledged batch, though logged events wait for the
// quorum. Once the replacement is up, the log is applied by itself, every
// acknowledged batch counts once, and the replacement holds what its peer
// holds.
func TestReplicaLostForGood(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server process and kills a ClickHouse replica")
	}
	r := startReplicated(t, 19600)
	cluster, usage, base, key, token := r.cluster, r.usage, r.base, r.key, r.token
	acked := map[int]bool{}
	send := func(b int) {
		t.Helper()
		start := time.Now()
		if accepted, _, err := sendBatch(base, token, b); err != nil || accepted != batchSize {
			t.Fatalf("batch %d: accepted %d, %v (after %v)", b, accepted, err, time.Since(start))
		}
		acked[b] = true
	}
	for b := range 12 {
		send(b)
	}
	killed := r.metrics.now(t)
	cluster.KillReplica(1, 2)
	refused := 0
	for b := 12; b < 40; b++ {
		send(b)
		if b%4 == 0 && !reportWithin(t, base, key, acked) {
			refused++
		}
	}
	r.metrics.end()
	if refused > 0 {
		t.Errorf("with a replica down, %d of 7 reports answered 503, want every one answered from the applied rows and the log", refused)
	}

	r.metrics.checkAlerts(t, killed, "ClickHouseServerDown")
	cluster.Replace(1, 2)
	start := time.Now()
	for !reportWithin(t, base, key, acked) {
		if time.Since(start) > time.Minute {
			t.Fatal("reports did not answer within a minute of the replacement")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("reports answered with every batch %v after the replacement started", time.Since(start).Round(time.Millisecond))
	waitForApply(t, base, token, "crash")
	checkEveryBatchOnce(t, base, key, token, acked, 40)
	storetest.CheckReplicasAlike(t, usage)
}

// waitForApply waits until the group's log is applied: listing its
// students settles it as a write does, applying what the log holds, and
// answers 503 while that cannot be done.
func waitForApply(t *testing.T, base, token, group string) {
	t.Helper()
	start := time.Now()
	for deadline := start.Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequest("GET", base+"/v1/admin/groups/"+group+"/students", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("the log applied %v after the wait began", time.Since(start).Round(time.Millisecond))
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log was not applied within a minute: %v %v", resp, err)
		}
	}
}

// reportWithin asks for the student reports within the store timeout and
// reports whether they answered; answered, every acknowledged batch must
// count once, and refused, the answer must be a 503.
func reportWithin(t *testing.T, base, key string, acked map[int]bool) bool {
	t.Helper()
	start := time.Now()
	status, values, err := askStudentReports(base, key, "startDate=2026-01-05&endDate=2026-01-05")
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > replicaStoreTimeout+2*time.Second {
		t.Errorf("a report took %v, want the store timeout (%v) at most", took, replicaStoreTimeout)
	}
	switch status {
	case http.StatusServiceUnavailable:
		return false
	case http.StatusOK:
	default:
		t.Fatalf("a report answered %d, want 200 or 503", status)
	}
	for b := range acked {
		if got := values[batchStudent(b)]["Total Messages"]; got != batchSize {
			t.Fatalf("acknowledged batch %d counts %d, want %d", b, got, batchSize)
		}
	}
	return true
}

// TestZooKeeperStoppedMidStream stops ZooKeeper for 20 s while a client
// streams batches, sending each until it is acknowledged: the one server
// of a cluster, and the leader of an ensemble of three. Every write and
// every report answers within the store timeout, each report with every
// batch acknowledged before it though logged events cannot be applied,
// and every batch counts once once ZooKeeper is back.
func TestZooKeeperStoppedMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server process and stops ZooKeeper")
	}
	for _, tc := range []struct {
		name    string
		cluster func(t *testing.T) *storetest.Cluster
		stopped func(c *storetest.Cluster) []int // the servers to stop; none: all
		alerts  []string                         // that fire if it lasts; none: no page
	}{
		{"the only one", func(t *testing.T) *storetest.Cluster { return storetest.NewReplicatedCluster(t, 20300, 1, 2) },
			func(*storetest.Cluster) []int { return nil }, []string{"ClickHouseLostZooKeeper"}},
		{"the leader of three", func(t *testing.T) *storetest.Cluster { return storetest.NewEnsembleCluster(t, 18900, 1, 2) },
			func(c *storetest.Cluster) []int { return []int{c.ZooKeeperLeader()} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := tc.cluster(t)
			zooKeeperStoppedMidStream(t, cluster, func() func() {
				stopped := tc.stopped(cluster)
				cluster.StopZooKeeper(stopped...)
				return func() { cluster.StartZooKeeper(stopped...) }
			}, tc.alerts)
		})
	}
}

// zooKeeperStoppedMidStream is TestZooKeeperStoppedMidStream on cluster,
// where fault stops ZooKeeper (or some of its servers) and returns what
// starts it again; the alerts fire if the fault lasts (none: no page).
func zooKeeperStoppedMidStream(t *testing.T, cluster *storetest.Cluster, fault func() (restore func()), alerts []string) {
	r := startOn(t, cluster)
	usage, base, key, token := r.usage, r.base, r.key, r.token
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
			// A busy school's pace (1,600 events a second): a report folds
			// the events its school has waiting, up to 50,000.
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
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
	ackedSoFar := func() map[int]bool {
		m := map[int]bool{}
		for b := range int(acked.Load()) {
			m[b] = true
		}
		return m
	}
	waitFor("twelve batches acknowledged", func() bool { return acked.Load() >= 12 })

	faultAt := r.metrics.now(t)
	restore := fault()
	stopped, reports, answered, slowestReport := time.Now(), 0, 0, time.Duration(0)
	for time.Since(stopped) < 20*time.Second {
		start := time.Now()
		if reportWithin(t, base, key, ackedSoFar()) {
			answered++
		}
		slowestReport = max(slowestReport, time.Since(start))
		reports++
		time.Sleep(500 * time.Millisecond)
	}
	during := acked.Load()
	r.metrics.end()
	restore()
	waitFor("ten batches acknowledged after ZooKeeper came back", func() bool { return acked.Load() >= during+10 })
	close(stop)
	<-streamed
	waitFor("a report after ZooKeeper came back", func() bool { return reportWithin(t, base, key, ackedSoFar()) })

	t.Logf("with ZooKeeper stopped: %d batches acknowledged, %d writes refused, %d of %d reports answered; the slowest write took %v, the slowest report %v",
		during-12, failures.Load(), answered, reports, time.Duration(slowest.Load()).Round(time.Millisecond), slowestReport.Round(time.Millisecond))
	if answered < reports {
		t.Errorf("with ZooKeeper stopped, %d of %d reports answered 503, want every one answered from the applied rows and the log", reports-answered, reports)
	}
	if d := time.Duration(slowest.Load()); d > replicaStoreTimeout+2*time.Second {
		t.Errorf("a write took %v to answer, want the store timeout (%v) at most", d, replicaStoreTimeout)
	}
	waitForApply(t, base, token, "crash")
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
	r.metrics.checkAlerts(t, faultAt, alerts...)
}

// TestReplicaStartsWithUnexpectedParts starts a replica whose tables hold
// parts that ZooKeeper does not know of, as a replica killed between
// writing an insert's part and recording it does: here, copies of every
// part, twice, so that such rows are two thirds of each table, past
// ClickHouse's default limit (half) that would keep the table from
// starting. The replica starts, sets the copies aside, and holds what its
// peer holds; every acknowledged batch counts once.
func TestReplicaStartsWithUnexpectedParts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server process and kills a ClickHouse replica")
	}
	r := startReplicated(t, 20400)
	cluster, usage, base, key, token := r.cluster, r.usage, r.base, r.key, r.token
	acked := map[int]bool{}
	for b := range 6 {
		if accepted, _, err := sendBatch(base, token, b); err != nil || accepted != batchSize {
			t.Fatalf("batch %d: accepted %d, %v", b, accepted, err)
		}
		acked[b] = true
	}
	for !reportWithin(t, base, key, acked) {
		time.Sleep(100 * time.Millisecond) // until the log is applied
	}
	storetest.CheckReplicasAlike(t, usage)
	cluster.KillReplica(1, 2)
	copied := 0
	for _, table := range []string{"events", "group_rollups", "student_counts", "students"} {
		dir := cluster.TableDir(1, 2, "replicas", table)
		parts, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range parts {
			fields := strings.Split(part.Name(), "_")
			if !part.IsDir() || part.Name() == "detached" || len(fields) < 4 {
				continue
			}
			for n := range 2 {
				copied++
				name := fmt.Sprintf("%s_%d_%d_0", fields[0], 900_000+copied, 900_000+copied)
				if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join(dir, part.Name()))); err != nil {
					t.Fatalf("copy %d of %s: %v", n, part.Name(), err)
				}
			}
		}
	}
	if copied == 0 {
		t.Fatal("the replica holds no parts to copy")
	}
	cluster.Start()
	// A batch written after the restart is applied once the replica is
	// back in the quorum; until then its reports answer 503.
	if accepted, _, err := sendBatch(base, token, 6); err != nil || accepted != batchSize {
		t.Fatalf("batch 6: accepted %d, %v", accepted, err)
	}
	acked[6] = true
	for start := time.Now(); !reportWithin(t, base, key, acked); time.Sleep(200 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatal("reports did not answer within a minute of the restart")
		}
	}
	checkEveryBatchOnce(t, base, key, token, acked, 7)
	storetest.CheckReplicasAlike(t, usage)
}
