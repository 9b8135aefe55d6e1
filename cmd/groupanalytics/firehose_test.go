package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"groupanalytics/internal/bench"
	"groupanalytics/internal/stores/storetest"
)

// TestFirehoseThroughFaults runs a firehose (one event per request, from
// many connections, over several groups) while the service is killed with
// SIGKILL and started again, on replicated ClickHouse while a replica is
// killed, the service restarted and students erased meanwhile
// (throughAReplicaDown), and on every store with a PostgreSQL directory
// while PostgreSQL goes away for two seconds, as in a restart (every
// connection cut, new ones refused: a proxy in front of it). Each event is its own student's, so that
// the reports tell which events count. Afterwards every acknowledged event
// counts exactly once and every other counts once or not at all; sent
// again, each counts once, and the answer says it was a duplicate exactly
// when it counted before.
func TestFirehoseThroughFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills server processes")
	}
	bin := buildBinary(t)
	for _, kind := range []string{"sqlite", "postgres", "clickhouse", "replicated"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel() // each kind has stores of its own
			var cluster *storetest.Cluster
			var stores []string
			if kind == "replicated" {
				cluster = storetest.NewReplicatedCluster(t, 19800, 2, 2)
				stores = []string{"--db", storetest.NewPostgresDatabase(t), "--usage", cluster.URL("firehose")}
			} else {
				stores = storeKinds[kind](t)
			}
			var pg *storetest.Proxy
			if kind != "sqlite" {
				dbURL, err := url.Parse(stores[1])
				if err != nil {
					t.Fatal(err)
				}
				pg = storetest.NewProxy(t, dbURL.Host)
				dbURL.Host = pg.Addr()
				stores[1] = dbURL.String()
			}
			keys, token := setupGroups(t, bin, stores, 8)
			serve := append(stores, "--store-timeout", replicaStoreTimeout.String(), "--token-rate-limit", "off")
			srv := startServer(t, bin, serve)
			var base atomic.Pointer[string]
			base.Store(&srv.Base)

			f := startFirehose(t, &base, token, keys, 24)
			f.running(t)
			srv.Cmd.Process.Signal(syscall.SIGKILL)
			srv.Cmd.Wait()
			srv = startServer(t, bin, serve)
			base.Store(&srv.Base)
			f.running(t)
			if cluster != nil {
				srv = throughAReplicaDown(t, bin, cluster, stores, serve, srv, token, keys)
				base.Store(&srv.Base)
			}
			if pg != nil {
				pg.Cut()
				time.Sleep(2 * time.Second)
				pg.Start(t)
				f.running(t)
			}
			acked, unacked := f.stop()
			t.Logf("%d events acknowledged, %d not", len(acked), len(unacked))
			if len(acked) < 100 || len(unacked) == 0 {
				t.Fatalf("%d acknowledged and %d not: the faults did not hit a running firehose", len(acked), len(unacked))
			}

			checkFirehoseCounts(t, *base.Load(), token, keys, acked, unacked)
			if cluster != nil {
				storetest.CheckReplicasAlike(t, cluster.URL("firehose"))
			}
		})
	}
}

