package chstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// The write-behind log. AppendEvents acknowledges a call once its new
// events are in the directory's log (PostgreSQL, committed with group
// commit: one transaction per flush of every waiting call); the applier
// writes the log to ClickHouse behind it, in large batches of every group
// that has some (one INSERT per table per shard), and takes what it wrote
// out of the log with the same directory transaction. Reads see what the
// log holds of a group through Settle, which applies it first.
//
// Applying is idempotent: a batch that dies after its INSERTs stays in the
// log, and applied again, its events are found on the shard (a duplicate
// is never written twice) and its intent repairs the rollups.

// applyEvery is how long a logged event waits at most for the applier,
// when nothing reads its group first.
var applyEvery = time.Second

const (
	// applyAfter logged events wake the applier before its time.
	applyAfter = 20_000
	// maxApplied bounds the events of one apply.
	maxApplied = rollup.MaxMergedEvents
	// maxAppliedGroups bounds the groups of one apply.
	maxAppliedGroups = 2_000
)

// maxLogged is the log's depth past which AppendEvents refuses calls (a
// 503 with Retry-After) until the applier catches up: ClickHouse is
// behind, and the log must not grow without end.
var maxLogged = 2_000_000

// logCalls writes the calls of every group of batch to the log, in one
// directory transaction holding the groups' log locks: the first copy of
// each id, in the order of the calls, is added unless the log holds it
// already, and of those added, the ones the group's shard holds (one
// lookup per shard, at once) are taken out again. The commit makes the
// rest durable; each call is told how many of its events it added. The
// groups that a write holds (an erasure, a move) are put back for the
// next flush; it reports whether any group was logged.
func (s *Store) logCalls(batch map[string][]*rollup.Call) bool {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(s.timeout, time.Minute))
	defer cancel()
	type key struct{ group, id string }
	var (
		ran      bool // the transaction began: the groups not locked or gone are busy
		locked   = map[string]bool{}
		gone     = map[string]bool{}
		failed   = map[string]error{} // a group whose shard did not answer
		accepted = map[*rollup.Call]int{}
		logged   int
	)
	err := s.dir.WithGroupsLogging(ctx, slices.Sorted(maps.Keys(batch)), func(tx LogLock) error {
		ran = true
		for _, g := range tx.Gone() {
			gone[g] = true
		}
		first := map[key]*rollup.Call{}
		var events []analytics.Event
		calls := 0
		for _, g := range tx.Locked() {
			locked[g] = true
			calls += len(batch[g])
			for _, c := range batch[g] {
				for _, e := range c.Events {
					if k := (key{g, e.ID}); first[k] == nil {
						first[k] = c
						events = append(events, e)
					}
				}
			}
		}
		if s.observer != nil {
			s.observer.Merged(calls, len(events))
		}
		added, err := tx.Log(ctx, events, time.Now())
		if err != nil {
			return err
		}
		stored, err := s.storedOnShards(ctx, tx, added, failed)
		if err != nil {
			return err
		}
		unlog := map[string][]string{}
		for g, ids := range added {
			for id := range ids {
				if failed[g] != nil || stored[g][id] {
					unlog[g] = append(unlog[g], id)
				}
			}
		}
		if err := tx.Unlog(ctx, unlog); err != nil {
			return err
		}
		for k, c := range first {
			if added[k.group][k.id] && !stored[k.group][k.id] && failed[k.group] == nil {
				accepted[c]++
				logged++
			}
		}
		return nil
	})
	for g, calls := range batch {
		var fail error
		switch {
		case !ran:
			fail = err
		case locked[g]:
			fail = cmp.Or(err, failed[g])
		case gone[g]:
			fail = cmp.Or(err, analytics.Errorf(analytics.NotFound, "Group %q not found", g))
		default: // held by a write: the next flush tries again
			s.requeue(g, calls)
			continue
		}
		s.answer(calls, func(_ int, c *rollup.Call) rollup.Done {
			if fail != nil {
				return rollup.Done{Err: fail}
			}
			return rollup.Done{Result: analytics.AppendResult{Accepted: accepted[c], Duplicates: len(c.Events) - accepted[c]}}
		})
	}
	if err == nil && logged > 0 {
		s.loggedAny.Store(true)
		if s.logDepth.Add(int64(logged)); s.sinceApply.Add(int64(logged)) >= applyAfter {
			s.wakeApplier()
		}
	}
	return len(locked) > 0 || len(gone) > 0
}

