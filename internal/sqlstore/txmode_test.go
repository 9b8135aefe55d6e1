package sqlstore

import (
	"context"
	"testing"
)

// TestTxModeIsPerTransaction: a transaction runs as its mode says, and
// the next on the same connection as its own says: a large deletion never
// keeps its statement journal in memory after an append. Every commit is
// synced.
func TestTxModeIsPerTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTestSQLite(t)
	type pragmas struct{ temp, synchronous int } // temp_store 0: default, on disk; 2: memory. synchronous 2: FULL
	pragmasIn := func(mode txMode) pragmas {
		t.Helper()
		var got pragmas
		if err := s.transactIn(ctx, "test", mode, func(tx *txn) error {
			if err := tx.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&got.temp); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got.synchronous)
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for i, c := range []struct {
		mode txMode
		want pragmas
	}{{txDefault, pragmas{0, 2}}, {txAppend, pragmas{2, 2}}, {txDefault, pragmas{0, 2}}, {txAppend, pragmas{2, 2}}} {
		if got := pragmasIn(c.mode); got != c.want {
			t.Errorf("transaction %d, %+v: %+v, want %+v", i, c.mode, got, c.want)
		}
	}
}
