package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// TestLimiterMemoryIsBounded: a flood of names (addresses, guessed keys)
// never holds more than maxBuckets buckets, and looking without spending
// keeps none.
func TestLimiterMemoryIsBounded(t *testing.T) {
	l := newLimiter(Rate{N: 5, Per: time.Minute})
	now := time.Now()
	for i := range 3 * maxBuckets {
		l.take(fmt.Sprint("peek", i), now, false)
	}
	if len(l.buckets) != 0 {
		t.Errorf("%d buckets after looking only", len(l.buckets))
	}
	for i := range 3 * maxBuckets {
		if _, ok := l.take(fmt.Sprint("addr", i), now, true); !ok {
			t.Fatalf("a new name's first request refused")
		}
	}
	if len(l.buckets) > maxBuckets {
		t.Errorf("%d buckets, want at most %d", len(l.buckets), maxBuckets)
	}
}
