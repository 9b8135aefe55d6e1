package chstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
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

// AppendEvents queues each group's events for the process's flushers,
// which log every call waiting at that moment, of every group, in one
// directory transaction (see logCalls and log.go), and waits for the
// flushes holding them; a group's events past directEvents are written to
// ClickHouse at once instead (writeAtOnce). A group whose shard does not
// answer (its ids cannot be told new) fails the call, but the other
// groups' events stay stored: sent again, they count once.
func (s *Store) AppendEvents(ctx context.Context, events []analytics.Event) (analytics.AppendResult, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	byGroup, large, small, queued := byCallSize(events)
	calls, err := s.queueCalls(ctx, byGroup, small, queued)
	if err != nil {
		return analytics.AppendResult{}, err
	}
	var res analytics.AppendResult
	var failed error
	tally := func(g string, d rollup.Done) {
		switch {
		case analytics.ErrorCode(d.Err) == analytics.NotFound:
			// Deleted since the caller checked it: the lock found no group.
			res.Gone = append(res.Gone, g)
		case d.Err != nil:
			failed = cmp.Or(failed, d.Err)
		default:
			res.Accepted += d.Result.Accepted
			res.Duplicates += d.Result.Duplicates
		}
	}
	for _, g := range large {
		n, err := s.writeAtOnce(ctx, g, byGroup[g])
		tally(g, rollup.Done{Result: analytics.AppendResult{Accepted: n, Duplicates: len(byGroup[g]) - n}, Err: err})
	}
	for i, g := range small {
		select {
		case d := <-calls[i].Done:
			tally(g, d)
		case <-ctx.Done():
			// Still queued, a call is dropped by the next flush.
			return analytics.AppendResult{}, s.wrap("AppendEvents", fmt.Errorf("waiting for the flush: %w", ctx.Err()))
		}
	}
	if failed != nil {
		return analytics.AppendResult{}, s.wrap("AppendEvents", failed)
	}
	return res, nil
}

// byCallSize sorts the events by group, and the groups by how they are
// written: those of directEvents events or more at once (large), the
// others through the log (small), queued of them in all.
func byCallSize(events []analytics.Event) (byGroup map[string][]analytics.Event, large, small []string, queued int) {
	byGroup = map[string][]analytics.Event{}
	var groups []string
	for _, e := range events {
		if _, ok := byGroup[e.GroupID]; !ok {
			groups = append(groups, e.GroupID)
		}
		byGroup[e.GroupID] = append(byGroup[e.GroupID], e)
	}
	slices.Sort(groups)
	for _, g := range groups {
		if len(byGroup[g]) >= directEvents {
			large = append(large, g)
		} else {
			small = append(small, g)
			queued += len(byGroup[g])
		}
	}
	return byGroup, large, small, queued
}

// queueCalls queues a call of each small group's events for the flushers,
// and wakes one; it refuses them all at once when the store is closed, the
// queue is full or the log is past its bound.
func (s *Store) queueCalls(ctx context.Context, byGroup map[string][]analytics.Event, small []string, queued int) ([]*rollup.Call, error) {
	calls := make([]*rollup.Call, len(small))
	s.pendingMu.Lock()
	switch {
	case s.closed:
		s.pendingMu.Unlock()
		return nil, s.wrap("AppendEvents", errClosed)
	case queued > 0 && s.queued+queued > maxQueuedEvents && s.queued > 0:
		// Behind: refused at once rather than after the store timeout,
		// and the queue's memory stays bounded.
		s.pendingMu.Unlock()
		return nil, s.wrap("AppendEvents", fmt.Errorf("%d events wait for a flush: %w", s.queued, analytics.ErrUnavailable))
	case queued > 0 && s.logDepth.Load() > int64(maxLogged):
		s.pendingMu.Unlock()
		return nil, s.wrap("AppendEvents", errLogFull(s.logDepth.Load()))
	}
	s.queued += queued
	for i, g := range small {
		calls[i] = rollup.NewCall(ctx, byGroup[g])
		s.pending[g] = append(s.pending[g], calls[i])
	}
	s.pendingMu.Unlock()
	if len(small) > 0 {
		s.startFlusher.Do(func() {
			for range flushers {
				go s.flushLoop()
			}
		})
		s.wakeFlusher()
	}
	return calls, nil
}

