// Package sqlstore keeps the directory and the usage store in a SQL
// database: SQLite, the embedded default, or PostgreSQL. The SQL is shared;
// the few differences between the two live in a dialect.
//
// It is one package because its roles share transactions: one enrols a
// new student (the directory), appends their events and adds them to the
// rollups (the usage store); an erasure takes a student from both at once.
// Its files say their role by their prefix:
//   - db_: opening, migrating and transacting on either database
//     (db_store.go), statements over lists of ids and of rows
//     (db_lists.go), SQLite's and PostgreSQL's own (db_sqlite.go,
//     db_postgres.go), backups and the demo's claim on its store;
//   - dir_: the directory: groups and plans, keys and tokens, students,
//     classes, digests, receipts, and the access log with its journal;
//   - usage_: the usage store: the append path, the rollups and students'
//     counts it writes, the rollups folded behind the events, reads,
//     erasure, rebuilds, retention, and the Go migrations of the rollups;
//   - ch_: what the directory keeps for a usage store on ClickHouse: each
//     group's shard and intents (ch_placement.go), and the write-behind log
//     of events not yet applied (ch_log.go).
package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/cache"
	"groupanalytics/internal/rollup"
)

//go:embed migrations
var migrations embed.FS

// Store implements analytics.Directory and analytics.UsageStore.
type Store struct {
	write   *sql.DB // the connections that write; one for SQLite
	read    *sql.DB // the connections that only read
	dialect dialect
	file    string        // SQLite only: the database file
	pool    *pgxpool.Pool // PostgreSQL only: for COPY
	marks   *sql.DB       // PostgreSQL only: for the marks of groupLock
	// entryWrites writes PostgreSQL's access log entries to access_pending,
	// its commits unsynced.
	entryWrites *sql.DB
	closers     []func() error
	timeout     time.Duration // of every call whose context has no deadline; 0: none
	observer    analytics.WriteObserver
	log         *slog.Logger

	// mu guards closed, and is held for reading while a call hands work to
	// the background writers, so that Close never closes their queues
	// under a sender.
	mu      sync.RWMutex
	closed  bool
	writers sync.WaitGroup

	startWriter sync.Once
	appends     []chan *rollup.Call // to the writers of AppendEvents, by group

	touches chan keyRow      // to the writer of keys' last use
	entries chan *accessCall // PostgreSQL only: to the writer of the access log
	journal *accessJournal   // SQLite only: where the access log is written first
	folding chan struct{}    // closed to stop the folds of the access log's entries

	keptOrdinals *cache.Versioned[map[string]int]     // by group, under its roster version
	keptLastDays *cache.Versioned[[]analytics.Counts] // by group, under its creation and usage version
	// keptDistricts holds districts' schools, by district, under its
	// version (districtSchools).
	keptDistricts *cache.Versioned[[]districtSchool]
	kept          *keptRows   // groups' rollup rows (usage_kept.go)
	behind        behindStats // SQLite only: of rollups_behind

	leadMu  sync.Mutex
	lead    *pgx.Conn // PostgreSQL only: the connection of LeadApplier
	leading bool      // lead holds the leader's lock
}

// Options tune a store.
type Options struct {
	// CallTimeout bounds each call whose context has no deadline of its
	// own, so that a database that stops answering (packets dropped, not
	// refused) fails calls rather than hanging them. Zero: no bound, for
	// commands that may run long (import, rebuild) and can be interrupted.
	CallTimeout time.Duration
	// Observer, if set, is told of merged writes and retries.
	Observer analytics.WriteObserver
	// Log, if set, is told of what fails in the background.
	Log *slog.Logger
}

// ErrClosed is the error of a call made after Close.
var ErrClosed = fmt.Errorf("store closed: %w", analytics.ErrUnavailable)

// txn is a write transaction on its own connection, so that work outside
// database/sql (COPY) can join it.
type txn struct {
	*sql.Tx
	conn *sql.Conn
}

var (
	_ analytics.Directory  = (*Store)(nil)
	_ analytics.UsageStore = (*Store)(nil)
)

// dialect is what differs between the databases.
type dialect struct {
	name      string
	goose     goose.Dialect
	numbered  bool   // placeholders are $1, $2… rather than ?
	forUpdate string // row-lock suffix for read-modify-write
	maxParams int    // bound parameters per statement
	blob      string // the type of bytes, to cast a parameter to
	// appendWriters is how many transactions of AppendEvents a process
	// runs at once, over groups apart.
	appendWriters int
	unavailable   func(error) bool
	retryable     func(error) bool
	// mergesRollups: the upsert of a rollup row adds to the stored row
	// itself (SQLite, by functions of sqliteDriver), so that an append
	// writes its rollup rows without reading them. Otherwise it reads
	// them under the group's lock and writes the sums back.
	mergesRollups bool
	// rollupsBehind: a small append notes its events' shares of the
	// rollups for a fold to write, rather than writing them (usage_behind.go).
	rollupsBehind bool
}

