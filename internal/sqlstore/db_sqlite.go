package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"

	"github.com/mattn/go-sqlite3"
	"github.com/pressly/goose/v3"
)

var sqliteDialect = dialect{
	name:          "sqlite",
	goose:         goose.DialectSQLite3,
	forUpdate:     "", // one writer at a time: the write transaction is the lock
	maxParams:     32766,
	blob:          "BLOB",
	appendWriters: 1, // one write connection
	unavailable: func(err error) bool {
		var e sqlite3.Error
		return errors.As(err, &e) && (e.Code == sqlite3.ErrBusy || e.Code == sqlite3.ErrLocked ||
			e.Code == sqlite3.ErrCantOpen || e.Code == sqlite3.ErrIoErr || e.Code == sqlite3.ErrFull)
	},
	retryable:     func(error) bool { return false },
	mergesRollups: true,
	rollupsBehind: true,
}

// sqliteDriver is SQLite as the write connection opens it: it checkpoints
// every walCheckpointPages. Every connection, this one's and the
// readers', also has the functions by which a write adds to a rollup row
// in the upsert that writes it, rather than reading the row first
// (add_student_counts(stored, added) adds two rows of students' counts,
// as rollup.AddRows does; union_students(stored, added) joins two
// student sets, as rollup.UnionSets does; db_functions.c). Nothing stored
// refers to the functions, so the file stays readable by any SQLite.
const sqliteDriver = "sqlite3_groupanalytics"

// walCheckpointPages is how many pages the WAL takes before a commit
// copies them back into the database (SQLite's default is 1,000). A
// flush of the firehose writes hundreds of pages, most of them the same
// schools' rows again: a checkpoint every few flushes copies each page
// once for all of them (BENCHMARKS.md, the firehose). The WAL grows to
// about 40 MB.
const walCheckpointPages = 10_000

func init() {
	if err := registerFunctions(); err != nil {
		panic(err)
	}
	sql.Register(sqliteDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walCheckpointPages), nil)
		return err
	}})
}

// openSQLite opens the file at path, creating it if needed. Writes go
// through one connection in immediate transactions, so writers queue rather
// than fail; reads use a pool that sees every committed write (WAL). Every
// commit is synced, so an acknowledged write survives a crash.
func openSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open sqlite: empty path")
	}
	params := url.Values{
		"_journal_mode": {"WAL"},
		"_synchronous":  {"FULL"},
		"_busy_timeout": {"10000"},
		"_foreign_keys": {"1"},
		"_cache_size":   {"-65536"},
		// Each connection keeps its prepared statements: a statement
		// that comes again (a write of one event, a report's reads) is
		// not parsed and planned again.
		"_stmt_cache_size": {"64"},
	}
	writeParams := url.Values{"_txlock": {"immediate"}}
	for k, v := range params {
		writeParams[k] = v
	}
	// The one write connection runs every kind of write, each of its
	// multi-row statements in a few sizes (eachRowSource).
	writeParams.Set("_stmt_cache_size", "256")
	write, err := sql.Open(sqliteDriver, "file:"+path+"?"+writeParams.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	write.SetMaxOpenConns(1)
	// The writer creates the file and switches it to WAL before readers come.
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	params.Set("_query_only", "1")
	read, err := sql.Open("sqlite3", "file:"+path+"?"+params.Encode())
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	read.SetMaxOpenConns(max(4, 2*runtime.GOMAXPROCS(0)))
	read.SetMaxIdleConns(max(4, 2*runtime.GOMAXPROCS(0)))
	return &Store{write: write, read: read, file: path, dialect: sqliteDialect, closers: []func() error{read.Close, write.Close}}, nil
}