// throughAReplicaDown kills a replica of shard 1 while the firehose runs,
// with a student of every group who is not the firehose's: the service,
// killed and started again meanwhile, serves, and an admin command works;
// erasing those students answers 503 where the shard is the replica's
// (some must) and 204 elsewhere. Once the replica is back, asked again,
// each erasure answers 204 and each student has exactly one receipt. It
// returns the server started.
func throughAReplicaDown(t *testing.T, bin string, cluster *storetest.Cluster, stores, serve []string, srv *bench.Server, token string, keys map[string]string) *bench.Server {
	t.Helper()
	for g := range keys {
		waitForEvent(t, srv.Base, token, "erase-"+g, g)
	}
	// Applied on both replicas first (a report applies what the log
	// holds), so that each erasure on shard 1 has rows there to rewrite.
	eventCounts(t, srv.Base, keys)
	cluster.KillReplica(1, 2)
	srv.Cmd.Process.Signal(syscall.SIGKILL)
	srv.Cmd.Wait()
	srv = startServer(t, bin, serve)
	if out := runBinary(t, bin, append([]string{"group", "list"}, stores...)...); !strings.Contains(out, "fh0") {
		t.Errorf("group list with a replica down: %s", out)
	}
	// Each group's erasure holds its writers, and one waiting for the
	// replica does so for the store timeout: they are asked at once.
	var refused atomic.Int32
	eachGroup(keys, func(g string) {
		if status := eraseStudent(t, srv.Base, token, g, "erase-"+g); status == http.StatusServiceUnavailable {
			refused.Add(1)
		} else if status != http.StatusNoContent {
			t.Errorf("erasing a student of %s with a replica down: %d", g, status)
		}
	})
	if refused.Load() == 0 {
		t.Error("no erasure waited for the replica down")
	}
	cluster.Start()
	eachGroup(keys, func(g string) {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			status := eraseStudent(t, srv.Base, token, g, "erase-"+g)
			if status == http.StatusNoContent {
				break
			}
			if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Errorf("erasing a student of %s again once the replica is back: %d", g, status)
				return
			}
		}
		if n := studentReceipts(t, srv.Base, token, g, "erase-"+g); n != 1 {
			t.Errorf("the student erased of %s has %d receipts, want 1", g, n)
		}
	})
	return srv
}

// eachGroup runs fn for every group of keys at once.
func eachGroup(keys map[string]string, fn func(group string)) {
	var wg sync.WaitGroup
	for g := range keys {
		wg.Go(func() { fn(g) })
	}
	wg.Wait()
}

