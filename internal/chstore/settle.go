package chstore

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/writebehind"
)

// Settling a group before its reads: the log's events of the group are
// applied first, or, for a read that cannot wait for them, folded from
// the log (pending.go).

// Settle applies what the log holds of the group, so that the reads that
// follow see every event acknowledged before it was called. The context
// it returns carries the group's placement, read as Settle found the log
// empty of the group: the reads made with it start from there rather
// than each asking the directory again (a report makes several); or,
// for a read (analytics.ReadsOnly) when the log cannot be applied or holds
// more than an apply's worth, the group's pending view (pending.go). A
// read's Settle ends within the store's timeout: it waits for an apply for
// half of it at most, and folds the log in the rest.
func (s *Store) Settle(ctx context.Context, groupID string) (context.Context, error) {
	// A read may settle from the log instead (pending.go): at once when
	// the group's last apply failed, else when its apply fails now. When
	// it cannot (too many events wait, a write holds the group), it
	// settles as a writer does.
	bounded, cancel := s.bound(ctx)
	defer cancel()
	fromLog := analytics.IsReadsOnly(ctx)
	var viewErr error // why the failing group's view could not be made
	if fromLog {
		read, failing, err := s.settleFailing(ctx, bounded, groupID)
		if failing && err == nil {
			return read, nil
		}
		fromLog, viewErr = !failing, err
	}
	applyCtx := bounded
	if fromLog {
		half, cancel := halfOf(bounded)
		defer cancel()
		applyCtx = context.WithValue(half, fromLogKey{}, true)
	}
	logged, p, placed, err := s.dir.LoggedPlacement(bounded, groupID)
	for err == nil && logged {
		var res applied
		res, err = s.apply(applyCtx, []string{groupID}, writebehind.WaitApply, nil)
		switch err = cmp.Or(err, res.failed[groupID]); {
		case err == nil && res.logged < maxApplied:
			// Every event logged before the call is applied; events
			// logged since need not be.
			logged = false
			p, placed, err = s.dir.Placement(bounded, groupID)
		case err == nil && analytics.IsReadsOnly(ctx):
			// More waits: a read folds it (at most another apply's worth)
			// rather than wait for applies that a backlog may need.
			if read, err := s.settlePending(ctx, bounded, groupID, nil); err == nil {
				return read, nil
			}
			fallthrough
		case err == nil:
			logged, p, placed, err = s.dir.LoggedPlacement(bounded, groupID)
		}
	}
	switch {
	case err != nil && fromLog && bounded.Err() == nil:
		return s.settlePending(ctx, bounded, groupID, err)
	case err != nil:
		if viewErr != nil { // said, not classified: err decides the answer
			err = fmt.Errorf("%w; the pending view: %v", err, viewErr)
		}
		return ctx, s.wrap("Settle", err)
	case p.Intent != nil:
		return ctx, nil // each read settles the unfinished write
	}
	return context.WithValue(ctx, settledKey{}, settledPlacement{p: p, placed: placed, at: time.Now()}), nil
}

// settledPlacement is a group's placement as Settle read it, with no
// write unfinished, carried by the context Settle returns; or, when its
// log could not be applied, its pending view, which the reads read.
type settledPlacement struct {
	p       writebehind.Placement
	placed  bool
	at      time.Time
	pending *state
}

type settledKey struct{}

// placementToRead returns the placement the group's reads start from:
// the one Settle read, carried by ctx, or else the directory's. A move
// deletes the group's old copy readDrain after its placement names the new
// shard: the one Settle read is used for half that time, so that a long
// report's later reads look again.
func (s *Store) placementToRead(ctx context.Context, groupID string) (writebehind.Placement, bool, error) {
	if v, ok := ctx.Value(settledKey{}).(settledPlacement); ok && v.p.GroupID == groupID && time.Since(v.at) < readDrain/2 {
		return v.p, v.placed, nil
	}
	return s.dir.Placement(ctx, groupID)
}

// halfOf is ctx with half the time left to its deadline, if it has one.
func halfOf(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Until(deadline)/2)
}
