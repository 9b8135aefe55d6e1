package main

import (
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"groupanalytics/internal/stores/storetest"
)

// TestClickHouseServerKilledMidStream kills the ClickHouse server holding
// a group with SIGKILL while a client streams batches to the service,
// starts it again, and checks that every acknowledged batch counts exactly
// once and that the batch in flight, if one failed, re-sent, counts once
// too. The service applied the group's events, so it knows which ids the
// server holds: new batches are logged while the server is down, unless
// one meets a write the kill cut short.
func TestClickHouseServerKilledMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server process and kills a ClickHouse server")
	}
	cluster := storetest.NewCluster(t, 19400, 1)
	stores := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", cluster.URL("killed")}
	bin := buildBinary(t)
	key, token := setupGroup(t, bin, stores, "crash")
	srv := startServer(t, bin, stores)
	acked, inFlight := streamUntilFault(t, srv.Base, token, func() {
		// A report first, which applies what is logged: the group is then
		// placed on the server, and the applier's writes meet the kill.
		askStudentReports(srv.Base, key, "startDate=2026-01-05&endDate=2026-01-05")
		cluster.Kill(1)
	})
	if code, _, _ := askStudentReports(srv.Base, key, "startDate=2026-01-05&endDate=2026-01-05"); inFlight < 0 && code != http.StatusServiceUnavailable {
		t.Errorf("a report with acknowledged events waiting for the killed server: status %d, want 503", code)
	}
	cluster.Start()
	checkEveryBatchOnce(t, srv.Base, key, token, acked, inFlight)
}

// shardLoad is a line of shard list: a shard, its number of groups, its
// events, and the groups' ids.
var shardLoad = regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+(\d+)\s+up\b[ \t]*(.*)$`)

// TestMoveWhileStreaming moves a group to the other shard and back, with
// the command line, while a client streams batches to the service and
// re-sends each until it is acknowledged: every batch counts once, and
// every event is stored once, on the group's last shard.
func TestMoveWhileStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server and move processes")
	}
	usage := storetest.NewClickHouseURL(t)
	stores := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", usage}
	bin := buildBinary(t)
	key, token := setupGroup(t, bin, stores, "crash")
	srv := startServer(t, bin, stores)
	if _, _, err := sendBatch(srv.Base, token, 0); err != nil {
		t.Fatal(err)
	}
	perBatchCounts(t, srv.Base, key) // a report applies the batch, which places the group
	loads := shardLoad.FindAllStringSubmatch(runBinary(t, bin, append([]string{"shard", "list"}, stores...)...), -1)
	if len(loads) != 2 {
		t.Fatalf("shard list: %v, want two shards up", loads)
	}
	home, away := loads[0][1], loads[1][1]
	if loads[0][2] != "1" {
		home, away = away, home
	}

	var acked atomic.Int64
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		for i, to := range []string{away, home} {
			for acked.Load() < int64(10*(i+1)) {
				time.Sleep(time.Millisecond)
			}
			out, err := runCommand(bin, append([]string{"group", "move", "--group", "crash", "--shard", to}, stores...)...)
			if err != nil || !strings.Contains(string(out), "moved group crash") {
				t.Errorf("group move to %s: %v\n%s", to, err, out)
			}
			t.Logf("%s", out)
		}
	}()
	// The moves log to t, so they must end before it does.
	t.Cleanup(func() { <-moved })
	batches := 1 // batch 0 placed the group
	for stop := false; !stop; {
		var err error
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, _, err = sendBatch(srv.Base, token, batches); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("batch %d not acknowledged within a minute: %v", batches, err)
		}
		batches++
		acked.Add(1)
		select {
		case <-moved:
			stop = batches > 40 // and a few batches after the moves
		default:
			if batches == 400 {
				t.Fatal("the moves did not end")
			}
		}
	}

	counts := perBatchCounts(t, srv.Base, key)
	var total int64
	for b := range batches {
		if n := counts[batchStudent(b)]; n != batchSize {
			t.Errorf("batch %d counts %d, want %d", b, n, batchSize)
		}
		total += counts[batchStudent(b)]
	}
	if want := int64(batches * batchSize); total != want || len(counts) != batches {
		t.Errorf("%d batches total %d, want %d batches, %d", len(counts), total, batches, want)
	}
	if raw := storetest.RawClickHouseEvents(t, usage, "crash"); len(raw) != batches*batchSize {
		t.Errorf("%d events stored, want %d", len(raw), batches*batchSize)
	}
	for _, l := range shardLoad.FindAllStringSubmatch(runBinary(t, bin, append([]string{"shard", "list"}, stores...)...), -1) {
		if l[1] == away && (l[2] != "0" || l[3] != "0" || l[4] != "") {
			t.Errorf("shard list: %s, want the shard moved away from empty", l[0])
		}
		if l[1] == home && l[4] != "crash" {
			t.Errorf("shard list: %s, want the group crash listed on its shard", l[0])
		}
	}
	onHome := regexp.MustCompile(`(?m)^crash\s.*\s` + regexp.QuoteMeta(home) + `$`)
	if out := runBinary(t, bin, append([]string{"group", "list"}, stores...)...); !onHome.MatchString(out) {
		t.Errorf("group list --usage:\n%s\nwant the group crash on %s", out, home)
	}
}