// eraseStudent asks the platform API to erase a student and returns the
// answer's status.
func eraseStudent(t *testing.T, base, token, group, student string) int {
	t.Helper()
	req, _ := http.NewRequest("DELETE", base+"/v1/admin/groups/"+group+"/students/"+student, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// studentReceipts counts the deletion receipts that name a student.
func studentReceipts(t *testing.T, base, token, group, student string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/admin/receipts?groupId="+group, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	var list struct {
		Receipts []struct {
			StudentID *string `json:"studentId"`
		} `json:"receipts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("receipts: %d %v", resp.StatusCode, err)
	}
	n := 0
	for _, r := range list.Receipts {
		if r.StudentID != nil && *r.StudentID == student {
			n++
		}
	}
	return n
}

// checkFirehoseCounts checks a firehose's events in the reports of the
// service at base: every acknowledged event counts exactly once and every
// other once or not at all; sent again, each counts once, and the answer
// says it was a duplicate exactly when it counted before.
func checkFirehoseCounts(t *testing.T, base, token string, keys, acked, unacked map[string]string) {
	t.Helper()
	counts := eventCounts(t, base, keys)
	for id := range acked {
		if counts[id] != 1 {
			t.Errorf("acknowledged event %s counts %d, want 1", id, counts[id])
		}
	}
	countedBefore := map[string]bool{}
	for id := range unacked {
		if counts[id] > 1 {
			t.Errorf("unacknowledged event %s counts %d, want 0 or 1", id, counts[id])
		}
		countedBefore[id] = counts[id] == 1
	}
	for id, n := range counts {
		if _, sent := acked[id]; !sent && unacked[id] == "" && n != 0 {
			t.Errorf("event %s, never sent, counts %d", id, n)
		}
	}
	// Sent again, as the platform would: one event a request, from
	// several connections.
	resend := make(chan string)
	var senders sync.WaitGroup
	for range 16 {
		senders.Go(func() {
			for id := range resend {
				var accepted, duplicates int
				var err error
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					if accepted, duplicates, err = postEvents(base, token, firehoseEvent(id, unacked[id])); err == nil {
						break
					}
				}
				if err != nil || accepted+duplicates != 1 || (duplicates == 1) != countedBefore[id] {
					t.Errorf("event %s sent again (counted before: %v): accepted %d, duplicates %d, %v", id, countedBefore[id], accepted, duplicates, err)
				}
			}
		})
	}
	for id := range unacked {
		resend <- id
	}
	close(resend)
	senders.Wait()
	counts = eventCounts(t, base, keys)
	for id := range acked {
		if counts[id] != 1 {
			t.Errorf("after the resends, event %s counts %d, want 1", id, counts[id])
		}
	}
	for id := range unacked {
		if counts[id] != 1 {
			t.Errorf("event %s, sent again, counts %d, want 1", id, counts[id])
		}
	}
}

// setupGroups creates n groups with a plan from 2025 on and a report key
// each, and a platform token, through the command line; it returns the
// keys by group.
func setupGroups(t *testing.T, bin string, stores []string, n int) (keys map[string]string, token string) {
	t.Helper()
	admin := func(args ...string) string { return runBinary(t, bin, append(args, stores...)...) }
	admin("migrate")
	keys = map[string]string{}
	for g := range n {
		id := fmt.Sprintf("fh%d", g)
		admin("group", "create", "--id", id)
		admin("plan", "set", "--group", id, "--start", "2025-01-01")
		keys[id] = regexp.MustCompile(`gak_\w+`).FindString(admin("key", "create", "--group", id))
	}
	return keys, regexp.MustCompile(`gat_\w+`).FindString(admin("token", "create"))
}

// firehose is clients sending one event per request until stopped.
type firehose struct {
	done    chan struct{}
	clients sync.WaitGroup
	mu      sync.Mutex
	acked   map[string]string // event id: group
	unacked map[string]string
	ackedAt []time.Time   // when each acknowledgement came
	slowest time.Duration // the longest request
}

// startFirehose starts conns clients, each sending events of its own ids
// round robin over the groups, to the service at base (which a restart
// changes). A service that limits the token's rate (the default) refuses
// most of them for that, not for a fault: fault tests serve with
// --token-rate-limit off.
func startFirehose(t *testing.T, base *atomic.Pointer[string], token string, keys map[string]string, conns int) *firehose {
	var groups []string
	for g := range keys {
		groups = append(groups, g)
	}
	f := &firehose{done: make(chan struct{}), acked: map[string]string{}, unacked: map[string]string{}}
	for c := range conns {
		f.clients.Go(func() {
			for n := 0; n < 100_000; n++ {
				select {
				case <-f.done:
					return
				default:
				}
				id, group := fmt.Sprintf("c%02d-%05d", c, n), groups[(c+n)%len(groups)]
				sent := time.Now()
				accepted, _, err := postEvents(*base.Load(), token, firehoseEvent(id, group))
				f.mu.Lock()
				f.slowest = max(f.slowest, time.Since(sent))
				if err == nil && accepted == 1 {
					f.acked[id] = group
					f.ackedAt = append(f.ackedAt, time.Now())
				} else {
					f.unacked[id] = group
				}
				f.mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond) // the service is down: do not spin
				}
			}
		})
	}
	return f
}

// running waits until the firehose has been acknowledged for a second
// since the call, and 100 events at least, for a minute at most: the next
// fault hits a running firehose however slowly the service (re)started.
func (f *firehose) running(t *testing.T) {
	t.Helper()
	acks := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.ackedAt)
	}
	from, start := acks(), time.Now()
	for deadline := start.Add(time.Minute); acks() < from+100 || time.Since(start) < time.Second; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the firehose had %d acknowledgements in a minute, want 100", acks()-from)
		}
	}
}

// stop stops the clients and returns the events acknowledged and those
// not, by id.
func (f *firehose) stop() (acked, unacked map[string]string) {
	close(f.done)
	f.clients.Wait()
	return f.acked, f.unacked
}

// firehoseEvent is a chat message whose student is the event itself.
func firehoseEvent(id, group string) []byte {
	body, _ := json.Marshal([]map[string]string{{"id": id, "groupId": group, "studentId": id,
		"occurredAt": "2026-01-05T10:00:00Z", "kind": "chat.message_sent", "chatType": "main"}})
	return body
}

// eventCounts reads how many messages each student (each event) of the
// groups has.
//
// A report may answer 503 while its group's logged events wait for
// ClickHouse to take writes again (a replica rejoining): it is asked
// again, for a minute at most.
func eventCounts(t *testing.T, base string, keys map[string]string) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	for _, key := range keys {
		deadline := time.Now().Add(time.Minute)
		for {
			status, values, err := askStudentReports(base, key, "startDate=2026-01-05&endDate=2026-01-05")
			if err == nil && status == http.StatusOK {
				for student, v := range values {
					counts[student] = v["Total Messages"]
				}
				break
			}
			if err != nil || status != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("student reports: %d %v", status, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return counts
}