// storedOnShards returns which of the ids added, by group, the groups'
// shards hold already: one lookup per shard, at once. A group whose shard
// does not answer has its error in failed.
func (s *Store) storedOnShards(ctx context.Context, tx LogLock, added map[string]map[string]bool, failed map[string]error) (map[string]map[string]bool, error) {
	placements, err := tx.Placements(ctx)
	if err != nil {
		return nil, err
	}
	byShard := map[*shard]map[string][]string{}
	for g, ids := range added {
		p, ok := placements[g]
		if !ok {
			continue // never applied: its shard holds none of its events
		}
		sh, err := s.shardOf(p)
		if err != nil {
			failed[g] = err
			continue
		}
		list := slices.Collect(maps.Keys(ids))
		if maybe, known := s.ids.maybeStored(p, list); known {
			if list = maybe; len(list) == 0 {
				continue // none can be on the shard
			}
		}
		if byShard[sh] == nil {
			byShard[sh] = map[string][]string{}
		}
		byShard[sh][g] = list
	}
	stored := map[string]map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for sh, ids := range byShard {
		wg.Go(func() {
			found, err := s.storedIDs(ctx, sh, ids)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				for g := range ids {
					failed[g] = err
				}
				return
			}
			maps.Copy(stored, found)
		})
	}
	wg.Wait()
	return stored, nil
}

// Start starts the applier of the write-behind log, once: it writes what
// the log holds (of this process and of others) to ClickHouse behind the
// acknowledgements while the process leads the appliers. Beside it, the
// process warms the states of the groups written most (warm.go).
func (s *Store) Start() {
	s.applierOnce.Do(func() {
		s.applierDone, s.warmDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(s.warmDone)
			s.warm(s.quit)
		}()
		go s.applyLoop()
	})
}

// wakeApplier wakes the applier before its time.
func (s *Store) wakeApplier() {
	select {
	case s.applyWake <- struct{}{}:
	default:
	}
}

// applyLoop applies the log every applyEvery, and sooner when applyAfter
// events have been logged since, until the store closes, while this
// process leads the appliers; otherwise it reads the log's figures.
func (s *Store) applyLoop() {
	defer close(s.applierDone)
	tick := time.NewTicker(applyEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.quit.Done():
			return
		case <-tick.C:
		case <-s.applyWake:
		}
		ctx, cancel := context.WithTimeout(s.quit, cmp.Or(s.timeout, time.Minute))
		// One process applies in the background: were several to take
		// turns, each would find the state it keeps of a group stale and
		// read the group's rows from its shard again, every time.
		s.sinceApply.Store(0)
		switch lead, err := s.dir.LeadApplier(ctx); {
		case err != nil:
			s.log.Warn("write-behind log: no leader", "error", err)
		case lead:
			s.applyLogged(ctx)
		default:
			s.readLogStats(ctx)
		}
		cancel()
	}
}

// applyLogged applies the log of every group that has events in it, in
// batches, then reads the log's figures again. A group whose apply failed
// (its shard is down) waits applyEvery before the next try, so that it
// does not hold up the others.
func (s *Store) applyLogged(ctx context.Context) {
	groups, err := s.dir.LoggedGroups(ctx, 10*maxAppliedGroups)
	if err != nil {
		s.log.Warn("write-behind log unread", "error", err)
		return
	}
	now := time.Now()
	groups = slices.DeleteFunc(groups, func(g string) bool { return now.Before(s.retryAt[g]) })
	maps.DeleteFunc(s.retryAt, func(_ string, at time.Time) bool { return !now.Before(at) })
	for len(groups) > 0 && ctx.Err() == nil {
		batch := groups[:min(len(groups), maxAppliedGroups)]
		groups = groups[len(batch):]
		res, err := s.apply(ctx, batch, SkipHeld, nil)
		if err != nil {
			s.log.Warn("write-behind log not applied", "groups", len(batch), "error", err)
			break
		}
		for g, err := range res.failed {
			s.retryAt[g] = now.Add(applyEvery)
			s.log.Warn("write-behind log not applied", "group", g, "error", err)
		}
		if res.logged >= maxApplied {
			groups = append(batch, groups...) // more waits: again
		}
	}
	s.readLogStats(ctx)
}

// readLogStats reads the log's figures: its depth, which bounds what it
// takes (backpressure), and the age of its oldest event.
func (s *Store) readLogStats(ctx context.Context) {
	if events, oldest, err := s.dir.LogStats(ctx); err == nil {
		var ms int64 // none waits
		if !oldest.IsZero() {
			ms = oldest.UnixMilli()
		}
		s.logDepth.Store(int64(events))
		s.logOldest.Store(ms)
	}
}

// applied is what an apply did.
type applied struct {
	logged int              // events of the log applied
	failed map[string]error // the groups whose write failed, and why
	gone   []string         // the groups asked for that do not exist
	// extraNew counts, by group, the events of extra that were new.
	extraNew map[string]int
}

