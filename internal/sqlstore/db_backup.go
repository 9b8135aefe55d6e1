package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of a SQLite store to the file to, while
// the store serves: the copy is one read transaction's snapshot (VACUUM
// INTO), so writers go on, in this process or another. The copy is made
// under a temporary name beside to, synced, and renamed over to, so that
// to is either the whole copy or what it was before; a copy that fails is
// removed. The access journal is folded first. On PostgreSQL it is an
// error: use the server's tools.
func (s *Store) Backup(ctx context.Context, to string) error {
	if s.dialect.name != "sqlite" {
		return errors.New("copy: only a SQLite store is copied here")
	}
	// The copy holds the access log's entries written until now, those of
	// another process serving the store too.
	if err := s.foldAccess(ctx); err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	dir := filepath.Dir(to)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(to)+".*.partial")
	if err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	// VACUUM INTO wants a file that does not exist yet; the name was
	// reserved only to be unique.
	if err := os.Remove(tmpPath); err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmpPath)
		}
	}()
	if err := s.vacuumInto(ctx, tmpPath); err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	if err := syncFile(tmpPath); err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	if err := os.Rename(tmpPath, to); err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	done = true
	// The rename is durable once the directory is.
	if err := syncFile(dir); err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	return nil
}

// vacuumInto writes the copy on a connection of its own: the store's
// readers may not write a file, and its one writer must not wait for a
// copy.
func (s *Store) vacuumInto(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite3", "file:"+s.file+"?_busy_timeout=10000")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `VACUUM INTO ?`, path)
	return err
}

// syncFile flushes the file or directory at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
