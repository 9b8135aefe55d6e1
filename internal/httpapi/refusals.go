package httpapi

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"
)

// A refused credential (a report key unknown, revoked or of a school
// without a valid plan, a session unknown or ended, a platform token
// unknown or revoked) is answered at a deadline that the request's arrival
// sets, never the work the refusal took, so that its time tells nothing of
// its cause (docs/decisions.md, R4). The handler marks the request
// refused; the outermost handler holds the answer, already written,
// counted and logged, until the deadline, and only then lets net/http
// send it.

// refusalQuantum: a refusal is answered at a multiple of it after the
// request came, the first that leaves the gate three ticks after the
// handlers are done.
const refusalQuantum = 5 * time.Millisecond

// refusalTick is the step of the gate's grid; a deadline is a point of it.
const refusalTick = 500 * time.Microsecond

// refusedKey holds, in a request's context, where a handler marks the
// request refused.
type refusedKey struct{}

// refuse marks the answer to r as a refusal, held until its deadline.
func refuse(r *http.Request) {
	if refused, ok := r.Context().Value(refusedKey{}).(*bool); ok {
		*refused = true
	}
}

// holdRefusals holds the answers that handlers marked refused until their
// deadlines. It is the outermost handler, so that all that is done for a
// refusal (the lookup, counting the failure, the log line, the body) is
// done by then; a small answer stays in net/http's buffer until the
// handler returns.
func (s *Server) holdRefusals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		came := time.Now()
		var refused bool
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), refusedKey{}, &refused)))
		if refused {
			s.refusals.hold(r.Context(), came)
		}
	})
}

// gate releases held answers at their deadlines. The runtime's timers
// cannot: here they fire up to a millisecond late, and late by what the
// work before them left of a millisecond (the poller sleeps whole
// milliseconds from when it starts to wait), so that a timer set for a
// deadline lets the work's time show through. The gate instead has one
// goroutine sleep precisely from point to point of a fixed grid while any
// answer is held, releasing at each point those due: the sleeps before a
// deadline are the grid's, whatever the work before them took.
type gate struct {
	epoch   time.Time
	mu      sync.Mutex
	held    []heldAnswer // by deadline
	running bool
}

type heldAnswer struct {
	at      time.Duration // since the epoch: a point of the grid
	release chan struct{}
}

func newGate() *gate { return &gate{epoch: time.Now()} }

// hold returns at the deadline of the answer to a request that came at
// came, or when ctx ends.
func (g *gate) hold(ctx context.Context, came time.Time) {
	at := g.deadline(came, time.Now())
	release := make(chan struct{})
	g.mu.Lock()
	i, _ := slices.BinarySearchFunc(g.held, at, func(h heldAnswer, at time.Duration) int { return cmp.Compare(h.at, at) })
	g.held = slices.Insert(g.held, i, heldAnswer{at, release})
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	select {
	case <-release:
	case <-ctx.Done():
	}
}

// deadline is the first point of the grid a multiple of refusalQuantum
// after came that is three ticks after now or later: the gate reaches the
// grid within one, and sleeps at least two whole before the deadline.
func (g *gate) deadline(came, now time.Time) time.Duration {
	at := nextPoint(came.Sub(g.epoch) + refusalQuantum - 1)
	for at < now.Sub(g.epoch)+3*refusalTick {
		at += refusalQuantum
	}
	return at
}

// nextPoint is the first point of the grid after d.
func nextPoint(d time.Duration) time.Duration {
	return (d/refusalTick + 1) * refusalTick
}

// run releases the answers due, and sleeps to the grid's next point,
// until none is held.
func (g *gate) run() {
	for {
		now := time.Since(g.epoch)
		g.mu.Lock()
		due := 0
		for ; due < len(g.held) && g.held[due].at <= now; due++ {
			close(g.held[due].release)
		}
		g.held = slices.Delete(g.held, 0, due)
		if len(g.held) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		sleepPrecisely(nextPoint(now) - now)
	}
}
