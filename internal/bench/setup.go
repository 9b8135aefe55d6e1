package bench

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

// sqliteFiles are the suffixes of a SQLite store's files: the database,
// its write-ahead log and shared memory, and the access journal.
var sqliteFiles = []string{"", "-wal", "-shm", "-access"}

// prepareStore makes an empty store: a fresh SQLite file, or a fresh
// database on the PostgreSQL server. cleanup removes it unless Keep.
func prepareStore(ctx context.Context, cfg Config) (string, func(), error) {
	if stores.IsPostgres(cfg.DB) {
		admin, err := sql.Open("pgx", cfg.DB)
		if err != nil {
			return "", nil, err
		}
		name := fmt.Sprintf("groupanalytics_bench_%d", time.Now().Unix())
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
			admin.Close()
			return "", nil, fmt.Errorf("create database %s: %w", name, err)
		}
		u, _ := url.Parse(cfg.DB)
		u.Path = "/" + name
		return u.String(), func() {
			if !cfg.Keep {
				admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			}
			admin.Close()
		}, nil
	}
	path := cfg.DB
	dir := ""
	if path == "" {
		var err error
		if dir, err = os.MkdirTemp("", "groupanalytics-bench-"); err != nil {
			return "", nil, err
		}
		path = filepath.Join(dir, "bench.db")
	}
	for _, suffix := range sqliteFiles {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			return "", nil, err
		}
	}
	return path, func() {
		if cfg.Keep {
			return
		}
		for _, suffix := range sqliteFiles {
			os.Remove(path + suffix)
		}
		if dir != "" {
			os.Remove(dir)
		}
	}, nil
}

// usageDatabase names a database of the run's own on the shards of
// cfg.Usage (none when cfg.Usage is empty): the URL's database name is
// not used.
func usageDatabase(cfg Config) (string, error) {
	if cfg.Usage == "" {
		return "", nil
	}
	if _, _, err := stores.ParseUsage(cfg.Usage); err != nil {
		return "", fmt.Errorf("--usage: %w", err)
	}
	servers, _, _ := strings.Cut(strings.TrimPrefix(cfg.Usage, "clickhouse://"), "/")
	return fmt.Sprintf("clickhouse://%s/groupanalytics_bench_%d", servers, time.Now().Unix()), nil
}

type benchKeys struct{ main, other, empty, token, district string }

// of is the key that asks sc's reports: the other group's when sc names
// it, else the main group's.
func (k benchKeys) of(sc scenario) string {
	if sc.group != "" {
		return k.other
	}
	return k.main
}

// setUp creates the groups (in UTC, so that the baseline's SQL cuts days
// as the service does), their plans, students and keys, an empty group for
// the floor, a group for ingestion, and a platform token.
func setUp(ctx context.Context, st *stores.Stores, s Scale) (benchKeys, error) {
	p := platform.New(st.Directory, st.Usage)
	var keys benchKeys
	groups := append(s.groups(), group{"bench-empty", 0}, group{"bench-ingest", 1000})
	for _, g := range groups {
		if _, err := p.CreateGroup(ctx, g.id, g.id, "UTC"); err != nil {
			return keys, err
		}
		if _, err := p.AddPlan(ctx, g.id, "2000-01-01", "", 0); err != nil {
			return keys, err
		}
		updates := make([]analytics.StudentUpdate, g.students)
		for i := range updates {
			updates[i] = analytics.StudentUpdate{ID: studentID(i), Name: fmt.Sprintf("Student %06d", (i*7919)%max(g.students, 1))}
		}
		if err := st.Directory.SaveStudents(ctx, g.id, updates); err != nil {
			return keys, err
		}
		if g.id == "bench-main" && g.students <= platform.MaxClassMembers {
			all := analytics.Class{GroupID: g.id, ID: benchClass, Name: "every student"}
			for _, u := range updates {
				all.Members = append(all.Members, u.ID)
			}
			if _, err := p.CreateClass(ctx, all); err != nil {
				return keys, err
			}
		}
	}
	var err error
	if _, keys.main, err = p.CreateKey(ctx, "bench-main", "bench"); err != nil {
		return keys, err
	}
	if s.OtherGroups > 0 {
		if _, keys.other, err = p.CreateKey(ctx, "bench-other-1", "bench"); err != nil {
			return keys, err
		}
	}
	if _, keys.empty, err = p.CreateKey(ctx, "bench-empty", "bench"); err != nil {
		return keys, err
	}
	_, keys.token, err = p.CreateToken(ctx, "bench")
	return keys, err
}

// benchClass is the main group's class of every student, whose reports
// must equal the group's.
const benchClass = "bench-all"

// bulkBatch is how many events the bulk loader stores per transaction.
const bulkBatch = 100_000

func bulkLoad(ctx context.Context, store analytics.UsageStore, cfg Config, now time.Time, res *Result) error {
	start := time.Now()
	for i, g := range cfg.Scale.groups() {
		n, err := cfg.Scale.generate(g, now, bulkBatch, func(batch []analytics.Event) error {
			appended, err := store.AppendEvents(ctx, batch)
			if err == nil && appended.Accepted != len(batch) {
				err = fmt.Errorf("bulk load: %d of %d events accepted", appended.Accepted, len(batch))
			}
			return err
		})
		if err != nil {
			return err
		}
		// Until the events are where reports read (ClickHouse, behind its
		// write-behind log), they are not loaded.
		if _, err := store.Settle(ctx, g.id); err != nil {
			return err
		}
		if i == 0 {
			res.MainGroupEvents = n
		}
		res.Events += n
	}
	res.BulkLoadSeconds = time.Since(start).Seconds()
	res.BulkEventsPerSec = float64(res.Events) / res.BulkLoadSeconds
	return nil
}
