package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A backup of a usage store on ClickHouse copies the shards and the
// directory as of one moment: every transaction that writes a group's
// usage on ClickHouse (WithGroupLock, WithGroupsLock) holds one advisory
// lock shared, and a backup holds it alone while it freezes the shards
// and takes the directory's snapshot (HoldUsageWrites). The log's writers
// do not take it: events are acknowledged meanwhile, into the log.
const usageWritesLockKey = 0x6761626b

// holdUsageWrites takes the lock of usage writers shared in tx.
func holdUsageWrites(ctx context.Context, tx *txn) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, int64(usageWritesLockKey))
	return err
}

// WritesHold holds a usage store's writers on ClickHouse still, for a
// backup, and the directory's snapshot of that moment.
type WritesHold struct {
	lock, snap *pgx.Conn
	snapTx     pgx.Tx
	// Snapshot names the directory's snapshot for pg_dump --snapshot.
	Snapshot string
}

// HoldUsageWrites waits for the writers of usage on ClickHouse under way
// to finish, keeps new ones waiting until Release, and takes the
// directory's snapshot after the last of them, held until Close.
func (s *Store) HoldUsageWrites(ctx context.Context) (*WritesHold, error) {
	if s.pool == nil {
		return nil, errors.New("HoldUsageWrites: a backup of a usage store on ClickHouse needs a PostgreSQL directory")
	}
	h := &WritesHold{}
	err := func() (err error) {
		if h.lock, err = s.connect(ctx); err != nil {
			return err
		}
		// New writers queue behind a backup that waits: it waits for a
		// long one (a retention run may take minutes) no longer than this.
		if _, err = h.lock.Exec(ctx, `SET lock_timeout = '10s'`); err != nil {
			return err
		}
		if _, err = h.lock.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(usageWritesLockKey)); err != nil {
			return fmt.Errorf("the writers of usage did not pause within 10 s (a long erasure, move or retention run): try again (%w)", err)
		}
		if h.snap, err = s.connect(ctx); err != nil {
			return err
		}
		if h.snapTx, err = h.snap.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}); err != nil {
			return err
		}
		return h.snapTx.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&h.Snapshot)
	}()
	if err != nil {
		h.Close(context.Background())
		return nil, s.wrap("HoldUsageWrites", err)
	}
	return h, nil
}

// Release lets the writers go on; the snapshot stays.
func (h *WritesHold) Release(ctx context.Context) {
	if h.lock != nil {
		h.lock.Close(ctx) // the session's lock goes with it
		h.lock = nil
	}
}

// Close releases the writers, if not yet, and ends the snapshot.
func (h *WritesHold) Close(ctx context.Context) {
	h.Release(ctx)
	if h.snapTx != nil {
		h.snapTx.Rollback(ctx)
	}
	if h.snap != nil {
		h.snap.Close(ctx)
	}
}

// Dump writes the directory's database to file in pg_dump's custom
// format, as of snapshot (an exported snapshot, or "" for now). pg_dump
// must be on the PATH, of the server's release or a later one.
func (s *Store) Dump(ctx context.Context, file, snapshot string) error {
	if s.pool == nil {
		return errors.New("dump: only a PostgreSQL directory is dumped")
	}
	args := []string{"--format=custom", "--no-owner", "--file=" + file}
	if snapshot != "" {
		args = append(args, "--snapshot="+snapshot)
	}
	return s.runTool(ctx, "pg_dump", append(args, "--dbname="+s.pool.Config().ConnString())...)
}

// RestoreDump restores a Dump into the store's database, which must hold
// no table: all of it, or nothing.
func (s *Store) RestoreDump(ctx context.Context, file string) error {
	if s.pool == nil {
		return errors.New("restore: only into a PostgreSQL directory")
	}
	var tables int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil {
		return s.wrap("restore", err)
	}
	if tables > 0 {
		return fmt.Errorf("restore: the directory's database holds %d tables: restore into an empty database", tables)
	}
	return s.runTool(ctx, "pg_restore", "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction",
		"--dbname="+s.pool.Config().ConnString(), file)
}

// runTool runs one of PostgreSQL's client programs; its error names the
// program and what it printed, never the connection string.
func (s *Store) runTool(ctx context.Context, name string, args ...string) error {
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s: not found on the PATH (Debian: apt-get install postgresql-client)", name)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	if err := cmd.Run(); err != nil {
		msg := strings.ReplaceAll(strings.TrimSpace(stderr.String()), s.pool.Config().ConnString(), "…")
		return fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	return nil
}

// RenameShards moves the placements of the shards named as keys to the
// shards named as their values, at once (a restore onto servers at other
// addresses).
func (s *Store) RenameShards(ctx context.Context, renamed map[string]string) error {
	var from, to []string
	for old, name := range renamed {
		if old != name {
			from, to = append(from, old), append(to, name)
		}
	}
	if len(from) == 0 {
		return nil
	}
	_, err := s.write.ExecContext(ctx, `UPDATE usage_placements AS p SET shard = r.name
		FROM unnest($1::text[], $2::text[]) AS r(old, name) WHERE p.shard = r.old`, from, to)
	return s.wrap("RenameShards", err)
}
