// Package chstore keeps the usage store (events and the rollups reports
// read) on ClickHouse, spread over shards, while the directory stays in
// PostgreSQL. Each group lives on one shard, as the directory's placement
// says; every write of a group holds the group's write lock in the
// directory, which serialises the group's writers across processes and
// stands in for the unique keys and transactions ClickHouse lacks (see
// docs/scaling.md).
package chstore

import (
	"cmp"
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// Store implements analytics.UsageStore on ClickHouse shards.
type Store struct {
	dir      writebehind.Coordinator
	database string
	shards   []*shard // in the URL's order
	timeout  time.Duration
	observer analytics.WriteObserver
	log      *slog.Logger
	// turnstiles serialise the process's writers per group (by hash: two
	// groups may share one).
	turnstiles [64]chan struct{}
	// pending are the calls of AppendEvents waiting for a flush, by
	// group; wake wakes the flusher, which starts with the first call.
	pendingMu    sync.Mutex
	pending      map[string][]*rollup.Call
	flushing     map[string]bool // the groups a flush holds
	queued       int             // events of the calls not answered yet
	closed       bool
	wake         chan struct{}
	startFlusher sync.Once
	// states are the groups' current rows, kept by the process.
	states stateCache
	// loading has the groups whose state a read is loading: the reads of
	// one report, made at once, load it once.
	loading keyLocks
	// ids are the hashes of the ids the shards hold of the groups the
	// process writes (ids.go).
	ids *idSets
	// The applier of the write-behind log (log.go): woken by applyWake,
	// stopped by quit; logDepth and logOldest (Unix ms) are its figures
	// as last read, logDepth kept up to date in between; sinceApply
	// counts the events logged since it last ran; retryAt holds the
	// groups it failed to apply until they are tried again; sinceVacuum
	// counts the events the process applied since it last vacuumed the
	// log; background holds the vacuum under way (vacuumLog) and the
	// applies tried behind reads (applyBehind); unapplied, the groups whose
	// last apply failed (pending.go).
	applierOnce sync.Once
	applierDone chan struct{}
	warmDone    chan struct{} // closed when the warm-up ends
	applyWake   chan struct{}
	quit        context.Context
	stop        context.CancelFunc
	logDepth    atomic.Int64
	logOldest   atomic.Int64
	sinceApply  atomic.Int64
	loggedAny   atomic.Bool // the process has logged events
	retryAt     map[string]time.Time
	sinceVacuum atomic.Int64
	vacuuming   atomic.Bool
	background  sync.WaitGroup
	unapplied   unapplied
	outage      outageLog // the applier's failures, logged as an outage's
}

var turnstileSeed = maphash.MakeSeed()

var _ analytics.UsageStore = (*Store)(nil)

// Options tune a store.
type Options struct {
	// CallTimeout bounds each call whose context has no deadline of its
	// own; zero: no bound.
	CallTimeout time.Duration
	// Observer, if set, is told of merged writes.
	Observer analytics.WriteObserver
	// Log, if set, is told of replicas joining their shards and of
	// quorums nudged (replicas.go).
	Log *slog.Logger
}

// Config is what a clickhouse:// URL names.
type Config struct {
	// Shards are the shards' names: host:port, or the host:port of each
	// of its replicas joined by "|".
	Shards   []string
	Database string
	User     string
	Password string
}

var databaseName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// IsClickHouse reports whether raw names a ClickHouse usage store.
func IsClickHouse(raw string) bool { return strings.HasPrefix(raw, "clickhouse://") }

// ParseURL reads
// clickhouse://[user[:password]@]host:port[|host:port…][,…]/database.
// Each of the hosts separated by commas is a shard; a shard of hosts
// separated by "|" is replicated, each host one of its replicas.
func ParseURL(raw string) (Config, error) {
	const want = "usage URL: want clickhouse://host:port[|replica…][,shard…]/database"
	// net/url refuses "|" in a host: read the hosts apart.
	rest, ok := strings.CutPrefix(raw, "clickhouse://")
	if !ok {
		return Config{}, errors.New(want)
	}
	authority, path, _ := strings.Cut(rest, "/")
	userinfo, hosts := "", authority
	at := strings.LastIndex(authority, "@")
	if at >= 0 {
		userinfo, hosts = authority[:at], authority[at+1:]
	}
	u, err := url.Parse("clickhouse://" + userinfo + "@host/" + path)
	if err != nil {
		return Config{}, errors.New(want)
	}
	c := Config{Database: strings.TrimPrefix(u.Path, "/")}
	if c.Database == "" {
		// No default: a store on the wrong database looks empty, not wrong.
		return Config{}, fmt.Errorf("usage URL: name the database: clickhouse://host:port[,host:port…]/database")
	}
	if !databaseName.MatchString(c.Database) {
		return Config{}, fmt.Errorf("usage URL: database name %q: use letters, digits and _", c.Database)
	}
	if at >= 0 {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	seen := map[string]bool{}
	replicas := 0
	for _, name := range strings.Split(hosts, ",") {
		list := splitReplicas(name)
		if replicas == 0 {
			replicas = len(list)
		} else if len(list) != replicas {
			return Config{}, fmt.Errorf("usage URL: shard %s names %d replicas, the first shard %d: give every shard as many", name, len(list), replicas)
		}
		for _, h := range list {
			if _, _, err := net.SplitHostPort(h); err != nil {
				return Config{}, fmt.Errorf("usage URL: shard %q: want host:port", h)
			}
			if seen[h] {
				return Config{}, fmt.Errorf("usage URL: server %s named twice", h)
			}
			seen[h] = true
		}
		c.Shards = append(c.Shards, name)
	}
	return c, nil
}

// Open connects to the shards that raw names. It does not migrate. A shard
// that does not answer does not stop it: its groups fail until it does.
func Open(ctx context.Context, raw string, dir writebehind.Coordinator, opts Options) (*Store, error) {
	cfg, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, database: cfg.Database, timeout: opts.CallTimeout,
		observer: opts.Observer, log: opts.Log, pending: map[string][]*rollup.Call{},
		flushing: map[string]bool{}, wake: make(chan struct{}, 1),
		applyWake: make(chan struct{}, 1), retryAt: map[string]time.Time{}, ids: newIDSets()}
	s.quit, s.stop = context.WithCancel(context.Background())
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.outage.log = s.log
	for i := range s.turnstiles {
		s.turnstiles[i] = make(chan struct{}, 1)
	}
	for _, name := range cfg.Shards {
		sh := &shard{name: name, database: cfg.Database}
		s.shards = append(s.shards, sh)
		addrs := splitReplicas(name)
		if len(addrs) > 1 {
			sh.join = func() { s.joinReplicas(sh) }
		}
		settings := clickhouse.Settings{"max_query_size": 4 << 20}
		if len(addrs) > 1 {
			settings["insert_quorum"] = insertQuorum
			settings["insert_quorum_timeout"] = int(quorumTimeout.Milliseconds())
			settings["select_sequential_consistency"] = 1
		}
		for _, addr := range addrs {
			conn, err := clickhouse.Open(&clickhouse.Options{
				Addr:         []string{addr},
				Auth:         clickhouse.Auth{Database: "default", Username: cfg.User, Password: cfg.Password},
				DialTimeout:  3 * time.Second,
				MaxOpenConns: 16,
				MaxIdleConns: 8,
				Settings:     settings,
			})
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("clickhouse server %s: %w", addr, err)
			}
			sh.replicas = append(sh.replicas, &replica{addr: addr, conn: conn})
		}
	}
	return s, nil
}

