package httpapi

import (
	"context"
	"testing"
	"time"
)

// TestRefusalDeadline: a refusal's deadline is a point of the gate's grid
// a multiple of the quantum after the request came, the first that leaves
// the gate three ticks after the handlers are done, whatever they took
// short of that.
func TestRefusalDeadline(t *testing.T) {
	g := &gate{epoch: time.Unix(1000, 0)}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, c := range []struct {
		came, done, want float64 // ms after the epoch
	}{
		{0, 0.1, 5},         // a quantum after came, on the grid
		{0, 3.5, 5},         // work of any length up to the margin
		{0.2, 0.3, 5.5},     // the grid's first point a quantum after came
		{0.5, 0.6, 5.5},     // came on the grid
		{0, 3.6, 10},        // too little left: a quantum later
		{0, 9.9, 15},        // and again
		{12.34, 12.5, 17.5}, // any time of arrival
	} {
		at := g.deadline(g.epoch.Add(ms(c.came)), g.epoch.Add(ms(c.done)))
		if at != ms(c.want) {
			t.Errorf("came %.2f ms, done %.2f: deadline %v, want %.2f ms", c.came, c.done, at, c.want)
		}
		if at%refusalTick != 0 || at < ms(c.done)+3*refusalTick {
			t.Errorf("came %.2f ms, done %.2f: deadline %v off the grid or within three ticks", c.came, c.done, at)
		}
	}
}

// TestGateHolds: each answer held is released at its deadline, not
// before, however many are held at once; one whose request ends is
// released at once; and the gate's goroutine ends when none is held.
func TestGateHolds(t *testing.T) {
	g := newGate()
	done := make(chan time.Duration, 20)
	for i := range 20 {
		go func() {
			came := time.Now().Add(-time.Duration(i) * 200 * time.Microsecond)
			g.hold(context.Background(), came)
			done <- time.Since(came)
		}()
	}
	for range 20 {
		if took := <-done; took < refusalQuantum {
			t.Errorf("released %v after it came, before the quantum", took)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.hold(ctx, time.Now()) // returns: its request has ended
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		running, held := g.running, len(g.held)
		g.mu.Unlock()
		if !running && held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gate still runs with %d held, a second after the last deadline", held)
		}
	}
}
