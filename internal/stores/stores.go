// Package stores opens the stores a process works on, as its configuration
// names them: the directory, on SQLite or PostgreSQL, and the usage store,
// on the same database or on ClickHouse shards. It is the one place that
// knows which engines exist: serve, the admin commands, the benchmark and
// the tests' helpers (storetest) all open their stores here.
package stores

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/sqlstore"
)

// Config names the stores and how to run them.
type Config struct {
	// DB is the directory's database: a SQLite file path, or a
	// postgres:// URL. It holds the usage store too unless Usage is set.
	DB string
	// Usage, if set, puts the usage store on ClickHouse shards:
	// clickhouse://host:port[,host:port…]/database. It needs a PostgreSQL
	// DB, whose group locks and placements coordinate the shards.
	Usage string
	// Demo makes the stores the demo's own, for as long as they are open:
	// Open refuses a store that holds what a demo did not make (a SQLite
	// file or PostgreSQL database with anything in it, a ClickHouse
	// database with events of groups the directory does not place) and a
	// store that another demo holds, before it migrates or changes
	// anything, and marks an empty store as a demo's.
	Demo bool
	// Serve opens the stores for a process that serves: it runs the usage
	// store's background work, the applier of the write-behind log. The
	// commands that do not serve apply what they logged when they close.
	Serve bool
	// Create lets Open make a SQLite file that does not exist. Without it
	// a missing file is an error, so that a mistyped path is not taken for
	// a new, empty store.
	Create bool
	// CallTimeout bounds each store call whose context has no deadline;
	// zero: no bound (for commands that may run long).
	CallTimeout time.Duration
	// Observer, if set, is told what the usage store's writer does.
	Observer analytics.WriteObserver
	// MigrateAll fails Open when a ClickHouse server cannot be reached to
	// be migrated (the migrate command); otherwise Open goes on without
	// it, logging which (chstore.UnmigratedError).
	MigrateAll bool
	// Log is told of the migrations applied, and of a replica joining
	// its shard; nil: nobody.
	Log *slog.Logger
}

// IsPostgres reports whether db (Config.DB) names a PostgreSQL database
// rather than a SQLite file.
func IsPostgres(db string) bool { return sqlstore.IsPostgres(db) }

// ParseUsage reads a usage store's URL (Config.Usage): its shards' names
// (host:port, a replicated shard's replicas joined by "|") and its
// database.
func ParseUsage(usage string) (shards []string, database string, err error) {
	cfg, err := chstore.ParseURL(usage)
	return cfg.Shards, cfg.Database, err
}

// What Open answers a demo (Config.Demo) refused: a store holding what a
// demo did not make, or one another demo serves.
var (
	ErrNotDemoStore = sqlstore.ErrNotDemoStore
	ErrDemoRunning  = sqlstore.ErrDemoRunning
)

// Stores are a process's open stores.
type Stores struct {
	// Directory is the SQL store: the directory, and the usage store too
	// unless Shards is set.
	Directory *sqlstore.Store
	// Usage is the usage store: Directory or Shards.
	Usage analytics.UsageStore
	// Shards is the usage store on ClickHouse, when Config.Usage names it.
	Shards *chstore.Store
	// Migrations counts the migrations Open applied: the SQL store's, and
	// each shard's.
	Migrations int
}

