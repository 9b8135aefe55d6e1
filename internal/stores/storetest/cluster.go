package storetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a ClickHouse cluster of a test's own, run by the project's
// deploy/clickhouse/cluster script on its own ports and data directory, so
// that the test may kill its servers without disturbing other tests.
type Cluster struct {
	t          testing.TB
	dir        string
	base       int
	shards     int
	replicas   int
	zookeepers int
}

// NewCluster starts a cluster of n shards whose native ports are
// basePort+1…basePort+n, stopped when the test ends.
func NewCluster(t testing.TB, basePort, n int) *Cluster {
	t.Helper()
	return NewReplicatedCluster(t, basePort, n, 1)
}

// zkServer is the ZooKeeper start script of Debian's zookeeper package,
// which the cluster script runs.
const zkServer = "/usr/share/zookeeper/bin/zkServer.sh"

// NewReplicatedCluster starts a cluster of n shards of r replicas each
// and, with replicas, its ZooKeeper, one server; replica j of shard i
// listens on basePort+i+30*(j-1).
func NewReplicatedCluster(t testing.TB, basePort, n, r int) *Cluster {
	t.Helper()
	return newCluster(t, basePort, n, r, 1)
}

// NewEnsembleCluster is NewReplicatedCluster with an ensemble of three
// ZooKeeper servers, as in production.
func NewEnsembleCluster(t testing.TB, basePort, n, r int) *Cluster {
	t.Helper()
	return newCluster(t, basePort, n, r, 3)
}

func newCluster(t testing.TB, basePort, n, r, zookeepers int) *Cluster {
	t.Helper()
	RequireClickHouse(t)
	if _, err := os.Stat(zkServer); r > 1 && err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("ZooKeeper is required in CI: %v", err)
		}
		t.Skipf("SKIPPED: no ZooKeeper for replicas (%v): apt-get install zookeeper", err)
	}
	c := &Cluster{t: t, dir: t.TempDir(), base: basePort, shards: n, replicas: r, zookeepers: zookeepers}
	c.Start()
	t.Cleanup(func() { c.run("stop") })
	return c
}

// URL is the usage URL of database db on every shard and replica.
func (c *Cluster) URL(db string) string {
	shards := make([]string, c.shards)
	for i := range shards {
		replicas := make([]string, c.replicas)
		for j := range replicas {
			replicas[j] = c.Replica(i+1, j+1)
		}
		shards[i] = strings.Join(replicas, "|")
	}
	return "clickhouse://" + strings.Join(shards, ",") + "/" + db
}

// Shard is shard i's host:port (from 1); its first replica's.
func (c *Cluster) Shard(i int) string { return c.Replica(i, 1) }

// Replica is replica j of shard i's host:port (both from 1).
func (c *Cluster) Replica(i, j int) string {
	return fmt.Sprintf("127.0.0.1:%d", c.base+i+30*(j-1))
}

// Kill kills shard i's server (its first replica) with SIGKILL.
func (c *Cluster) Kill(i int) { c.t.Helper(); c.KillReplica(i, 1) }

// KillReplica kills replica j of shard i with SIGKILL.
func (c *Cluster) KillReplica(i, j int) {
	c.t.Helper()
	c.run("kill", strconv.Itoa(i), strconv.Itoa(j))
}

// Replace replaces replica j of shard i, lost for good, with an empty
// server: killed, its data deleted, started again.
func (c *Cluster) Replace(i, j int) {
	c.t.Helper()
	c.run("replace", strconv.Itoa(i), strconv.Itoa(j))
}

// TableDir is where replica j of shard i keeps the parts of a table
// (both from 1), as the cluster script lays its servers out.
func (c *Cluster) TableDir(i, j int, database, table string) string {
	server := fmt.Sprintf("shard%d", i)
	if j > 1 {
		server += fmt.Sprintf("r%d", j)
	}
	return filepath.Join(c.dir, server, "data", "data", database, table)
}

// StopZooKeeper and StartZooKeeper stop and start the cluster's ZooKeeper
// servers, all of them when none is named, or server k (from 1).
func (c *Cluster) StopZooKeeper(k ...int)  { c.t.Helper(); c.run(zooKeeperArgs("stop", k)...) }
func (c *Cluster) StartZooKeeper(k ...int) { c.t.Helper(); c.run(zooKeeperArgs("start", k)...) }

func zooKeeperArgs(verb string, k []int) []string {
	args := []string{"zookeeper", verb}
	for _, n := range k {
		args = append(args, strconv.Itoa(n))
	}
	return args
}

// ZooKeeperLeader is the ZooKeeper server (from 1) that leads the ensemble.
func (c *Cluster) ZooKeeperLeader() int {
	c.t.Helper()
	out, err := c.Script("zookeeper", "leader")
	k, convErr := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || convErr != nil {
		c.t.Fatalf("cluster zookeeper leader: %v %v\n%s", err, convErr, out)
	}
	return k
}

// Start starts the servers that are not running and waits until they answer.
func (c *Cluster) Start() {
	c.t.Helper()
	c.run("start", strconv.Itoa(c.shards), "--replicas", strconv.Itoa(c.replicas), "--zookeepers", strconv.Itoa(c.zookeepers))
}

func (c *Cluster) run(args ...string) {
	c.t.Helper()
	if out, err := c.Script(args...); err != nil {
		c.t.Fatalf("cluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Script runs the cluster script with args on the cluster's directory and
// ports, and returns what it printed.
func (c *Cluster) Script(args ...string) (string, error) {
	return runDeploy("clickhouse/cluster", 5*time.Minute, []string{"GROUPANALYTICS_CLICKHOUSE_DIR=" + c.dir, "BASE_PORT=" + strconv.Itoa(c.base)}, args...)
}

// runDeploy runs one of the project's scripts under deploy/ with args and
// env added, and returns what it printed. The scripts bound their own
// waits; timeout bounds what they run, so that a hung server fails the
// test that runs it by name.
func runDeploy(script string, timeout time.Duration, env []string, args ...string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", filepath.FromSlash(script))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second // for a child that keeps the output open
	out, err := cmd.CombinedOutput()
	return string(out), err
}
