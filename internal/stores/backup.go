package stores

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"groupanalytics/internal/chstore"
	"groupanalytics/internal/sqlstore"
)

// TierBackup is the manifest of a backup of a usage store on ClickHouse
// and its PostgreSQL directory, written last into the backup's directory:
// a directory without one holds no whole backup.
type TierBackup struct {
	Began     time.Time             `json:"began"` // when the writers were held still
	Shards    []chstore.BackupShard `json:"shards"`
	Directory string                `json:"directory"` // the directory's dump, in the backup
}

// Names of a tier backup's files in its directory.
const (
	tierManifest = "manifest.json"
	tierDump     = "directory.dump"
)

// BackupTier backs up the usage store on ClickHouse that cfg names, and
// its directory, into dir, made anew. The directory holds the writers of
// usage still (events are still acknowledged, into its log) while every
// table is frozen on one replica of each shard and its own snapshot is
// taken, so that the copies are of one moment; then the writers go on,
// the directory is dumped from the snapshot and the parts are copied.
func BackupTier(ctx context.Context, cfg Config, dir string) (*TierBackup, error) {
	if !sqlstore.IsPostgres(cfg.DB) {
		return nil, errors.New("backup: a usage store on ClickHouse is backed up with its directory, on PostgreSQL: give --db a postgres:// URL")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("backup: %w (a backup goes into a new directory)", err)
	}
	s, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	hold, err := s.Directory.HoldUsageWrites(ctx)
	if err != nil {
		return nil, err
	}
	defer hold.Close(context.Background())
	b := &TierBackup{Began: time.Now().UTC(), Directory: tierDump}
	b.Shards, err = s.Shards.Freeze(ctx)
	hold.Release(ctx)
	if err == nil {
		err = s.Directory.Dump(ctx, filepath.Join(dir, tierDump), hold.Snapshot)
	}
	hold.Close(ctx)
	if err == nil {
		err = chstore.CopyFrozen(b.Shards, dir)
	}
	if err == nil {
		err = writeManifest(filepath.Join(dir, tierManifest), b)
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	return b, nil
}

// writeManifest writes the manifest, synced, then syncs the directory.
func writeManifest(path string, b *TierBackup) error {
	body, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(body, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RestoreTier restores a BackupTier from dir: the directory's dump into
// cfg's PostgreSQL database, which must hold no table, then the shards'
// parts onto cfg's ClickHouse servers, migrated here, whose tables must
// hold no rows (both checked before anything is written): shard i of the backup onto shard i of cfg.Usage, which may
// be at other addresses. It checks that every replica holds the rows of
// the backup's parts.
func RestoreTier(ctx context.Context, cfg Config, dir string) (*TierBackup, error) {
	body, err := os.ReadFile(filepath.Join(dir, tierManifest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("restore: %s holds no manifest.json: not a whole backup", dir)
	}
	if err != nil {
		return nil, err
	}
	var b TierBackup
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("restore: %s: %w", tierManifest, err)
	}
	if cfg.Usage == "" || !sqlstore.IsPostgres(cfg.DB) {
		return nil, errors.New("restore: give the PostgreSQL directory (--db) and the ClickHouse servers (--usage) to restore onto")
	}
	usage, err := chstore.ParseURL(cfg.Usage)
	if err != nil {
		return nil, err
	}
	if len(usage.Shards) != len(b.Shards) {
		return nil, fmt.Errorf("restore: the backup holds %d shards, --usage names %d: restore onto as many", len(b.Shards), len(usage.Shards))
	}
	// Every refusal before anything is written: servers that hold usage
	// or do not answer, then a directory that holds tables.
	if err := chstore.CheckEmpty(ctx, cfg.Usage); err != nil {
		return nil, err
	}
	d, err := sqlstore.Open(ctx, cfg.DB, sqlstore.Options{})
	if err != nil {
		return nil, err
	}
	err = d.RestoreDump(ctx, filepath.Join(dir, b.Directory))
	if err == nil {
		// Servers at other addresses: the schools placed on shard i of
		// the backup are on shard i of --usage.
		renamed := map[string]string{}
		for i, sh := range b.Shards {
			renamed[sh.Shard] = usage.Shards[i]
		}
		err = d.RenameShards(ctx, renamed)
	}
	d.Close()
	if err != nil {
		return nil, err
	}
	cfg.MigrateAll = true
	s, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return &b, s.Shards.Restore(ctx, b.Shards, dir)
}
