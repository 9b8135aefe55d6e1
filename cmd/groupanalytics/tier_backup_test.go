package main

import (
	"database/sql"
	"maps"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"groupanalytics/internal/stores/storetest"
)

// TestBackupAndRestoreTheTier backs up a replicated two-shard ClickHouse
// tier and its directory with the backup command while a firehose runs,
// restores them with the restore command onto fresh servers (another
// cluster, at other addresses) and an empty database, and serves the
// restored pair: every event acknowledged before the backup began counts
// exactly once, no other more than once, and sent again, as the platform
// would, every event counts once. A restore onto servers that hold usage
// is refused.
func TestBackupAndRestoreTheTier(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes on two ClickHouse clusters")
	}
	t.Parallel() // it waits on its clusters: beside the package's other waiting tests
	bin := buildBinary(t)
	live := storetest.NewReplicatedCluster(t, 19940, 2, 2)
	fresh := storetest.NewReplicatedCluster(t, 20040, 2, 2)
	stores := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", live.URL("tier")}
	keys, token := setupGroups(t, bin, stores, 4)
	srv := startServer(t, bin, stores)
	var base atomic.Pointer[string]
	base.Store(&srv.Base)

	f := startFirehose(t, &base, token, keys, 8)
	time.Sleep(2 * time.Second)
	f.mu.Lock()
	before := maps.Clone(f.acked)
	f.mu.Unlock()
	backup := filepath.Join(t.TempDir(), "backup")
	out := runBinary(t, bin, append([]string{"backup", "--to", backup}, stores...)...)
	t.Logf("%s", out)
	time.Sleep(time.Second)
	acked, unacked := f.stop()
	if len(acked) == len(before) {
		t.Fatal("no event acknowledged during or after the backup: it did not run beside the firehose")
	}
	srv.Cmd.Process.Kill()
	srv.Cmd.Wait()

	restored := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", fresh.URL("tier")}
	if out := runBinary(t, bin, append([]string{"restore", "--from", backup}, restored...)...); !strings.Contains(out, "every replica checked") {
		t.Errorf("restore: %s", out)
	}
	again := []string{"--db", storetest.NewPostgresDatabase(t), "--usage", fresh.URL("tier")}
	if out, err := runCommand(bin, append([]string{"restore", "--from", backup}, again...)...); err == nil || !strings.Contains(string(out), "restore onto servers without usage") {
		t.Errorf("a restore onto servers that hold usage: %v\n%s", err, out)
	}
	if tables := tablesOf(t, again[1]); tables != 0 {
		t.Errorf("a restore refused for the servers' usage wrote %d tables of the directory first", tables)
	}

	srv = startServer(t, bin, restored)
	counts := eventCounts(t, srv.Base, keys)
	for id := range before {
		if counts[id] != 1 {
			t.Errorf("event %s, acknowledged before the backup, counts %d after the restore", id, counts[id])
		}
	}
	sent := maps.Clone(acked)
	maps.Copy(sent, unacked)
	for id, n := range counts {
		if _, ok := sent[id]; !ok || n > 1 {
			t.Errorf("event %s counts %d after the restore (sent: %v)", id, n, ok)
		}
	}
	for id, group := range sent {
		if _, ok := before[id]; !ok {
			waitForEvent(t, srv.Base, token, id, group)
		}
	}
	counts = eventCounts(t, srv.Base, keys)
	for id := range sent {
		if counts[id] != 1 {
			t.Errorf("event %s counts %d after the restore and the resends, want 1", id, counts[id])
		}
	}
	t.Logf("%d events acknowledged before the backup, %d sent in all", len(before), len(sent))
	storetest.CheckReplicasAlike(t, fresh.URL("tier"))
}

// tablesOf counts the tables of the PostgreSQL database at dsn.
func tablesOf(t *testing.T, dsn string) int {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitForEvent sends one event of the firehose's until it is taken (for a
// minute at most).
func waitForEvent(t *testing.T, base, token, id, group string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, _, err = postEvents(base, token, firehoseEvent(id, group)); err == nil {
			return
		}
	}
	t.Fatalf("event %s not taken: %v", id, err)
}
