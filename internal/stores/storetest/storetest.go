// Package storetest gives tests fresh, migrated stores of each kind, opened
// as a serving process opens them (package stores): an SQLite file, a
// throwaway PostgreSQL database dropped when the test ends, and such a
// database as directory with a throwaway ClickHouse database on two shards
// as usage store.
//
// PostgreSQL is found at GROUPANALYTICS_TEST_POSTGRES (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), ClickHouse
// at GROUPANALYTICS_TEST_CLICKHOUSE (default the two shards that
// deploy/clickhouse/cluster starts). Where a server does not answer, its
// tests are skipped with a warning on stderr, unless CI is set: in CI they
// fail. With go test -short, the everyday loop, they are skipped whatever
// runs: SQLite alone is tried.
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver for database/sql

	"groupanalytics/internal/chstore"
	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/stores"
)

// PostgresURL is the server tests create their databases on.
func PostgresURL() string {
	if u := os.Getenv("GROUPANALYTICS_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

var (
	probeOnce sync.Once
	probeErr  error
	dbCounter atomic.Int64
)

// RequirePostgres skips the test (loudly) or, in CI, fails it, when no
// PostgreSQL server answers.
func RequirePostgres(t testing.TB) {
	t.Helper()
	skipShort(t)
	probeOnce.Do(func() {
		db, err := sql.Open("pgx", PostgresURL())
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			err = db.PingContext(ctx)
			cancel()
			db.Close()
		}
		probeErr = err
		if err != nil && os.Getenv("CI") == "" {
			fmt.Fprintf(os.Stderr, "\n*** WARNING: no PostgreSQL at %s (%v): PostgreSQL tests are SKIPPED. Set GROUPANALYTICS_TEST_POSTGRES, or run .ci/run. ***\n\n",
				redacted(PostgresURL()), err)
		}
	})
	if probeErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI: %v", probeErr)
		}
		t.Skipf("SKIPPED: no PostgreSQL server (%v)", probeErr)
	}
}

// skipShort skips a test of a database server under go test -short.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: SQLite only, no database server")
	}
}

func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// NewPostgresDatabase creates an empty database for the test and returns
// its URL; it is dropped when the test ends.
func NewPostgresDatabase(t testing.TB) string {
	t.Helper()
	RequirePostgres(t)
	return createDatabase(t, "")
}