// maxQueuedEvents bounds the events waiting for a flush or in one: past
// it, a call is refused at once (a 503 with Retry-After), not queued.
var maxQueuedEvents = 4 * rollup.MaxMergedEvents

// errClosed is the error of a call made after Close.
var errClosed = fmt.Errorf("store closed: %w", analytics.ErrUnavailable)

// QueueDepth is how many AppendEvents calls of the process wait for a
// flush.
func (s *Store) QueueDepth() int {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	n := 0
	for _, calls := range s.pending {
		n += len(calls)
	}
	return n
}

// flushers is how many flushes a process runs at once, over groups apart:
// while one waits for the directory or a shard, the other logs.
const flushers = 2

// flushLoop is one of the process's flushers: woken by AppendEvents, it
// flushes until nothing waits that another flush does not hold. When the
// store closes, it fails what still waits.
func (s *Store) flushLoop() {
	for range s.wake {
		for {
			batch := s.takePending()
			if len(batch) == 0 {
				break
			}
			wrote := s.logCalls(batch)
			s.pendingMu.Lock()
			for g := range batch {
				delete(s.flushing, g)
			}
			s.pendingMu.Unlock()
			if !wrote {
				// Every group of the flush was locked by a write (an
				// erasure, a move): let it work.
				time.Sleep(10 * time.Millisecond)
			}
			// The groups it held may have calls for the other flusher.
			s.wakeFlusher()
		}
	}
	for _, calls := range s.takePending() {
		s.answer(calls, func(int, *rollup.Call) rollup.Done { return rollup.Done{Err: errClosed} })
	}
}

// answer tells each of calls what became of it, which frees its place in
// the queue's bound.
func (s *Store) answer(calls []*rollup.Call, done func(i int, c *rollup.Call) rollup.Done) {
	events := 0
	for i, c := range calls {
		c.Done <- done(i, c)
		events += len(c.Events)
	}
	s.pendingMu.Lock()
	s.queued -= events
	s.pendingMu.Unlock()
}

// wakeFlusher wakes a flusher, unless one is awake already (it takes the
// calls waiting with its next flush) or the store is closed.
func (s *Store) wakeFlusher() {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// takePending takes the waiting calls of every group that no other flush
// holds, up to rollup.MaxMergedEvents events in all (and at least one
// call), dropping those whose callers are gone; the flush holds their
// groups until it is done.
func (s *Store) takePending() map[string][]*rollup.Call {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	batch := map[string][]*rollup.Call{}
	events := 0
	for _, g := range slices.Sorted(maps.Keys(s.pending)) {
		if s.flushing[g] {
			continue
		}
		queue := s.pending[g]
		n := 0
		for n < len(queue) && (events == 0 || events+len(queue[n].Events) <= rollup.MaxMergedEvents) {
			events += len(queue[n].Events)
			n++
		}
		if n == len(queue) {
			delete(s.pending, g)
		} else {
			s.pending[g] = queue[n:]
		}
		for _, c := range queue[:n] {
			if c.Ctx.Err() != nil {
				s.queued -= len(c.Events) // dropped
			}
		}
		if calls := slices.DeleteFunc(queue[:n:n], func(c *rollup.Call) bool { return c.Ctx.Err() != nil }); len(calls) > 0 {
			batch[g], s.flushing[g] = calls, true
		}
		if events >= rollup.MaxMergedEvents {
			break
		}
	}
	return batch
}

// requeue puts a group's calls back at the head of its queue.
func (s *Store) requeue(groupID string, calls []*rollup.Call) {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	s.pending[groupID] = append(calls, s.pending[groupID]...)
}

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
	f := &logFlush{batch: batch, locked: map[string]bool{}, gone: map[string]bool{}, failed: map[string]error{},
		accepted: map[*rollup.Call]int{}}
	err := s.dir.WithGroupsLogging(ctx, slices.Sorted(maps.Keys(batch)), func(tx writebehind.LogLock) error {
		return s.logNew(ctx, tx, f)
	})
	s.answerFlush(f, err)
	if err == nil && f.logged > 0 {
		s.loggedAny.Store(true)
		if s.logDepth.Add(int64(f.logged)); s.sinceApply.Add(int64(f.logged)) >= applyAfter {
			s.wakeApplier()
		}
	}
	return len(f.locked) > 0 || len(f.gone) > 0
}

