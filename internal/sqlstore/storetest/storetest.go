// Package storetest gives tests a fresh, migrated store of each kind the
// machine can run.
package storetest

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"groupanalytics/internal/sqlstore"
)

// Open returns a fresh, migrated store of the given dialect, closed and
// removed when the test ends.
func Open(t testing.TB, dialect string) *sqlstore.Store {
	t.Helper()
	var dsn string
	switch dialect {
	case "sqlite":
		dsn = filepath.Join(t.TempDir(), "test.db")
	default:
		t.Fatalf("storetest: unknown dialect %q", dialect)
	}
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("storetest: open %s: %v", dialect, err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatalf("storetest: migrate %s: %v", dialect, err)
	}
	return store
}

// Dialects returns the dialects to test against.
func Dialects(t testing.TB) []string {
	return []string{"sqlite"}
}

// Each runs fn as a subtest once per dialect, each with a fresh store.
func Each(t *testing.T, fn func(t *testing.T, store *sqlstore.Store)) {
	for _, d := range Dialects(t) {
		t.Run(d, func(t *testing.T) { fn(t, Open(t, d)) })
	}
}