// Open opens and migrates the stores that cfg names.
func Open(ctx context.Context, cfg Config) (*Stores, error) {
	if cfg.Usage != "" && !sqlstore.IsPostgres(cfg.DB) {
		return nil, errors.New("--usage on ClickHouse needs the directory on PostgreSQL: give --db a postgres:// URL")
	}
	if !cfg.Create {
		if err := sqliteExists(cfg.DB); err != nil {
			return nil, err
		}
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, err := sqlstore.Open(ctx, cfg.DB, sqlstore.Options{CallTimeout: cfg.CallTimeout, Observer: cfg.Observer, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	if cfg.Demo {
		if err := dir.ClaimDemo(ctx); err != nil {
			dir.Close()
			return nil, err
		}
	}
	applied, err := dir.Migrate(ctx, log)
	if err != nil {
		dir.Close()
		return nil, err
	}
	s := &Stores{Directory: dir, Usage: dir, Migrations: applied}
	if cfg.Serve {
		dir.Start() // on ClickHouse, the directory's districts alone
	}
	if cfg.Usage == "" {
		return s, nil
	}
	shards, err := chstore.Open(ctx, cfg.Usage, dir, chstore.Options{CallTimeout: cfg.CallTimeout, Observer: cfg.Observer, Log: log})
	if err != nil {
		dir.Close()
		return nil, err
	}
	s.Shards, s.Usage = shards, shards
	if cfg.Demo {
		if n, err := shards.UnplacedEvents(ctx); err != nil || n > 0 {
			s.Close()
			return nil, cmp.Or(err, fmt.Errorf("the ClickHouse database holds %d events of groups that the demo's directory does not place: %w", n, sqlstore.ErrNotDemoStore))
		}
	}
	applied, err = shards.Migrate(ctx, log)
	s.Migrations += applied
	if unmigrated := (*chstore.UnmigratedError)(nil); errors.As(err, &unmigrated) && !cfg.MigrateAll {
		// A replica down does not keep a process from serving what it
		// can, nor a command from reading the directory.
		log.Warn("starting with ClickHouse servers not migrated", "servers", strings.Join(unmigrated.Servers, ", "))
		err = nil
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	if cfg.Serve {
		shards.Start()
	}
	return s, nil
}

// sqliteExists refuses a SQLite store db whose file does not exist, so
// that a mistyped path is not taken for a new, empty store.
func sqliteExists(db string) error {
	if sqlstore.IsPostgres(db) {
		return nil
	}
	if _, err := os.Stat(strings.TrimPrefix(db, "sqlite:")); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no store at %s: give --db, or create one with groupanalytics migrate", db)
	}
	return nil
}

// Backup copies the SQLite store db, consistent, to the file to while
// the store serves (sqlstore.Store.Backup). It does not migrate: the copy
// is of the store as the release that serves it wrote it.
func Backup(ctx context.Context, db, to string) error {
	if sqlstore.IsPostgres(db) {
		return errors.New("backup copies a SQLite store; back up PostgreSQL with pg_dump or base backups (see docs/operating.md, Backups)")
	}
	if err := sqliteExists(db); err != nil {
		return err
	}
	s, err := sqlstore.Open(ctx, db, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Backup(ctx, to)
}

// Ping reports whether the stores can serve: the directory answers, and
// so does the usage store (on ClickHouse: at least one shard).
func (s *Stores) Ping(ctx context.Context) error {
	if err := s.Directory.Ping(ctx); err != nil || s.Shards == nil {
		return err
	}
	return s.Shards.Ping(ctx)
}

// QueueDepth is how many appends wait for the usage store's writer.
func (s *Stores) QueueDepth() int {
	if s.Shards != nil {
		return s.Shards.QueueDepth()
	}
	return s.Directory.QueueDepth()
}

// LogStats tells of what the usage store has acknowledged and not yet
// written where reads look without a Settle: the events of the
// write-behind log of a usage store on ClickHouse, or those whose shares
// of the rollups wait for a fold on SQLite; and how long the oldest has
// waited.
func (s *Stores) LogStats() (events int, oldestAge time.Duration) {
	if s.Shards != nil {
		return s.Shards.LogStats()
	}
	return s.Directory.BehindStats()
}

// Health asks the directory's database and every server of the usage
// tier (none on SQLite or PostgreSQL alone) how they stand, at once.
func (s *Stores) Health(ctx context.Context) (analytics.DirectoryHealth, []analytics.ReplicaHealth) {
	var replicas []analytics.ReplicaHealth
	var wg sync.WaitGroup
	if s.Shards != nil {
		wg.Go(func() { replicas = s.Shards.Health(ctx) })
	}
	directory := s.Directory.Health(ctx)
	wg.Wait()
	return directory, replicas
}

// Engines names the directory's engine and the usage store's, for logs.
func (s *Stores) Engines() (directory, usage string) {
	directory, usage = s.Directory.Dialect(), s.Directory.Dialect()
	if s.Shards != nil {
		usage = fmt.Sprintf("clickhouse (%d shards)", len(s.Shards.Shards()))
	}
	return directory, usage
}

// Close closes the usage store, then the directory: a ClickHouse writer
// finishing its last write still needs the directory's lock.
func (s *Stores) Close() error {
	var err error
	if s.Shards != nil {
		err = s.Shards.Close()
	}
	return errors.Join(err, s.Directory.Close())
}
