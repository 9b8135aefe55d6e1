package chstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
)

// migrations are the schema's changes, numbered: NNNNN_name.sql, applied
// in order on every shard, each once. A migration's statements end with
// ';' at the end of a line and name tables as {database}.table.
//
//go:embed migrations/*.sql
var migrations embed.FS

// goSteps are the parts of migrations written in Go, run after the
// statements of the file they are named by; like them, each must be safe
// to run again.
var goSteps = map[string]func(s *Store, ctx context.Context, sh *shard) error{
	"00002_student_counts.sql": (*Store).convertStudentRollups,
	"00003_last_days.sql":      (*Store).addLastDays,
}

// migration is one numbered file of migrations.
type migration struct {
	version    uint32
	file       string
	statements []string
}

// Migrate brings every server's schema to the newest migration: it creates
// the database and its version table, then applies, in order, each
// migration the shard has not recorded, recording it after its last
// statement. ClickHouse has no transactions, so a migration cut short is
// run again whole: each statement must be safe to repeat (IF NOT EXISTS,
// IF EXISTS). Processes that start together may both apply a migration;
// that is safe for the same reason. It says how many migrations it
// applied, over all servers.
//
// Each replica of a replicated shard is migrated by itself, its tables
// made Replicated*MergeTree (ClickHouse replicates rows, not DDL), so
// that an empty server that replaces a lost replica gets its tables, and
// then its rows from its peers, from Migrate. A server that cannot be
// reached is left for later, the others migrated: Migrate then answers an
// *UnmigratedError naming it.
func (s *Store) Migrate(ctx context.Context, log *slog.Logger) (applied int, err error) {
	applied, err = s.migrate(ctx, log, migrations)
	return applied, s.wrap("Migrate", err)
}

func (s *Store) migrate(ctx context.Context, log *slog.Logger, fsys fs.FS) (applied int, err error) {
	list, err := readMigrations(fsys)
	if err != nil {
		return 0, err
	}
	var unmigrated []string
	for _, sh := range s.shards {
		for _, r := range sh.replicas {
			n, err := s.migrateServer(ctx, log, r.alone(sh.name), sh.replicated(), list)
			applied += n
			switch {
			case err != nil && unreachable(err):
				log.Warn("server not migrated: it cannot be reached; it is when a process starts with it up, or by groupanalytics migrate",
					"server", r.addr, "error", err.Error())
				unmigrated = append(unmigrated, r.addr)
			case err != nil:
				return applied, fmt.Errorf("server %s: %w", r.addr, err)
			}
		}
	}
	if len(unmigrated) > 0 {
		return applied, &UnmigratedError{Servers: unmigrated}
	}
	return applied, nil
}

// UnmigratedError names the servers Migrate could not reach, having
// migrated the others: a process may serve without them (their shards'
// groups answer 503 while they are down, as they would anyway), and
// `groupanalytics migrate` refuses to say the schema is done.
type UnmigratedError struct {
	Servers []string
}

func (e *UnmigratedError) Error() string {
	return fmt.Sprintf("%s not migrated: cannot be reached (%s); migrate again once it is back",
		analytics.Plural(len(e.Servers), "ClickHouse server"), strings.Join(e.Servers, ", "))
}

// migrateServer migrates sh, a shard of one server (one replica of a
// replicated shard, when replicated).
func (s *Store) migrateServer(ctx context.Context, log *slog.Logger, sh *shard, replicated bool, list []migration) (applied int, err error) {
	setup := []string{
		"CREATE DATABASE IF NOT EXISTS " + s.database,
		`CREATE TABLE IF NOT EXISTS ` + s.table("schema_migrations") + ` (version UInt32, applied_at DateTime)
			ENGINE = MergeTree() ORDER BY version`,
	}
	for _, stmt := range setup {
		if err := sh.exec(ctx, stmt); err != nil {
			return 0, err
		}
	}
	current, err := s.schemaVersion(ctx, sh)
	if err != nil {
		return 0, err
	}
	for _, m := range list {
		if m.version <= current {
			continue
		}
		start := time.Now()
		for _, stmt := range m.statements {
			stmt = strings.ReplaceAll(stmt, "{database}", s.database)
			if replicated {
				stmt = replicatedEngine(stmt, s.database)
			}
			if err := sh.exec(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migration %s: %w", m.file, err)
			}
		}
		if step := goSteps[m.file]; step != nil {
			if err := step(s, ctx, sh); err != nil {
				return applied, fmt.Errorf("migration %s: %w", m.file, err)
			}
		}
		if err := s.recordMigration(ctx, sh, m.version); err != nil {
			return applied, err
		}
		applied++
		log.Debug("migration applied", "server", sh.replicas[0].addr, "version", m.version, "file", m.file, "duration", time.Since(start))
	}
	if applied > 0 {
		log.Info("migrated", "server", sh.replicas[0].addr, "migrations", applied, "version", list[len(list)-1].version)
	}
	return applied, nil
}

// recordMigration records that the shard has applied migration version.
func (s *Store) recordMigration(ctx context.Context, sh *shard, version uint32) error {
	return sh.insert(ctx, `INSERT INTO `+s.table("schema_migrations")+` (version, applied_at)`, func(b driver.Batch) error {
		return b.Append(version, time.Now())
	})
}

// schemaVersion returns the newest migration the shard has recorded; 0
// when none.
func (s *Store) schemaVersion(ctx context.Context, sh *shard) (uint32, error) {
	var v uint32
	err := sh.queryRow(ctx, `SELECT toUInt32(max(version)) FROM `+s.table("schema_migrations")).Scan(&v)
	return v, err
}

// readMigrations reads the numbered files of fsys's migrations folder,
// in order.
func readMigrations(fsys fs.FS) ([]migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var list []migration
	for _, file := range files {
		number, _, ok := strings.Cut(path.Base(file), "_")
		v, err := strconv.ParseUint(number, 10, 32)
		if !ok || err != nil || v == 0 {
			return nil, fmt.Errorf("migration %s: the name must start with its number, as 00002_name.sql", file)
		}
		if len(list) > 0 && list[len(list)-1].version == uint32(v) {
			return nil, fmt.Errorf("migrations %s and %s have one number", list[len(list)-1].file, file)
		}
		text, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		list = append(list, migration{version: uint32(v), file: path.Base(file), statements: statements(string(text))})
	}
	return list, nil
}

// statements splits a migration into its statements: each ends with ';'
// at the end of a line. Lines of '--' comments are dropped.
func statements(text string) []string {
	var list []string
	var stmt strings.Builder
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		stmt.WriteString(line)
		if trimmed := strings.TrimSpace(line); strings.HasSuffix(trimmed, ";") {
			list = append(list, strings.TrimSuffix(strings.TrimSpace(stmt.String()), ";"))
			stmt.Reset()
		}
	}
	if rest := strings.TrimSpace(stmt.String()); rest != "" {
		list = append(list, rest)
	}
	return list
}