// logFlush is what a flush of calls to the log learns of them.
type logFlush struct {
	batch    map[string][]*rollup.Call
	ran      bool // the transaction began: the groups not locked or gone are busy
	locked   map[string]bool
	gone     map[string]bool
	failed   map[string]error // a group whose shard did not answer
	accepted map[*rollup.Call]int
	logged   int
}

// callKey is an event id of a group.
type callKey struct{ group, id string }

// logNew, in the flush's directory transaction, adds the first copy of
// each id of the locked groups' calls to the log, takes out again those
// the groups' shards hold, and counts what each call added.
func (s *Store) logNew(ctx context.Context, tx writebehind.LogLock, f *logFlush) error {
	f.ran = true
	for _, g := range tx.Gone() {
		f.gone[g] = true
	}
	first := map[callKey]*rollup.Call{}
	var events []analytics.Event
	calls := 0
	for _, g := range tx.Locked() {
		f.locked[g] = true
		calls += len(f.batch[g])
		for _, c := range f.batch[g] {
			for _, e := range c.Events {
				if k := (callKey{g, e.ID}); first[k] == nil {
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
	stored, err := s.storedOnShards(ctx, tx, added, f.failed)
	if err != nil {
		return err
	}
	unlog := map[string][]string{}
	for g, ids := range added {
		for id := range ids {
			if f.failed[g] != nil || stored[g][id] {
				unlog[g] = append(unlog[g], id)
			}
		}
	}
	if err := tx.Unlog(ctx, unlog); err != nil {
		return err
	}
	for k, c := range first {
		if added[k.group][k.id] && !stored[k.group][k.id] && f.failed[k.group] == nil {
			f.accepted[c]++
			f.logged++
		}
	}
	return nil
}

// answerFlush answers each call of the flush, err being its transaction's
// end; the calls of a group a write holds are put back for the next flush.
func (s *Store) answerFlush(f *logFlush, err error) {
	for g, calls := range f.batch {
		var fail error
		switch {
		case !f.ran:
			fail = err
		case f.locked[g]:
			fail = cmp.Or(err, f.failed[g])
		case f.gone[g]:
			fail = cmp.Or(err, analytics.Errorf(analytics.NotFound, "Group %q not found", g))
		default: // held by a write: the next flush tries again
			s.requeue(g, calls)
			continue
		}
		s.answer(calls, func(_ int, c *rollup.Call) rollup.Done {
			if fail != nil {
				return rollup.Done{Err: fail}
			}
			return rollup.Done{Result: analytics.AppendResult{Accepted: f.accepted[c], Duplicates: len(c.Events) - f.accepted[c]}}
		})
	}
}

// storedOnShards returns which of the ids added, by group, the groups'
// shards hold already: one lookup per shard, at once. A group whose shard
// does not answer has its error in failed.
func (s *Store) storedOnShards(ctx context.Context, tx writebehind.LogLock, added map[string]map[string]bool, failed map[string]error) (map[string]map[string]bool, error) {
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
