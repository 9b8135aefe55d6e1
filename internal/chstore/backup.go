package chstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Backups of the shards (groupanalytics backup and restore). Each table
// of the usage database is frozen on one replica of each shard (ALTER
// TABLE … FREEZE: hard links to its parts under the server's shadow
// directory, made at once) while the directory holds the writers still;
// the parts are then copied into the backup. A restore copies them into
// the tables' detached directories on fresh servers and attaches them,
// then checks that every replica holds their rows. The servers' data
// directories must be on the disk of the machine that runs either.

// BackupShard is what a backup holds of one shard: the replica its parts
// come from and, of each table, the parts.
type BackupShard struct {
	Shard   string        `json:"shard"`
	Replica string        `json:"replica"`
	Tables  []BackupTable `json:"tables"`
}

// BackupTable is a table's parts in a backup.
type BackupTable struct {
	Table string       `json:"table"`
	Parts []BackupPart `json:"parts"`
	// frozen is where the frozen parts are on the server's disk, under
	// the shadow directory of its freeze, shadow.
	frozen, shadow string
}

// BackupPart is one part of a table and the rows it holds.
type BackupPart struct {
	Name string `json:"name"`
	Rows uint64 `json:"rows"`
}

// Rows is how many rows the table's parts hold.
func (t BackupTable) Rows() (n uint64) {
	for _, p := range t.Parts {
		n += p.Rows
	}
	return n
}

// backedUpTables returns the tables a backup holds, by name, and where
// each keeps its parts on r's disk: every table of the database but
// schema_migrations, which is each server's own.
func (s *Store) backedUpTables(ctx context.Context, r *replica) (map[string]string, error) {
	rows, err := r.conn.Query(ctx, `SELECT name, data_path FROM system.tables
		WHERE database = ? AND name != 'schema_migrations' AND engine LIKE '%MergeTree'`, s.database)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	tables := map[string]string{}
	for rows.Next() {
		var name, path string
		if err := rows.Scan(&name, &path); err != nil {
			return nil, err
		}
		tables[name] = path
	}
	return tables, rows.Err()
}

// Freeze freezes every table on one replica of each shard, one whose
// replication queue is empty, so that it holds every acknowledged write.
// Call it while no write of usage runs (the directory's HoldUsageWrites).
func (s *Store) Freeze(ctx context.Context) ([]BackupShard, error) {
	var backup []BackupShard
	for _, sh := range s.shards {
		r, err := s.caughtUp(ctx, sh)
		if err != nil {
			return nil, fmt.Errorf("freeze shard %s: %w", sh.name, err)
		}
		tables, err := s.backedUpTables(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("freeze shard %s: %w", sh.name, err)
		}
		b := BackupShard{Shard: sh.name, Replica: r.addr}
		for _, name := range slices.Sorted(maps.Keys(tables)) {
			t, err := s.freezeTable(ctx, r, name, tables[name])
			if err != nil {
				return nil, fmt.Errorf("freeze %s on %s: %w", name, r.addr, err)
			}
			b.Tables = append(b.Tables, t)
		}
		backup = append(backup, b)
	}
	return backup, nil
}

// caughtUp returns a replica of the shard that has every entry of its
// tables' replication logs (its only server, when it has one), waiting
// for one up to ten seconds.
func (s *Store) caughtUp(ctx context.Context, sh *shard) (*replica, error) {
	if !sh.replicated() {
		return sh.replicas[0], nil
	}
	var errs []error
	// The writers wait meanwhile: not long.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		errs = errs[:0]
		for _, r := range sh.replicas {
			var behind uint64
			err := r.conn.QueryRow(ctx, `SELECT count() FROM system.replicas
				WHERE database = ? AND (queue_size > 0 OR log_pointer <= log_max_index)`, s.database).Scan(&behind)
			if err == nil && behind == 0 {
				return r, nil
			}
			errs = append(errs, fmt.Errorf("replica %s: %d tables behind, %v", r.addr, behind, err))
		}
	}
	return nil, fmt.Errorf("no replica caught up: %w", errors.Join(errs...))
}