// Open opens the store that dsn names: a postgres:// or postgresql:// URL,
// or else a SQLite file path. It does not migrate.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	var s *Store
	var err error
	if IsPostgres(dsn) {
		s, err = openPostgres(ctx, dsn)
	} else {
		s, err = openSQLite(ctx, strings.TrimPrefix(dsn, "sqlite:"))
	}
	if err != nil {
		return nil, err
	}
	s.timeout, s.observer, s.log = opts.CallTimeout, opts.Observer, cmp.Or(opts.Log, slog.New(slog.DiscardHandler))
	s.touches = make(chan keyRow, 1024)
	s.keptOrdinals = cache.New[map[string]int](maxKeptOrdinals)
	s.keptLastDays = cache.New[[]analytics.Counts](maxKeptLastDays)
	s.keptDistricts = cache.New[[]districtSchool](maxKeptDistricts)
	s.kept = newKeptRows()
	s.writers.Add(1)
	go s.writeTouches()
	if s.dialect.name == "sqlite" {
		s.journal = &accessJournal{path: s.file + "-access"}
	} else {
		s.entries = make(chan *accessCall, maxAccessBatch)
		s.writers.Add(1)
		go s.writeAccess()
	}
	s.folding = make(chan struct{})
	s.writers.Add(1)
	go s.foldAccessEvery(s.folding)
	return s, nil
}

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Dialect names the database: "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect.name }

// Health asks the directory's database how it stands: on PostgreSQL, also
// whether its commits wait for a standby, and how many stream from it and
// how far behind. The standbys' state needs the pg_monitor role (or a
// superuser): without it, PostgreSQL shows none.
func (s *Store) Health(ctx context.Context) analytics.DirectoryHealth {
	if s.dialect.name != "postgres" {
		return analytics.DirectoryHealth{Up: s.read.PingContext(ctx) == nil}
	}
	var h analytics.DirectoryHealth
	var lag float64
	err := s.write.QueryRowContext(ctx, `SELECT current_setting('synchronous_standby_names') <> '',
			count(*) FILTER (WHERE state = 'streaming'),
			coalesce(extract(epoch FROM max(replay_lag)), 0)::float8
		FROM pg_stat_replication`).Scan(&h.Synchronous, &h.Standbys, &lag)
	if err != nil {
		return analytics.DirectoryHealth{}
	}
	h.Up, h.Replicated, h.ReplayLag = true, true, time.Duration(lag*float64(time.Second))
	return h
}

// Close refuses new calls, lets the writers finish what is queued, and
// closes every connection. Calls made after it fail as unavailable (an
// append with ErrClosed).
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.startWriter.Do(func() {}) // no append writer may start from now on
	for _, q := range s.appends {
		close(q)
	}
	close(s.touches)
	if s.entries != nil {
		close(s.entries)
	}
	close(s.folding)
	s.mu.Unlock()
	s.kept.stopLoads()
	s.writers.Wait()
	var errs []error
	if s.journal != nil {
		// What is left in the journal is folded by the next process to
		// open the store, if this fold fails. (What is left in
		// access_pending is as safe there, for the next fold.)
		errs = append(errs, s.foldAccess(context.Background()), s.journal.close())
	}
	return errors.Join(append(errs, s.closeConnections())...)
}

// closeConnections closes every connection and pool the store opened.
func (s *Store) closeConnections() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.wrap("Ping", s.read.PingContext(ctx))
}

