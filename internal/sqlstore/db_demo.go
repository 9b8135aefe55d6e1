package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// demoApplicationID marks a SQLite file as a demo store ("GAdm" in the
// header's application id, which nothing else of ours sets).
const demoApplicationID = 0x4741646d

// demoLockID is the PostgreSQL advisory lock a demo holds on its database.
const demoLockID = 0x67614465_6d6f0001

var (
	// ErrNotDemoStore is ClaimDemo's refusal of a store that holds data a
	// demo did not make.
	ErrNotDemoStore = errors.New("it holds a store that demo did not make, and demo never changes one")
	// ErrDemoRunning is ClaimDemo's refusal of a store another demo holds.
	ErrDemoRunning = errors.New("another demo is serving it")
)

// ClaimDemo makes the store the demo's for as long as it is open. It
// refuses a store that holds anything and is not marked as a demo's (a
// store of someone's own), and one that another demo holds; an empty store
// it marks as the demo's. Call it before Migrate, which would change a
// store of someone's own.
func (s *Store) ClaimDemo(ctx context.Context) error {
	if err := s.lockDemo(ctx); err != nil {
		return err
	}
	var marked bool
	var tables int
	var err error
	if s.dialect.name == "postgres" {
		err = s.write.QueryRowContext(ctx, `SELECT to_regclass('groupanalytics_demo') IS NOT NULL,
			(SELECT count(*) FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema'))`).
			Scan(&marked, &tables)
	} else {
		var id int64
		if err = s.write.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&id); err == nil {
			marked = id == demoApplicationID
			err = s.write.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&tables)
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("ClaimDemo: %w", err)
	case marked:
		return nil
	case tables > 0:
		return ErrNotDemoStore
	}
	mark := fmt.Sprintf(`PRAGMA application_id = %d`, demoApplicationID)
	if s.dialect.name == "postgres" {
		mark = `CREATE TABLE groupanalytics_demo (made_at TIMESTAMPTZ NOT NULL DEFAULT now())`
	}
	if _, err := s.write.ExecContext(ctx, mark); err != nil {
		return fmt.Errorf("ClaimDemo: mark: %w", err)
	}
	return nil
}

// lockDemo takes a lock on the store that lasts until Close and that a
// second demo cannot take: flock on the SQLite file (apart from SQLite's
// own locks), an advisory lock on a PostgreSQL connection of its own.
func (s *Store) lockDemo(ctx context.Context) error {
	if s.dialect.name == "postgres" {
		conn, err := s.write.Conn(ctx)
		if err != nil {
			return fmt.Errorf("ClaimDemo: %w", err)
		}
		var locked bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, int64(demoLockID)).Scan(&locked); err != nil || !locked {
			conn.Close()
			if err != nil {
				return fmt.Errorf("ClaimDemo: %w", err)
			}
			return ErrDemoRunning
		}
		// Before the pool closes, which waits for its connections. The lock
		// is let go of first, at once: closed, the connection's session
		// would end (and let go) a moment after Close returns, when a demo
		// started again at once could find it still held.
		release := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, int64(demoLockID))
			return errors.Join(err, conn.Close())
		}
		s.closers = append([]func() error{release}, s.closers...)
		return nil
	}
	f, err := os.Open(s.file)
	if err != nil {
		return fmt.Errorf("ClaimDemo: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return ErrDemoRunning
		}
		return fmt.Errorf("ClaimDemo: %w", err)
	}
	// Closed after SQLite's connections: closing another descriptor of
	// the file earlier would drop SQLite's own (POSIX) locks on it.
	s.closers = append(s.closers, f.Close)
	return nil
}