// apply writes what the log holds of the groups, and then the events of
// extra (a large call written at once: see writeAtOnce), to ClickHouse,
// under the groups' locks taken as mode says, and takes what it read out
// of the log. It returns an error only when the directory's transaction
// failed.
func (s *Store) apply(ctx context.Context, groups []string, mode LockMode, extra map[string][]analytics.Event) (applied, error) {
	writes := map[string]*groupWrite{}
	res := applied{failed: map[string]error{}, extraNew: map[string]int{}}
	limit := maxApplied
	if mode == WaitWrite {
		limit = math.MaxInt32 // extra's ids must be told from every logged one
	}
	err := s.dir.WithGroupsLock(ctx, groups, mode, func(tx GroupsLock) error {
		res.gone = tx.Gone()
		logged, err := tx.Logged(ctx, limit)
		if err != nil {
			return err
		}
		for _, lock := range tx.Locked() {
			g := lock.GroupID()
			if len(logged[g]) > 0 || len(extra[g]) > 0 {
				writes[g] = &groupWrite{tx: lock, events: append(logged[g], extra[g]...), extra: extra[g]}
			}
		}
		if len(writes) == 0 {
			return nil
		}
		if err := s.writeGroups(ctx, tx, writes, limit); err != nil {
			return err
		}
		var done []string
		for g, w := range writes {
			if w.err == nil {
				done = append(done, g)
				res.logged += len(w.events) - len(w.extra)
			}
		}
		return tx.Unlog(ctx, done)
	})
	if err != nil {
		return applied{}, err
	}
	for g, w := range writes {
		switch {
		case w.err != nil:
			res.failed[g] = w.err
		case len(w.rows.events) > 0:
			s.states.put(g, w.st.after(w.rows))
			s.ids.written(w.p, w.rows.seq, w.ids)
		default: // every id found stored: the group's number stays
			s.ids.written(w.p, w.p.Seq, w.ids)
		}
		if w.err == nil && len(w.extra) > 0 {
			res.extraNew[g] = w.extraNew
		}
	}
	if res.logged > 0 {
		s.logDepth.Add(-int64(res.logged))
	}
	return res, nil
}

// directEvents is the size from which a group's events in one call are
// written to ClickHouse at once (writeAtOnce) rather than logged.
var directEvents = 10_000

// writeAtOnce writes a large call's events of a group to ClickHouse at
// once, after what the log holds of the group, under its write lock (which
// holds the log's writers back, so that the answer tells new ids from
// duplicates exactly): a bulk load pays for one write, not for the log's
// rows too. It returns how many were new.
func (s *Store) writeAtOnce(ctx context.Context, groupID string, events []analytics.Event) (int, error) {
	res, err := s.apply(ctx, []string{groupID}, WaitWrite, map[string][]analytics.Event{groupID: events})
	switch {
	case err != nil:
		return 0, err
	case len(res.gone) > 0:
		return 0, analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
	case res.failed[groupID] != nil:
		return 0, res.failed[groupID]
	}
	return res.extraNew[groupID], nil
}

// Settle applies what the log holds of the group, so that the reads that
// follow see every event acknowledged before it was called. The context
// it returns carries the group's placement, read as Settle found the log
// empty of the group: the reads made with it start from there rather
// than each asking the directory again (a report makes several).
func (s *Store) Settle(ctx context.Context, groupID string) (context.Context, error) {
	bounded, cancel := s.bound(ctx)
	defer cancel()
	logged, p, placed, err := s.dir.LoggedPlacement(bounded, groupID)
	for err == nil && logged {
		var res applied
		res, err = s.apply(bounded, []string{groupID}, WaitApply, nil)
		switch err = cmp.Or(err, res.failed[groupID]); {
		case err == nil && res.logged < maxApplied:
			// Every event logged before the call is applied; events
			// logged since need not be.
			logged = false
			p, placed, err = s.dir.Placement(bounded, groupID)
		case err == nil:
			logged, p, placed, err = s.dir.LoggedPlacement(bounded, groupID)
		}
	}
	switch {
	case err != nil:
		return ctx, s.wrap("Settle", err)
	case p.Intent != nil:
		return ctx, nil // each read settles the unfinished write
	}
	return context.WithValue(ctx, settledKey{}, settledPlacement{p, placed, time.Now()}), nil
}

// settledPlacement is a group's placement as Settle read it, with no
// write unfinished, carried by the context Settle returns.
type settledPlacement struct {
	p      Placement
	placed bool
	at     time.Time
}

type settledKey struct{}

// placementToRead returns the placement the group's reads start from:
// the one Settle read, carried by ctx, or else the directory's. A move
// deletes the group's old copy readDrain after its placement names the new
// shard: the one Settle read is used for half that time, so that a long
// report's later reads look again.
func (s *Store) placementToRead(ctx context.Context, groupID string) (Placement, bool, error) {
	if v, ok := ctx.Value(settledKey{}).(settledPlacement); ok && v.p.GroupID == groupID && time.Since(v.at) < readDrain/2 {
		return v.p, v.placed, nil
	}
	return s.dir.Placement(ctx, groupID)
}

// LogStats returns how many events the write-behind log holds and how long
// the oldest has waited, as the applier last read them.
func (s *Store) LogStats() (events int, oldestAge time.Duration) {
	events = int(max(s.logDepth.Load(), 0))
	if ms := s.logOldest.Load(); ms > 0 && events > 0 {
		oldestAge = time.Since(time.UnixMilli(ms))
	}
	return events, oldestAge
}

// errLogFull is why AppendEvents refuses while the log is too deep.
func errLogFull(depth int64) error {
	return fmt.Errorf("%d events wait for ClickHouse in the write-behind log: %w", depth, analytics.ErrUnavailable)
}