// quorumTimeout bounds how long a replicated insert waits for its second
// replica: a replica killed a moment ago still counts as alive in
// ZooKeeper until its session expires.
var quorumTimeout = 5 * time.Second

// insertQuorum is how many replicas of a replicated shard hold a write
// before it is acknowledged.
const insertQuorum = 2

// shardNamed returns the shard a placement names, or nil: the shard of
// that name or, its replicas having changed since, a shard that has one
// of the replicas the name lists.
func (s *Store) shardNamed(name string) *shard {
	for _, sh := range s.shards {
		if sh.name == name {
			return sh
		}
	}
	for _, addr := range splitReplicas(name) {
		for _, sh := range s.shards {
			if slices.ContainsFunc(sh.replicas, func(r *replica) bool { return r.addr == addr }) {
				return sh
			}
		}
	}
	return nil
}

// Shards returns the shards' names, in the URL's order.
func (s *Store) Shards() []string {
	names := make([]string, len(s.shards))
	for i, sh := range s.shards {
		names[i] = sh.name
	}
	return names
}

// Close stops the flushers, failing the calls that still wait, and the
// applier; if the process logged events, it applies the log once more
// (within the call timeout; what is left stays for the next process); and
// it closes the connections.
func (s *Store) Close() error {
	s.pendingMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.wake)
	}
	s.pendingMu.Unlock()
	s.stop()
	s.applierOnce.Do(func() {}) // none starts after Close
	if s.applierDone != nil {
		<-s.applierDone
		<-s.warmDone
	}
	// A vacuum of the log under way was cancelled by stop.
	s.background.Wait()
	if s.loggedAny.Swap(false) { // closed twice, it applies once
		ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(s.timeout, 30*time.Second))
		s.applyLogged(ctx)
		cancel()
	}
	var errs []error
	for _, sh := range s.shards {
		for _, r := range sh.replicas {
			errs = append(errs, r.conn.Close())
		}
	}
	return errors.Join(errs...)
}

// Ping answers whether the usage tier can serve: nil while at least one
// server answers, so that one shard down does not take the service out of
// its load balancer (the groups of the other shards still work).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var errs []error
	for _, sh := range s.shards {
		for _, r := range sh.replicas {
			err := r.conn.Ping(ctx)
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("server %s: %w", r.addr, err))
		}
	}
	return s.wrap("Ping", errors.Join(errs...))
}

// DropDatabase drops the store's database on every server: for tests
// and the benchmark.
func (s *Store) DropDatabase(ctx context.Context) error {
	var errs []error
	for _, sh := range s.shards {
		errs = append(errs, sh.onEvery(func(r *replica) error { return r.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+s.database) }))
	}
	return errors.Join(errs...)
}

// Database is the name of the store's database on every shard.
func (s *Store) Database() string { return s.database }

// DiskBytes is what the store's tables take on disk, on every server.
func (s *Store) DiskBytes(ctx context.Context) (int64, error) {
	var total int64
	for _, sh := range s.shards {
		err := sh.onEvery(func(r *replica) error {
			var n uint64
			err := r.conn.QueryRow(ctx, `SELECT toUInt64(sum(bytes_on_disk)) FROM system.parts WHERE active AND database = ?`,
				s.database).Scan(&n)
			total += int64(n)
			return err
		})
		if err != nil {
			return 0, s.wrap("DiskBytes", err)
		}
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
// reached, cannot take a write now (replicas or ZooKeeper missing), or
// of a call out of time, as unavailable.
func (s *Store) wrap(op string, err error) error {
	return analytics.StoreError(op, err, tryNext)
}

func unreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, clickhouse.ErrAcquireConnTimeout) ||
		errors.As(err, &netErr) || errors.As(err, &opErr)
}
