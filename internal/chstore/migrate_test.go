package chstore_test

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ClickHouse/clickhouse-go/v2"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// schemaBeforeMigrations is what releases without migrations made on a
// shard at start-up: the tables, and no version table.
const schemaBeforeMigrations = `CREATE TABLE IF NOT EXISTS %s.events (group_id String, event_id String, student_id String,
	occurred_at Int64, metric UInt8, seq UInt64) ENGINE = MergeTree() ORDER BY (group_id, event_id)`

// TestMigrationsAdoptAnOldStoreAndRunOnce: a store whose shards were made
// before migrations keeps its events and is recorded at version 1; a
// later migration runs once on every shard, however often Migrate runs.
func TestMigrationsAdoptAnOldStoreAndRunOnce(t *testing.T) {
	f := newFixture(t)
	cfg, err := chstore.ParseURL(f.url)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.url, "|") {
		t.Skip("the releases before migrations had no replicated shards")
	}
	// Drop what the fixture migrated, and make the shards as an old
	// release did, holding a group's event.
	for _, addr := range cfg.Shards {
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}})
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{"DROP DATABASE IF EXISTS " + cfg.Database, "CREATE DATABASE " + cfg.Database,
			strings.ReplaceAll(schemaBeforeMigrations, "%s", cfg.Database),
			"INSERT INTO " + cfg.Database + ".events SELECT 'old', 'e0-" + addr + "', 's0', 0, 1, 1"} {
			if err := conn.Exec(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		conn.Close()
	}
	old, err := chstore.Open(ctx, f.url, nil, chstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if applied, err := old.Migrate(ctx, quiet); err != nil || applied != 3*len(cfg.Shards) {
		t.Fatalf("Migrate: %d applied (%v), want migrations 1 to 3 on each shard", applied, err)
	}
	if raw, err := old.RawEvents(ctx, "old"); err != nil || len(raw) != len(cfg.Shards) {
		t.Errorf("the old store's events after migrating: %v (%v), want one per shard", raw, err)
	}
	later := fstest.MapFS{}
	for _, name := range []string{"00001_schema.sql", "00002_student_counts.sql", "00003_last_days.sql"} {
		text, err := os.ReadFile("migrations/" + name)
		if err != nil {
			t.Fatal(err)
		}
		later["migrations/"+name] = &fstest.MapFile{Data: text}
	}
	later["migrations/00004_audit.sql"] = &fstest.MapFile{Data: []byte(`-- a later change
CREATE TABLE IF NOT EXISTS {database}.audit (at Int64) ENGINE = MergeTree() ORDER BY at;
CREATE TABLE IF NOT EXISTS {database}.audit_copy (at Int64) ENGINE = MergeTree() ORDER BY at;
`)}
	for i := range 2 {
		applied, err := old.MigrateWith(ctx, quiet, later)
		if want := []int{len(cfg.Shards), 0}[i]; err != nil || applied != want {
			t.Fatalf("run %d: %d applied (%v), want %d", i+1, applied, err, want)
		}
	}
	for _, shard := range cfg.Shards {
		v, err := old.SchemaVersion(ctx, shard)
		if err != nil || v != 4 {
			t.Errorf("shard %s at version %d (%v), want 4", shard, v, err)
		}
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{shard}})
		if err != nil {
			t.Fatal(err)
		}
		var applied uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM "+cfg.Database+".schema_migrations WHERE version = 4").Scan(&applied); err != nil || applied != 1 {
			t.Errorf("shard %s: the later migration recorded %d times (%v), want once", shard, applied, err)
		}
		var tables uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name LIKE 'audit%'", cfg.Database).Scan(&tables); err != nil || tables != 2 {
			t.Errorf("shard %s: %d tables of the later migration (%v), want 2", shard, tables, err)
		}
		conn.Close()
	}
	// The adopted store works: a write and a read.
	f.group("north")
	if _, err := f.appendEvents([]analytics.Event{event("north", "e1", "s1", day, analytics.TutorMeMessages)}); err != nil {
		t.Fatal(err)
	}
	if r := f.dayRollup("north"); r.Counts[analytics.TutorMeMessages] != 1 {
		t.Errorf("after migrating: %+v, want 1 tutor_me message", r.Counts)
	}
}