// bound gives ctx the store's call timeout unless it has a deadline.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || s.timeout == 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// Migrate applies the pending schema migrations and says how many. On
// PostgreSQL a session lock makes replicas that start together take turns.
func (s *Store) Migrate(ctx context.Context, log *slog.Logger) (applied int, err error) {
	fsys, err := fs.Sub(migrations, "migrations/"+s.dialect.name)
	if err != nil {
		return 0, fmt.Errorf("Migrate: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(s.studentCountsMigration(), s.weekRollupsMigration(), s.lastDaysMigration(), s.lastDaysOnStudentsMigration())}
	if lock := s.migrationLock(); lock != nil {
		opts = append(opts, lock)
	}
	p, err := goose.NewProvider(s.dialect.goose, s.write, fsys, opts...)
	if err != nil {
		return 0, fmt.Errorf("Migrate: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return 0, s.wrap("Migrate", err)
	}
	// A new store takes every migration: one line says so, each its own
	// at debug.
	var took time.Duration
	for _, r := range results {
		log.Debug("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		took += r.Duration
	}
	if len(results) > 0 {
		log.Info("migrated", "migrations", len(results), "version", results[len(results)-1].Source.Version, "duration", took)
	}
	return len(results), s.wrap("Migrate", s.countBehind(ctx))
}

// q rewrites ? placeholders for dialects that number them.
func (s *Store) q(query string) string {
	if !s.dialect.numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// wrap names the operation in err and marks failures to reach the database
// as unavailable, so callers answer 503 rather than 500.
func (s *Store) wrap(op string, err error) error {
	return analytics.StoreError(op, err, func(err error) bool {
		return s.dialect.unavailable(err) || errors.Is(err, context.DeadlineExceeded) || s.isClosed()
	})
}

// transact runs fn in a write transaction, again when the database asks
// for a retry (a deadlock or serialization failure) while ctx lasts.
func (s *Store) transact(ctx context.Context, op string, fn func(tx *txn) error) error {
	return s.transactIn(ctx, op, txDefault, fn)
}

// transactIn is transact run as mode says.
func (s *Store) transactIn(ctx context.Context, op string, mode txMode, fn func(tx *txn) error) error {
	return s.retrying(ctx, op, func(ctx context.Context) error { return s.transactOnce(ctx, mode, fn) })
}

// txMode is how a SQLite write transaction runs; PostgreSQL's all run
// alike.
type txMode struct {
	// temp is where the transaction keeps its temporary data, its
	// statement journals among them (the pages a statement changes, kept
	// so that it can be undone alone): DEFAULT, SQLite's, spills a
	// journal past 64 KiB to a temporary file; MEMORY keeps it in memory.
	temp string
}

var (
	// txDefault is every write but appends: its statement journals on
	// disk, so that a statement deleting a school's million rows keeps
	// them there, not in memory.
	txDefault = txMode{temp: "DEFAULT"}
	// txAppend keeps its statement journals in memory: appends, whose
	// statements are bounded by their batch, and which under a firehose
	// wrote as many pages to the temporary file as to the WAL
	// (BENCHMARKS.md).
	txAppend = txMode{temp: "MEMORY"}
)

// retrying runs once, again when the database asks for a retry (a
// deadlock or serialization failure) while ctx lasts.
func (s *Store) retrying(ctx context.Context, op string, once func(context.Context) error) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := once(ctx)
		if err != nil && attempt < 5 && s.dialect.retryable(err) {
			if s.observer != nil {
				s.observer.Retried(op)
			}
			select {
			case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
				continue
			case <-ctx.Done():
				err = errors.Join(err, ctx.Err())
			}
		}
		return s.wrap(op, err)
	}
}

func (s *Store) transactOnce(ctx context.Context, mode txMode, fn func(tx *txn) error) error {
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("a connection: %w", err)
	}
	defer conn.Close()
	if s.dialect.name == "sqlite" {
		// Set on the connection before the transaction: it cannot change
		// within one.
		if _, err := conn.ExecContext(ctx, "PRAGMA temp_store = "+mode.temp); err != nil {
			return err
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(&txn{Tx: tx, conn: conn}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		// Past its deadline, the transaction was rolled back under fn: say
		// so, rather than that it was done.
		return cmp.Or(ctx.Err(), err)
	}
	return nil
}

// query runs query in tx; with scan set, it passes every row to scan.
func (s *Store) query(ctx context.Context, tx *txn, query string, args []any, scan func(*sql.Rows) error) error {
	query = s.q(query)
	if scan == nil && s.dialect.name != "sqlite" {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	}
	// On SQLite a statement without rows runs as a query too. The driver
	// runs an exec on a goroutine of its own, so as to interrupt it if
	// ctx ends, and the caller waits for that goroutine; it steps a query
	// on the caller's goroutine, with the interrupt armed by
	// context.AfterFunc. An append runs dozens of these statements.
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for scan != nil && rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func nullMillis(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromNullMillis(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMillis(n.Int64)
	return &t
}

// scanStrings reads rows of one text column.
func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var list []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, rows.Err()
}

// scanMap reads rows of (text, value) into a map.
func scanMap[V any](rows *sql.Rows) (map[string]V, error) {
	defer rows.Close()
	m := map[string]V{}
	for rows.Next() {
		var k string
		var v V
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, rows.Err()
}

// appendJoined adds a row of a one-to-many LEFT JOIN, ordered by parent,
// to list: a parent's first row appends it with its child, if any; the
// rows after add their child to it. id names a parent, children is its
// list of children.
func appendJoined[T any](list []T, row T, child sql.NullString, id func(*T) string, children func(*T) *[]string) []T {
	if n := len(list); n > 0 && id(&list[n-1]) == id(&row) {
		*children(&list[n-1]) = append(*children(&list[n-1]), child.String)
		return list
	}
	if child.Valid {
		*children(&row) = []string{child.String}
	}
	return append(list, row)
}
