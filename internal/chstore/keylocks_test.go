package chstore

import (
	"context"
	"testing"
	"time"
)

// TestKeyLocks: a key's lock is held by one at a time, other keys' are
// not held up by it, and a wait ends with its context.
func TestKeyLocks(t *testing.T) {
	var l keyLocks
	ctx := context.Background()
	unlockA, err := l.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.lock(ctx, "b")
	if err != nil {
		t.Fatalf("b waited for a: %v", err)
	}
	unlockB()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.lock(short, "a"); err == nil {
		t.Fatal("a taken twice")
	}
	got := make(chan error)
	go func() {
		unlock, err := l.lock(ctx, "a")
		if err == nil {
			unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a taken while held: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	unlockA()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if len(l.held) != 0 {
		t.Errorf("%d locks kept after their holders let go", len(l.held))
	}
}
