package sqlstore

import (
	"context"
	"testing"
)

// TestTempStoreIsPerTransaction: a transaction that asks for its
// temporary data in memory has it there, and the next transaction on the
// same connection is back on disk (SQLite's default), so that a large
// deletion never keeps its statement journal in memory after an append.
func TestTempStoreIsPerTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTestSQLite(t)
	tempStoreIn := func(temp tempStore) int {
		t.Helper()
		var got int
		if err := s.transactIn(ctx, "test", temp, func(tx *txn) error {
			return tx.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&got)
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for i, c := range []struct {
		temp tempStore
		want int // 0: the default, on disk; 2: memory
	}{{tempOnDisk, 0}, {tempInMemory, 2}, {tempOnDisk, 0}, {tempInMemory, 2}, {tempInMemory, 2}, {tempOnDisk, 0}} {
		if got := tempStoreIn(c.temp); got != c.want {
			t.Errorf("transaction %d, %s: temp_store %d, want %d", i, c.temp, got, c.want)
		}
	}
}
