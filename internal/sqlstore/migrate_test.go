package sqlstore_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"sync"
	"testing"

	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/stores/storetest"
)

// TestReplicasMigrateTogether: replicas starting at once on an empty
// PostgreSQL database take turns; each migration is applied exactly once.
func TestReplicasMigrateTogether(t *testing.T) {
	dsn := storetest.NewPostgresDatabase(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			store, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
			if err != nil {
				errs[i] = err
				return
			}
			defer store.Close()
			_, errs[i] = store.Migrate(ctx, log)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var applied, distinct int
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied != distinct || applied == 0 {
		t.Errorf("%d migrations recorded for %d versions", applied, distinct)
	}
}

// TestMigrateIsIdempotent: a second start finds nothing to do, on both stores.
func TestMigrateIsIdempotent(t *testing.T) {
	storetest.EachSQL(t, func(t *testing.T, store *sqlstore.Store) {
		if applied, err := store.Migrate(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil || applied != 0 {
			t.Fatalf("a second Migrate applied %d migrations (%v), want none", applied, err)
		}
	})
}
