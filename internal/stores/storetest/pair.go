package storetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PostgresPair is a PostgreSQL primary and its synchronous standby of a
// test's own, run by the project's deploy/postgres/pair script on their
// own ports and data directories, so that the test may kill either.
type PostgresPair struct {
	t    testing.TB
	dir  string
	base int
}

// NewPostgresPair starts servers "a" (the primary, on basePort) and "b"
// (its standby, on basePort+1), stopped when the test ends.
func NewPostgresPair(t testing.TB, basePort int) *PostgresPair {
	t.Helper()
	if !havePostgresServer() {
		if os.Getenv("CI") != "" {
			t.Fatal("PostgreSQL's server binaries are required in CI")
		}
		t.Skip("SKIPPED: no PostgreSQL server binaries for a primary and standby: apt-get install postgresql")
	}
	// Not under t.TempDir: the servers run as the postgres user, who may
	// not enter the test's private directories.
	dir, err := os.MkdirTemp("", "groupanalytics-postgres-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &PostgresPair{t: t, dir: dir, base: basePort}
	t.Cleanup(func() {
		p.Script("stop")
		os.RemoveAll(dir)
	})
	p.run("start")
	return p
}

// havePostgresServer says whether Debian's PostgreSQL server is installed.
func havePostgresServer() bool {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	return len(bins) > 0
}

// URL is the --db URL of database db naming both servers, for the one
// that takes writes.
func (p *PostgresPair) URL(db string) string {
	p.t.Helper()
	return strings.TrimSpace(p.run("url", db))
}

// Primary names the server that is primary now: "a" or "b".
func (p *PostgresPair) Primary() string { p.t.Helper(); return strings.TrimSpace(p.run("primary")) }

// Standby names the other server.
func (p *PostgresPair) Standby() string {
	p.t.Helper()
	if p.Primary() == "a" {
		return "b"
	}
	return "a"
}

// Kill kills server s ("a" or "b") with SIGKILL.
func (p *PostgresPair) Kill(s string) { p.t.Helper(); p.run("kill", s) }

// Promote makes the standby the primary, committing alone.
func (p *PostgresPair) Promote() { p.t.Helper(); p.run("promote") }

// Rejoin makes the server that is not primary its synchronous standby.
func (p *PostgresPair) Rejoin() { p.t.Helper(); p.run("rejoin") }

// SQL runs a statement on server s ("a" or "b") and returns what it printed.
func (p *PostgresPair) SQL(s, statement string) string {
	p.t.Helper()
	return strings.TrimSpace(p.run("sql", s, statement))
}

// Start starts the servers that are not running.
func (p *PostgresPair) Start() { p.t.Helper(); p.run("start") }

func (p *PostgresPair) run(args ...string) string {
	p.t.Helper()
	out, err := p.Script(args...)
	if err != nil {
		p.t.Fatalf("pair %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Script runs the pair script with args on the pair's directory and
// ports, and returns what it printed.
func (p *PostgresPair) Script(args ...string) (string, error) {
	return runDeploy("postgres/pair", 2*time.Minute, []string{"GROUPANALYTICS_POSTGRES_DIR=" + p.dir, "BASE_PORT=" + strconv.Itoa(p.base)}, args...)
}