// freezeTable freezes a table on r and lists its frozen parts with their
// rows (from system.parts, which lists a part merged away since too).
func (s *Store) freezeTable(ctx context.Context, r *replica, name, dataPath string) (BackupTable, error) {
	t := BackupTable{Table: name}
	if err := r.conn.Exec(ctx, `ALTER TABLE `+s.table(name)+` FREEZE`); err != nil {
		return t, err
	}
	root := strings.TrimSuffix(filepath.Clean(dataPath), filepath.Join("data", s.database, name))
	increment, err := os.ReadFile(filepath.Join(root, "shadow", "increment.txt"))
	if err != nil {
		return t, fmt.Errorf("the server's data directory (%s) is not on this machine's disk: back up where it is (%w)", root, err)
	}
	t.shadow = filepath.Join(root, "shadow", strings.TrimSpace(string(increment)))
	t.frozen = filepath.Join(t.shadow, "data", s.database, name)
	entries, err := os.ReadDir(t.frozen)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil // no part: an empty table
	}
	if err != nil {
		return t, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	rows, err := r.conn.Query(ctx, `SELECT name, rows FROM system.parts WHERE database = ? AND table = ? AND has(?, name)`,
		s.database, name, names)
	if err != nil {
		return t, err
	}
	defer rows.Close()
	for rows.Next() {
		var p BackupPart
		if err := rows.Scan(&p.Name, &p.Rows); err != nil {
			return t, err
		}
		t.Parts = append(t.Parts, p)
	}
	if err := rows.Err(); err != nil {
		return t, err
	}
	if len(t.Parts) != len(names) {
		return t, fmt.Errorf("%d parts frozen, %d of them known to the server", len(names), len(t.Parts))
	}
	return t, nil
}

// CopyFrozen copies the frozen parts into dir, a directory per shard (by
// its place in backup) and table, and removes them from the shadow
// directories.
func CopyFrozen(backup []BackupShard, dir string) error {
	for i, b := range backup {
		for _, t := range b.Tables {
			for _, p := range t.Parts {
				if err := copyTree(filepath.Join(t.frozen, p.Name), partDir(dir, i, t.Table, p.Name), -1, -1); err != nil {
					return fmt.Errorf("copy %s of shard %s: %w", t.Table, b.Shard, err)
				}
			}
			if t.shadow != "" {
				if err := os.RemoveAll(t.shadow); err != nil {
					return err
				}
			}
		}
	}
	return syncDirs(dir)
}

// syncDirs flushes every directory under root, root included, to disk: a
// copied file, synced, is found after a power loss only if the entries of
// the directories above it were flushed too, before the manifest names it.
func syncDirs(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}

// partDir is where a backup in dir keeps a part of shard i's table.
func partDir(dir string, i int, table, part string) string {
	return filepath.Join(dir, fmt.Sprintf("shard%d", i+1), table, part)
}

// copyTree copies the directory from to to (made), its files synced,
// owned by uid and gid unless they are -1.
func copyTree(from, to string, uid, gid int) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			err = os.MkdirAll(dst, 0o755)
		} else {
			err = copyFile(path, dst)
		}
		if err == nil && uid >= 0 {
			err = os.Chown(dst, uid, gid)
		}
		return err
	})
}

// copyFile copies a file's bytes to a new file, synced.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Restore attaches a backup's parts, copied from dir, to the store's
// tables, which must hold no rows: shard i of the backup to the store's
// shard i, on its first replica, with merges stopped on every replica
// until each holds every row attached.
func (s *Store) Restore(ctx context.Context, backup []BackupShard, dir string) error {
	if len(backup) != len(s.shards) {
		return fmt.Errorf("restore: the backup holds %d shards, --usage names %d: restore onto as many", len(backup), len(s.shards))
	}
	for _, sh := range s.shards {
		if err := s.checkEmpty(ctx, sh); err != nil {
			return fmt.Errorf("restore shard %s: %w", sh.name, err)
		}
	}
	for i, b := range backup {
		if err := s.restoreShard(ctx, s.shards[i], b, dir, i); err != nil {
			return fmt.Errorf("restore shard %s: %w", s.shards[i].name, err)
		}
	}
	return nil
}

