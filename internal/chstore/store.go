// Package chstore keeps the usage store (events and the rollups reports
// read) on ClickHouse, spread over shards, while the directory stays in
// PostgreSQL. Each group lives on one shard, as the directory's placement
// says; every write of a group holds the group's write lock in the
// directory, which serialises the group's writers across processes and
// stands in for the unique keys and transactions ClickHouse lacks (see
// the README's "Scaling out").
package chstore

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// Store implements analytics.UsageStore on ClickHouse shards.
type Store struct {
	dir      Coordinator
	database string
	shards   []*shard // in the URL's order
	byName   map[string]*shard
	timeout  time.Duration
	observer analytics.WriteObserver
	// turnstiles serialise the process's writers per group (by hash: two
	// groups may share one).
	turnstiles [64]chan struct{}
	// pending are the calls of AppendEvents waiting, by group.
	pendingMu sync.Mutex
	pending   map[string][]*rollup.Call
	// states are the groups' current rows, kept by the process.
	states stateCache
}

var turnstileSeed = maphash.MakeSeed()

var _ analytics.UsageStore = (*Store)(nil)

// shard is one ClickHouse server (or, in production, a load balancer in
// front of a shard's replicas).
type shard struct {
	name string // host:port, as placements record it
	conn driver.Conn
}

// Options tune a store.
type Options struct {
	// CallTimeout bounds each call whose context has no deadline of its
	// own; zero: no bound.
	CallTimeout time.Duration
	// Observer, if set, is told of merged writes.
	Observer analytics.WriteObserver
}

// Config is what a clickhouse:// URL names.
type Config struct {
	Shards   []string // host:port of each shard
	Database string
	User     string
	Password string
}

var databaseName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// IsClickHouse reports whether raw names a ClickHouse usage store.
func IsClickHouse(raw string) bool { return strings.HasPrefix(raw, "clickhouse://") }

// ParseURL reads clickhouse://[user[:password]@]host:port[,host:port…]/database.
// Each host is one shard.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "clickhouse" {
		return Config{}, fmt.Errorf("usage URL: want clickhouse://host:port[,host:port…]/database")
	}
	c := Config{Database: strings.TrimPrefix(u.Path, "/")}
	if c.Database == "" {
		// No default: a store on the wrong database looks empty, not wrong.
		return Config{}, fmt.Errorf("usage URL: name the database: clickhouse://host:port[,host:port…]/database")
	}
	if !databaseName.MatchString(c.Database) {
		return Config{}, fmt.Errorf("usage URL: database name %q: use letters, digits and _", c.Database)
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	seen := map[string]bool{}
	for _, h := range strings.Split(u.Host, ",") {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return Config{}, fmt.Errorf("usage URL: shard %q: want host:port", h)
		}
		if seen[h] {
			return Config{}, fmt.Errorf("usage URL: shard %s named twice", h)
		}
		seen[h] = true
		c.Shards = append(c.Shards, h)
	}
	return c, nil
}

// Open connects to the shards that raw names. It does not migrate. A shard
// that does not answer does not stop it: its groups fail until it does.
func Open(ctx context.Context, raw string, dir Coordinator, opts Options) (*Store, error) {
	cfg, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, database: cfg.Database, byName: map[string]*shard{}, timeout: opts.CallTimeout,
		observer: opts.Observer, pending: map[string][]*rollup.Call{}}
	for i := range s.turnstiles {
		s.turnstiles[i] = make(chan struct{}, 1)
	}
	for _, addr := range cfg.Shards {
		conn, err := clickhouse.Open(&clickhouse.Options{
			Addr:         []string{addr},
			Auth:         clickhouse.Auth{Database: "default", Username: cfg.User, Password: cfg.Password},
			DialTimeout:  3 * time.Second,
			MaxOpenConns: 16,
			MaxIdleConns: 8,
			Settings:     clickhouse.Settings{"max_query_size": 4 << 20},
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("clickhouse shard %s: %w", addr, err)
		}
		sh := &shard{name: addr, conn: conn}
		s.shards = append(s.shards, sh)
		s.byName[addr] = sh
	}
	return s, nil
}

// Shards returns the shards' names, in the URL's order.
func (s *Store) Shards() []string {
	names := make([]string, len(s.shards))
	for i, sh := range s.shards {
		names[i] = sh.name
	}
	return names
}

// Close closes the connections.
func (s *Store) Close() error {
	var errs []error
	for _, sh := range s.shards {
		errs = append(errs, sh.conn.Close())
	}
	return errors.Join(errs...)
}

// Ping answers whether the usage tier can serve: nil while at least one
// shard answers, so that one shard down does not take the service out of
// its load balancer (the groups of the other shards still work).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var errs []error
	for _, sh := range s.shards {
		err := sh.conn.Ping(ctx)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("shard %s: %w", sh.name, err))
	}
	return s.wrap("Ping", errors.Join(errs...))
}

// DropDatabase drops the store's database on every shard: for tests and
// the benchmark.
func (s *Store) DropDatabase(ctx context.Context) error {
	var errs []error
	for _, sh := range s.shards {
		errs = append(errs, sh.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+s.database))
	}
	return errors.Join(errs...)
}

// Database is the name of the store's database on every shard.
func (s *Store) Database() string { return s.database }

// DiskBytes is what the store's tables take on disk, on every shard.
func (s *Store) DiskBytes(ctx context.Context) (int64, error) {
	var total int64
	for _, sh := range s.shards {
		var n uint64
		if err := sh.conn.QueryRow(ctx, `SELECT toUInt64(sum(bytes_on_disk)) FROM system.parts WHERE active AND database = ?`,
			s.database).Scan(&n); err != nil {
			return 0, s.wrap("DiskBytes", err)
		}
		total += int64(n)
	}
	return total, nil
}

// table returns the qualified name of one of the store's tables.
func (s *Store) table(name string) string { return s.database + "." + name }

// bound gives ctx the store's call timeout unless it has a deadline.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || s.timeout == 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// wrap names the operation and marks errors of a shard that cannot be
// reached (or a call out of time) as unavailable.
func (s *Store) wrap(op string, err error) error {
	return analytics.StoreError(op, err, unreachable)
}

func unreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, clickhouse.ErrAcquireConnTimeout) ||
		errors.As(err, &netErr) || errors.As(err, &opErr)
}
