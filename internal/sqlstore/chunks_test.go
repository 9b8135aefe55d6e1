package sqlstore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestSQLiteStatementSizes: SQLite's multi-row statements take every row,
// in order, in chunks of powers of two, the largest first and none over
// maxChunkRows, so that the statements of any batch come in a few sizes.
func TestSQLiteStatementSizes(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "store.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
