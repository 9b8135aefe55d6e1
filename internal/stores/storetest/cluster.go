package storetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Cluster is a ClickHouse cluster of a test's own, run by the project's
// deploy/clickhouse/cluster script on its own ports and data directory, so
// that the test may kill its servers without disturbing other tests.
type Cluster struct {
	t      testing.TB
	dir    string
	base   int
	shards int
}

// NewCluster starts a cluster of n shards whose native ports are
// basePort+1…basePort+n, stopped when the test ends.
func NewCluster(t testing.TB, basePort, n int) *Cluster {
	t.Helper()
	RequireClickHouse(t)
	c := &Cluster{t: t, dir: t.TempDir(), base: basePort, shards: n}
	c.run("start", strconv.Itoa(n))
	t.Cleanup(func() { c.run("stop") })
	return c
}

// URL is the usage URL of database db on every shard.
func (c *Cluster) URL(db string) string {
	hosts := make([]string, c.shards)
	for i := range hosts {
		hosts[i] = c.Shard(i + 1)
	}
	return "clickhouse://" + strings.Join(hosts, ",") + "/" + db
}

// Shard is shard i's host:port (from 1).
func (c *Cluster) Shard(i int) string { return fmt.Sprintf("127.0.0.1:%d", c.base+i) }

// Kill kills shard i's server with SIGKILL.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	pid, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("shard%d", i), "pid"))
	if err != nil {
		c.t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
}

// Start starts the shards that are not running and waits until they answer.
func (c *Cluster) Start() { c.t.Helper(); c.run("start", strconv.Itoa(c.shards)) }

func (c *Cluster) run(args ...string) {
	c.t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "clickhouse", "cluster")
	cmd := exec.Command(script, args...)
	cmd.Env = append(os.Environ(), "GROUPANALYTICS_CLICKHOUSE_DIR="+c.dir, "BASE_PORT="+strconv.Itoa(c.base))
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("cluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