// CheckEmpty fails unless every replica of every shard that the usage URL
// raw names answers and holds no usage: what Restore refuses, checked by a
// restore before it writes anything anywhere.
func CheckEmpty(ctx context.Context, raw string) error {
	s, err := Open(ctx, raw, nil, Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	for _, sh := range s.shards {
		if err := s.checkEmpty(ctx, sh); err != nil {
			return fmt.Errorf("restore shard %s: %w", sh.name, err)
		}
	}
	return nil
}

// checkEmpty fails unless every table of the shard is empty.
func (s *Store) checkEmpty(ctx context.Context, sh *shard) error {
	return sh.onEvery(func(r *replica) error {
		tables, err := s.backedUpTables(ctx, r)
		if err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(tables)) {
			var n uint64
			if err := r.conn.QueryRow(ctx, `SELECT count() FROM `+s.table(name)).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%s on %s holds %d rows: restore onto servers without usage", name, r.addr, n)
			}
		}
		return nil
	})
}

// restoreShard attaches shard i's parts of the backup in dir.
func (s *Store) restoreShard(ctx context.Context, sh *shard, b BackupShard, dir string, i int) (err error) {
	first := sh.replicas[0]
	tables, err := s.backedUpTables(ctx, first)
	if err != nil {
		return err
	}
	for _, t := range b.Tables {
		if _, ok := tables[t.Table]; !ok {
			return fmt.Errorf("the backup's table %s is not in database %s (restore onto servers migrated by this release)", t.Table, s.database)
		}
	}
	merges := func(verb string) error {
		return sh.onEvery(func(r *replica) error {
			for _, t := range b.Tables {
				if err := r.conn.Exec(ctx, `SYSTEM `+verb+` MERGES `+s.table(t.Table)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := merges("STOP"); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, merges("START")) }()
	for _, t := range b.Tables {
		if err := s.attachParts(ctx, first, t, tables[t.Table], dir, i); err != nil {
			return fmt.Errorf("%s: %w", t.Table, err)
		}
	}
	return sh.onEvery(func(r *replica) error { return s.holdsRows(ctx, r, b.Tables) })
}

// attachParts copies a table's parts into its detached directory on r,
// owned as the table's directory is, and attaches them.
func (s *Store) attachParts(ctx context.Context, r *replica, t BackupTable, dataPath, dir string, i int) error {
	info, err := os.Stat(dataPath)
	if err != nil {
		return fmt.Errorf("the server's data directory is not on this machine's disk: restore where it is (%w)", err)
	}
	uid, gid := -1, -1
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		uid, gid = int(st.Uid), int(st.Gid)
	}
	for _, p := range t.Parts {
		if err := copyTree(partDir(dir, i, t.Table, p.Name), filepath.Join(dataPath, "detached", p.Name), uid, gid); err != nil {
			return err
		}
		if err := r.conn.Exec(ctx, `ALTER TABLE `+s.table(t.Table)+` ATTACH PART ?`, p.Name); err != nil {
			return fmt.Errorf("attach part %s on %s: %w", p.Name, r.addr, err)
		}
	}
	return nil
}

// holdsRows waits until r's active parts of each table hold the backup's
// rows (merges stopped: a replica fetches the parts attached on another),
// for two minutes at most.
func (s *Store) holdsRows(ctx context.Context, r *replica, tables []BackupTable) error {
	for _, t := range tables {
		var rows uint64
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			err := r.conn.QueryRow(ctx, `SELECT sum(rows) FROM system.parts WHERE database = ? AND table = ? AND active`,
				s.database, t.Table).Scan(&rows)
			if err != nil {
				return err
			}
			if rows == t.Rows() {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s on %s holds %d rows after the restore, the backup %d", t.Table, r.addr, rows, t.Rows())
			}
		}
	}
	return nil
}
