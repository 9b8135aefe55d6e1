package chstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// A read falls back to what a replica holds only when every replica it
// tried lost ZooKeeper or could not be reached: never when one answered
// that it lacks a write its peers have.
func TestReadFallsBackOnlyWhenEveryReplicaLostZooKeeper(t *testing.T) {
	code := func(c int32) error { return fmt.Errorf("replica a: %w", &clickhouse.Exception{Code: c}) }
	down := fmt.Errorf("replica c: %w", context.DeadlineExceeded)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"one replica, read-only", &clickhouse.Exception{Code: codeReadonly}, true},
		{"all read-only", errors.Join(code(codeReadonly), code(codeReadonly)), true},
		{"no ZooKeeper and a session lost", errors.Join(code(codeNoZooKeeper), code(codeKeeperException)), true},
		{"read-only and one down", errors.Join(code(codeReadonly), down), true},
		{"all down", errors.Join(down, down), false},
		{"read-only and one lacking a write", errors.Join(code(codeReadonly), code(codeReplicaNotInQuorum)), false},
		{"read-only and one behind on deletions", errors.Join(code(codeReadonly), errBehind), false},
		{"another error", code(60), false},
	} {
		if got := lostZooKeeper(tc.err); got != tc.want {
			t.Errorf("%s: lostZooKeeper = %v, want %v", tc.name, got, tc.want)
		}
	}
}