// createDatabase creates a database for the test, with CREATE DATABASE's
// options, and returns its URL; it is dropped when the test ends.
func createDatabase(t testing.TB, options string) string {
	t.Helper()
	admin, err := sql.Open("pgx", PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("groupanalytics_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, dbCounter.Add(1))
	if _, err := admin.Exec("CREATE DATABASE " + name + " " + options); err != nil {
		admin.Close()
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return databaseURL(name)
}

// databaseURL is the URL of the database name on the tests' server.
func databaseURL(name string) string {
	u, _ := url.Parse(PostgresURL())
	u.Path = "/" + name
	return u.String()
}

// NewDSN returns a fresh database of the given dialect for the test: an
// SQLite file path, or the URL of a throwaway PostgreSQL database.
func NewDSN(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case "sqlite":
		return filepath.Join(t.TempDir(), "test.db")
	case "postgres":
		return NewPostgresDatabase(t)
	}
	t.Fatalf("storetest: unknown dialect %q", dialect)
	return ""
}

// OpenDSN opens and migrates the store at dsn, closed when the test ends.
// Opened twice, a database is shared as by two server processes.
func OpenDSN(t testing.TB, dsn string) *sqlstore.Store {
	t.Helper()
	return OpenWith(t, dsn, 30*time.Second)
}

// OpenWith is OpenDSN with a bound of the test's own on each store call.
func OpenWith(t testing.TB, dsn string, callTimeout time.Duration) *sqlstore.Store {
	t.Helper()
	return open(t, stores.Config{DB: dsn, Create: true, CallTimeout: callTimeout}).Directory
}

// open opens the stores cfg names, closed when the test ends.
func open(t testing.TB, cfg stores.Config) *stores.Stores {
	t.Helper()
	s, err := stores.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("storetest: open %s %s: %v", cfg.DB, cfg.Usage, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Open returns a fresh, migrated store of the given dialect, closed (and
// its database dropped) when the test ends.
func Open(t testing.TB, dialect string) *sqlstore.Store {
	t.Helper()
	if dialect == "postgres" {
		return OpenDSN(t, newMigratedPostgresDatabase(t))
	}
	return OpenDSN(t, NewDSN(t, dialect))
}

// Stores are a directory and the usage store a service runs with it.
type Stores = stores.Stores

// Kinds are the store kinds Each runs on: SQLite, PostgreSQL, and
// PostgreSQL with ClickHouse; or those of them that
// GROUPANALYTICS_TEST_KINDS names, separated by commas (CI runs suites
// again on other ClickHouse clusters with "clickhouse" alone).
var Kinds = kinds(os.Getenv("GROUPANALYTICS_TEST_KINDS"))

func kinds(names string) []string {
	all := []string{"sqlite", "postgres", "clickhouse"}
	if names == "" {
		return all
	}
	some := strings.Split(names, ",")
	for _, k := range some {
		if !slices.Contains(all, k) {
			panic(fmt.Sprintf("GROUPANALYTICS_TEST_KINDS: %q is not one of %s", k, strings.Join(all, ", ")))
		}
	}
	return some
}

// SQL is a SQL store serving as both directory and usage store.
func SQL(store *sqlstore.Store) Stores {
	return Stores{Directory: store, Usage: store}
}

// OpenKind returns fresh stores of a kind of Kinds.
func OpenKind(t testing.TB, kind string) Stores {
	t.Helper()
	if kind == "clickhouse" {
		return OpenClickHouse(t, newMigratedPostgresDatabase(t), NewClickHouseURL(t))
	}
	return SQL(Open(t, kind))
}

// Each runs fn as a subtest once per kind of Kinds, each with fresh stores.
func Each(t *testing.T, fn func(t *testing.T, s Stores)) {
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) { fn(t, OpenKind(t, kind)) })
	}
}

// ClickHouseShards is the test cluster's shards, host:port each, or the
// host:port of each of its replicas joined by "|".
func ClickHouseShards() []string {
	if u := os.Getenv("GROUPANALYTICS_TEST_CLICKHOUSE"); u != "" {
		return strings.Split(u, ",")
	}
	return []string{"127.0.0.1:19101", "127.0.0.1:19102"}
}

var (
	chProbeOnce sync.Once
	chProbeErr  error
	// chDown is the test cluster's servers that did not answer the probe,
	// on shards where another replica did: a shard of three replicas runs
	// the suites with one of them down. The helpers that read or drop
	// every server's database pass them by.
	chDown = map[string]bool{}
)

// RequireClickHouse skips the test (loudly) or, in CI, fails it, when no
// replica of a shard of the test cluster answers.
func RequireClickHouse(t testing.TB) {
	t.Helper()
	skipShort(t)
	chProbeOnce.Do(func() {
		for _, shard := range ClickHouseShards() {
			var answered bool
			for _, addr := range strings.Split(shard, "|") {
				conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
				if err != nil {
					chDown[addr], chProbeErr = true, err
					continue
				}
				conn.Close()
				answered = true
			}
			if !answered {
				break
			}
			chProbeErr = nil
		}
		if chProbeErr != nil && os.Getenv("CI") == "" {
			fmt.Fprintf(os.Stderr, "\n*** WARNING: no ClickHouse cluster at %v (%v): ClickHouse tests are SKIPPED. Run deploy/clickhouse/cluster start, or .ci/run. ***\n\n",
				ClickHouseShards(), chProbeErr)
		}
	})
	if chProbeErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("ClickHouse is required in CI: %v", chProbeErr)
		}
		t.Skipf("SKIPPED: no ClickHouse cluster (%v)", chProbeErr)
	}
}

