package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

var postgresDialect = dialect{
	name:      "postgres",
	goose:     goose.DialectPostgres,
	numbered:  true,
	forUpdate: " FOR UPDATE",
	maxParams: 65535,
	blob:      "BYTEA",
	// Two, so that one transaction's round trips and commit overlap the
	// other's: one alone kept its server process under two thirds busy
	// while calls queued (BENCHMARKS.md, the firehose).
	appendWriters: 2,
	unavailable:   pgUnavailable,
	retryable:     func(err error) bool { return pgCode(err) == "40001" || pgCode(err) == "40P01" },
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// pgUnavailable reports whether err means the server cannot be reached or
// is going away, rather than that a statement failed.
func pgUnavailable(err error) bool {
	code := pgCode(err)
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03" || code == "53300" ||
		errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "failed to connect")
}

// openPostgres connects a pgx pool and serves database/sql from it. A
// connection attempt gives up after five seconds, so that requests fail
// with 503 rather than hang while the server is away; the pool replaces
// broken connections by itself when it is back.
func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: invalid URL: %w", redactURL(err))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.BeforeConnect = pickHost
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgxpool's default is as many connections as cores (4 at least).
		// On a ClickHouse tier an apply holds one while its insert waits
		// for the quorum, and reads that wait for the apply hold others:
		// with four, a report could wait out the store timeout for a
		// connection while ZooKeeper elected a leader.
		cfg.MaxConns = max(cfg.MaxConns, 16)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	s := &Store{write: db, read: db, dialect: postgresDialect, pool: pool,
		closers: []func() error{db.Close, func() error { pool.Close(); return nil }}}
	s.closers = append(s.closers, s.closeLead)
	// Marks (placements and intents) commit while their writer holds a
	// group's lock in a transaction. Were they to take connections from
	// the pool, the writers waiting for that lock could hold them all.
	if s.marks, err = s.openPool(ctx, cfg, 4, nil); err != nil {
		return nil, errors.Join(err, s.closeConnections())
	}
	// The access log's entries commit without waiting for the disk: once
	// PostgreSQL has them a crash of the service cannot lose them, and a
	// crash of PostgreSQL loses at most its last moments' (docs/decisions.md,
	// the access log). One writer sends them, so two connections do.
	if s.entryWrites, err = s.openPool(ctx, cfg, 2, map[string]string{"synchronous_commit": "off"}); err != nil {
		return nil, errors.Join(err, s.closeConnections())
	}
	return s, nil
}

// pickHost points a new connection of a URL naming several hosts at the
// first of them that takes it, tried in the URL's order. pgx stops at the
// first host that refuses the login with a server error, and after a
// failover that may be a standby that has not yet replayed the creation of
// the database; the service wants the next host tried, as for a host down.
func pickHost(ctx context.Context, cc *pgx.ConnConfig) error {
	if len(cc.Fallbacks) == 0 {
		return nil
	}
	hosts := append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
	var errs []error
	for _, h := range hosts {
		one := cc.Config.Copy()
		one.Host, one.Port, one.TLSConfig, one.Fallbacks = h.Host, h.Port, h.TLSConfig, nil
		conn, err := pgconn.ConnectConfig(ctx, one)
		if err == nil {
			cc.Host, cc.Port, cc.TLSConfig, cc.Fallbacks = h.Host, h.Port, h.TLSConfig, nil
			return conn.Close(ctx)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// connect opens a connection of the store's own, outside its pools, to the
// host pickHost finds.
func (s *Store) connect(ctx context.Context) (*pgx.Conn, error) {
	cc := s.pool.Config().ConnConfig.Copy()
	if err := pickHost(ctx, cc); err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cc)
}

// openPool opens a pool of its own, of maxConns connections to cfg's
// server with params set on each, for database/sql; the store's Close
// closes it.
func (s *Store) openPool(ctx context.Context, cfg *pgxpool.Config, maxConns int32, params map[string]string) (*sql.DB, error) {
	cfg = cfg.Copy()
	cfg.MaxConns = maxConns
	maps.Copy(cfg.ConnConfig.RuntimeParams, params)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	s.closers = append(s.closers, db.Close, func() error { pool.Close(); return nil })
	return db, nil
}

// redactURL keeps a connection URL (and its password) out of an error.
func redactURL(err error) error {
	return errors.New(strings.SplitN(err.Error(), ":", 2)[0])
}

func (s *Store) migrationLock() goose.ProviderOption {
	if s.dialect.name != "postgres" {
		return nil
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil
	}
	return goose.WithSessionLocker(locker)
}

// copyEvents stages a large batch with COPY, then inserts the rows whose
// ids are new in one statement, returning their keys.
func (s *Store) copyEvents(ctx context.Context, tx *txn, rows [][]any) (map[[2]string]bool, error) {
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS staged_events
		(group_id TEXT, event_id TEXT, student_id TEXT, occurred_at BIGINT, metric SMALLINT) ON COMMIT DELETE ROWS`); err != nil {
		return nil, err
	}
	err := tx.conn.Raw(func(dc any) error {
		_, err := dc.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{"staged_events"},
			[]string{"group_id", "event_id", "student_id", "occurred_at", "metric"}, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return nil, err
	}
	result, err := tx.QueryContext(ctx, `INSERT INTO events (group_id, event_id, student_id, occurred_at, metric)
		SELECT group_id, event_id, student_id, occurred_at, metric FROM staged_events
		ON CONFLICT (group_id, event_id) DO NOTHING RETURNING group_id, event_id`)
	if err != nil {
		return nil, err
	}
	return scanKeys(result)
}
