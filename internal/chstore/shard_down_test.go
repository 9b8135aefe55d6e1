package chstore_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/sqlstore/storetest"
)

// ownCluster starts a two-shard cluster of the test's own (so that
// stopping a shard disturbs no other test) and returns its directory.
func ownCluster(t *testing.T, basePort int) string {
	t.Helper()
	storetest.RequireClickHouse(t)
	dir := t.TempDir()
	script, err := filepath.Abs("../../deploy/clickhouse/cluster")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		cmd := exec.Command(script, args...)
		cmd.Env = append(os.Environ(), "GROUPANALYTICS_CLICKHOUSE_DIR="+dir, "BASE_PORT="+strconv.Itoa(basePort))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cluster %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("start", "2")
	t.Cleanup(func() { run("stop") })
	return dir
}

// TestOneShardDown: with one shard killed, the groups of the other keep
// ingesting and answering, the down shard's groups get a quick
// unavailable error, and when the shard is back everything acknowledged
// is there.
func TestOneShardDown(t *testing.T) {
	const base = 19300
	dir := ownCluster(t, base)
	url := "clickhouse://127.0.0.1:19301,127.0.0.1:19302/shard_down"
	s := storetest.OpenClickHouse(t, storetest.NewPostgresDatabase(t), url)
	usage := s.Usage.(*chstore.Store)
	f := &fixture{t: t, dir: s.Directory, locks: s.Directory, usage: usage, url: url}
	shardOf := map[string]string{}
	for _, g := range []string{"g1", "g2"} {
		f.group(g)
		if _, err := usage.AppendEvents(ctx, []analytics.Event{event(g, "e1", "s1", day, analytics.MainChatMessages)}); err != nil {
			t.Fatal(err)
		}
		p, _, err := f.locks.Placement(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		shardOf[p.Shard] = g
	}
	up, down := shardOf["127.0.0.1:19301"], shardOf["127.0.0.1:19302"]
	if up == "" || down == "" {
		t.Fatalf("placements %v: want one group per shard", shardOf)
	}
	pid, err := os.ReadFile(filepath.Join(dir, "shard2", "pid"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)

	if _, err := usage.AppendEvents(ctx, []analytics.Event{event(up, "e2", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Errorf("group on the live shard: %v", err)
	}
	if got := f.dayRollup(up).Counts[analytics.MainChatMessages]; got != 2 {
		t.Errorf("group on the live shard counts %d, want 2", got)
	}
	start := time.Now()
	_, err = usage.AppendEvents(ctx, []analytics.Event{event(down, "e2", "s1", day, analytics.MainChatMessages)})
	if analytics.ErrorCode(err) != analytics.Unavailable || time.Since(start) > 5*time.Second {
		t.Errorf("ingesting on the down shard: %v after %v, want unavailable within 5 s", err, time.Since(start))
	}
	d := analytics.DayOf(day, time.UTC)
	if _, err := usage.GroupRollups(ctx, down, analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: d, Last: d}}); analytics.ErrorCode(err) != analytics.Unavailable {
		t.Errorf("reading the down shard: %v, want unavailable", err)
	}
	if err := usage.Ping(ctx); err != nil {
		t.Errorf("ping with one shard up: %v", err)
	}

	ownClusterRestart(t, dir, base)
	if got := f.dayRollup(down).Counts[analytics.MainChatMessages]; got != 1 {
		t.Errorf("after the shard came back: %d, want the 1 acknowledged event", got)
	}
	if _, err := usage.AppendEvents(ctx, []analytics.Event{event(down, "e3", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Fatalf("after the shard came back: %v", err)
	}
	if got := f.dayRollup(down).Counts[analytics.MainChatMessages]; got != 2 {
		t.Errorf("after the shard came back and one more event: %d, want 2", got)
	}
}

// ownClusterRestart starts the stopped shards of the cluster in dir again.
func ownClusterRestart(t *testing.T, dir string, basePort int) {
	t.Helper()
	script, _ := filepath.Abs("../../deploy/clickhouse/cluster")
	cmd := exec.Command(script, "start", "2")
	cmd.Env = append(os.Environ(), "GROUPANALYTICS_CLICKHOUSE_DIR="+dir, "BASE_PORT="+strconv.Itoa(basePort))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cluster start: %v\n%s", err, out)
	}
}