// NewClickHouseURL names a database of the test's own on the test
// cluster's shards, dropped when the test ends.
func NewClickHouseURL(t testing.TB) string {
	t.Helper()
	RequireClickHouse(t)
	name := fmt.Sprintf("groupanalytics_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, dbCounter.Add(1))
	raw := "clickhouse://" + strings.Join(ClickHouseShards(), ",") + "/" + name
	t.Cleanup(func() {
		if err := eachServer(raw, true, func(conn driver.Conn, database string) error {
			return conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+database)
		}); err != nil {
			t.Errorf("drop clickhouse database %s: %v", name, err)
		}
	})
	return raw
}

// OpenClickHouse opens the directory at dirDSN and the ClickHouse usage
// store at usageURL on it, migrated, closed when the test ends. Opened
// twice, they are shared as by two server processes.
func OpenClickHouse(t testing.TB, dirDSN, usageURL string) Stores {
	t.Helper()
	return *open(t, stores.Config{DB: dirDSN, Usage: usageURL, Serve: true, CallTimeout: 30 * time.Second})
}

// RawEvents reads a group's stored events straight from the database at
// dsn, bypassing the store: event id -> student id.
func RawEvents(t testing.TB, dsn, groupID string) map[string]string {
	t.Helper()
	db, postgres := openRaw(t, dsn)
	defer db.Close()
	query := `SELECT event_id, student_id FROM events WHERE group_id = ?`
	if postgres {
		query = `SELECT event_id, student_id FROM events WHERE group_id = $1`
	}
	rows, err := db.Query(query, groupID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	events := map[string]string{}
	for rows.Next() {
		var id, student string
		if err := rows.Scan(&id, &student); err != nil {
			t.Fatal(err)
		}
		events[id] = student
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// openRaw opens the SQL database at dsn straight, bypassing the store
// (SQLite read-only), and says whether it is PostgreSQL.
func openRaw(t testing.TB, dsn string) (db *sql.DB, postgres bool) {
	t.Helper()
	driver := "sqlite3"
	if postgres = sqlstore.IsPostgres(dsn); postgres {
		driver = "pgx"
	} else {
		dsn = "file:" + dsn + "?mode=ro&_busy_timeout=10000"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db, postgres
}

// RawClickHouseEvents reads a group's stored events straight from every
// shard of the ClickHouse store at usageURL, bypassing the store: event id
// -> student id. An id stored twice fails the test.
func RawClickHouseEvents(t testing.TB, usageURL, groupID string) map[string]string {
	t.Helper()
	events := map[string]string{}
	err := eachServer(usageURL, false, func(conn driver.Conn, database string) error {
		rows, err := conn.Query(context.Background(), `SELECT event_id, student_id FROM `+database+`.events WHERE group_id = ?`, groupID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, student string
			if err := rows.Scan(&id, &student); err != nil {
				return err
			}
			if _, twice := events[id]; twice {
				return fmt.Errorf("event %s of group %s is stored twice", id, groupID)
			}
			events[id] = student
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// eachServer connects to each shard that usageURL names in turn (to its
// first replica, or to every replica) and runs fn with the URL's database
// name.
func eachServer(usageURL string, everyReplica bool, fn func(conn driver.Conn, database string) error) error {
	cfg, err := chstore.ParseURL(usageURL)
	if err != nil {
		return err
	}
	for _, shard := range cfg.Shards {
		replicas := UpReplicas(shard)
		if !everyReplica {
			replicas = replicas[:1]
		}
		for _, addr := range replicas {
			conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Auth: clickhouse.Auth{Username: cfg.User, Password: cfg.Password}})
			if err != nil {
				return err
			}
			err = fn(conn, cfg.Database)
			conn.Close()
			if err != nil {
				return fmt.Errorf("server %s: %w", addr, err)
			}
		}
	}
	return nil
}

// UpReplicas is the replicas of a shard that answered RequireClickHouse's
// probe.
func UpReplicas(shard string) []string {
	return slices.DeleteFunc(strings.Split(shard, "|"), func(addr string) bool { return chDown[addr] })
}

// EachSQL runs fn as a subtest once per SQL dialect, each with a fresh
// store: for tests of the SQL store itself.
func EachSQL(t *testing.T, fn func(t *testing.T, store *sqlstore.Store)) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) { fn(t, Open(t, d)) })
	}
}

// syncReplica waits until the replica has fetched what its table's log
// holds. A server whose ZooKeeper session expired in an outage makes a
// new one on its next use, after failing that one: it is asked again for
// up to 30 s.
func syncReplica(conn driver.Conn, table string) error {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		err := conn.Exec(context.Background(), `SYSTEM SYNC REPLICA `+table)
		if err == nil || !strings.Contains(err.Error(), "Session expired") || time.Now().After(deadline) {
			return err
		}
	}
}

// CheckReplicasAlike fails the test unless every replica of each shard of
// the usage URL holds the same rows, once each has done its share of the
// replication queue: the events as stored, the other tables as merged.
func CheckReplicasAlike(t testing.TB, usageURL string) {
	t.Helper()
	tables := []string{"events", "group_rollups FINAL", "student_counts FINAL", "students FINAL"}
	cfg, err := chstore.ParseURL(usageURL)
	if err != nil {
		t.Fatal(err)
	}
	var digests []string // in eachServer's order: by shard, then replica
	err = eachServer(usageURL, true, func(conn driver.Conn, database string) error {
		var digest strings.Builder
		for _, table := range tables {
			name, _, _ := strings.Cut(table, " ")
			if err := syncReplica(conn, database+"."+name); err != nil {
				return err
			}
			var rows, hash uint64
			if err := conn.QueryRow(context.Background(), `SELECT count(), sum(cityHash64(*)) FROM `+database+`.`+table).Scan(&rows, &hash); err != nil {
				return err
			}
			fmt.Fprintf(&digest, "%s: %d rows, %x; ", name, rows, hash)
		}
		digests = append(digests, digest.String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, shard := range cfg.Shards {
		replicas := UpReplicas(shard)
		first := digests[0]
		for i, r := range replicas[1:] {
			if digests[i+1] != first {
				t.Errorf("replica %s holds %s\nreplica %s holds %s", replicas[0], first, r, digests[i+1])
			}
		}
		t.Logf("replicas of %s: %s", shard, first)
		digests = digests[len(replicas):]
	}
}

// GroupRows counts the rows of a group in every table with a group_id
// column, straight from the databases: the SQL database at dsn and, if
// usageURL is set, every replica of every ClickHouse shard. It returns
// the tables holding any ("table" or "server/table": count). The receipts
// of deletions are not counted: they are kept after the group, by design.
func GroupRows(t testing.TB, dsn, usageURL, groupID string) map[string]int {
	t.Helper()
	found := map[string]int{}
	db, postgres := openRaw(t, dsn)
	defer db.Close()
	tables := `SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table' AND c.name = 'group_id'`
	if postgres {
		tables = `SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'group_id'`
	}
	names, err := queryStrings(db, tables)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("only %d tables with a group_id column in %s: %v", len(names), redacted(dsn), names)
	}
	for _, name := range names {
		if name == "deletion_receipts" {
			continue
		}
		var n int
		query := `SELECT count(*) FROM ` + name + ` WHERE group_id = ?`
		if postgres {
			query = strings.Replace(query, "?", "$1", 1)
		}
		if err := db.QueryRow(query, groupID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			found[name] = n
		}
	}
	if usageURL == "" {
		return found
	}
	err = eachServer(usageURL, true, func(conn driver.Conn, database string) error {
		var names []string
		rows, err := conn.Query(context.Background(), `SELECT table FROM system.columns WHERE database = ? AND name = 'group_id'`, database)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return err
			}
			names = append(names, name)
		}
		rows.Close()
		if len(names) < 4 {
			return fmt.Errorf("only %d tables with a group_id column: %v", len(names), names)
		}
		for _, name := range names {
			var n uint64
			if err := conn.QueryRow(context.Background(), `SELECT count() FROM `+database+`.`+name+` WHERE group_id = ?`, groupID).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				found["clickhouse/"+name] += int(n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
