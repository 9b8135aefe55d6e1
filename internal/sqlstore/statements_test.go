package sqlstore

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// openTestSQLite opens a store on a new SQLite file, closed when the test
// ends; it is not migrated.
func openTestSQLite(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "store.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSQLiteStatementSizes: SQLite's multi-row statements take every row,
// in order, in chunks of powers of two, the largest first and none over
// maxChunkRows, so that the statements of any batch come in a few sizes.
func TestSQLiteStatementSizes(t *testing.T) {
	s := openTestSQLite(t)
	types := []string{"text", "integer"}
	for _, tc := range []struct {
		rows  int
		sizes []int
	}{
		{1, []int{1}},
		{2, []int{2}},
		{3, []int{2, 1}},
		{250, []int{128, 64, 32, 16, 8, 2}},
		{4096, []int{4096}},
		{10_000, []int{4096, 4096, 1024, 512, 256, 16}},
	} {
		rows := make([][]any, tc.rows)
		for i := range rows {
			rows[i] = []any{"g", i}
		}
		var sizes []int
		var got []any
		err := s.eachRowSource(types, rows, func(source string, args []any) error {
			sizes = append(sizes, len(args)/len(types))
			got = append(got, args...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sizes, tc.sizes) {
			t.Errorf("%d rows: statements of %v rows, want %v", tc.rows, sizes, tc.sizes)
		}
		if want := slices.Concat(rows...); !slices.Equal(got, want) {
			t.Errorf("%d rows: the arguments are not the rows in order", tc.rows)
		}
	}
}

// TestSQLiteStatementsWithoutRows: a SQLite statement without rows, run as
// a query on the caller's goroutine, does its work, reports its errors,
// and is not run once its context has ended.
func TestSQLiteStatementsWithoutRows(t *testing.T) {
	ctx := context.Background()
	s := openTestSQLite(t)
	if _, err := s.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	types := []string{"text", "integer"}
	counters := func(ctx context.Context, rows ...[]any) error {
		return s.transact(ctx, "test", func(tx *txn) error {
			return s.insertRows(ctx, tx, "usage_groups (group_id, next_ordinal)", types, rows, "", nil)
		})
	}
	if err := counters(ctx, []any{"a", 1}, []any{"b", 2}, []any{"c", 3}); err != nil {
		t.Fatal(err)
	}
	if err := counters(ctx, []any{"d", 4}, []any{"a", 5}); err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("a duplicate key: error %v, want the constraint's", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := counters(cancelled, []any{"e", 5}); err == nil {
		t.Error("a cancelled context: no error")
	}
	var got []string
	rows, err := s.read.QueryContext(ctx, "SELECT group_id FROM usage_groups ORDER BY group_id")
	if err != nil {
		t.Fatal(err)
	}
	if got, err = scanStrings(rows); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("stored %v, want %v (the failed transactions rolled back)", got, want)
	}
}
