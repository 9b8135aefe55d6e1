package chstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"golang.org/x/sync/errgroup"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// intent is what a write of a group's usage means to do, recorded in the
// directory before it writes a row: should it die half way, the next
// write (or read) of the group repairs what it left from the raw events.
type intent struct {
	// Months are the first days of the months whose rollups it changes.
	Months []analytics.Day `json:"months,omitempty"`
	// Students are the enrolments and names of its new events.
	Students []analytics.StudentUpdate `json:"students,omitempty"`
	// Erase is the student it erases.
	Erase string `json:"erase,omitempty"`
	// Expire is the cut of a retention run: the usage before it goes.
	Expire *expiry `json:"expire,omitempty"`
	// All: it recomputes every rollup of the group (a rebuild).
	All bool `json:"all,omitempty"`
	// Move: it moves the group to another shard.
	Move *move `json:"move,omitempty"`
	// Whole is the write number as of which the group's rows are whole
	// while the intent is unfinished: its write's rows are newer, and so
	// are those of every attempt to repair it, each numbered anew.
	Whole *int64 `json:"whole,omitempty"`
}

// wholeAsOf returns the write number as of which the rows of the group
// placed as p are whole, p as read, not settled: p's own number when no
// write is unfinished; otherwise the number its intent recorded, or, for an
// intent recorded before intents did, the number before the intent's
// (then exact unless a repair of it was attempted).
func wholeAsOf(p Placement) int64 {
	var in intent
	switch {
	case p.Intent == nil:
		return p.Seq
	case json.Unmarshal(p.Intent, &in) == nil && in.Whole != nil:
		return *in.Whole
	default:
		return p.Seq - 1
	}
}

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
	byGroup := map[string][]analytics.Event{}
	var groups []string
	for _, e := range events {
		if _, ok := byGroup[e.GroupID]; !ok {
			groups = append(groups, e.GroupID)
		}
		byGroup[e.GroupID] = append(byGroup[e.GroupID], e)
	}
	slices.Sort(groups)
	var large, small []string
	queued := 0
	for _, g := range groups {
		if len(byGroup[g]) >= directEvents {
			large = append(large, g)
		} else {
			small = append(small, g)
			queued += len(byGroup[g])
		}
	}
	calls := make([]*rollup.Call, len(small))
	s.pendingMu.Lock()
	switch {
	case s.closed:
		s.pendingMu.Unlock()
		return analytics.AppendResult{}, s.wrap("AppendEvents", errClosed)
	case queued > 0 && s.queued+queued > maxQueuedEvents && s.queued > 0:
		// Behind: refused at once rather than after the store timeout,
		// and the queue's memory stays bounded.
		s.pendingMu.Unlock()
		return analytics.AppendResult{}, s.wrap("AppendEvents", fmt.Errorf("%d events wait for a flush: %w", s.queued, analytics.ErrUnavailable))
	case queued > 0 && s.logDepth.Load() > int64(maxLogged):
		s.pendingMu.Unlock()
		return analytics.AppendResult{}, s.wrap("AppendEvents", errLogFull(s.logDepth.Load()))
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

// groupWrite is one group's part of an apply.
type groupWrite struct {
	tx       GroupLock
	events   []analytics.Event // from the log, oldest first, then extra
	extra    []analytics.Event // a large call's, written at once
	extraNew int               // of extra, the events new to the shard and the log
	loc      *time.Location
	sh       *shard
	p        Placement
	ids      []string                  // of the events, each once
	students []string                  // of the events, each once
	enrol    []analytics.StudentUpdate // of the events, each event's
	st       *state
	ords     map[string]int
	in       intent
	rows     written
	err      error
}

// writeGroups writes the logged events of an apply's groups under their
// apply locks, their shards at once: one directory transaction; on each
// shard, at once, one lookup of the ids it holds (those of an apply that
// died after its INSERTs), one of the students' ordinals, and the groups'
// current rows; an intent per group, recorded together; then one INSERT
// per table per shard; enrolment and the end of the intents with the
// commit. A group whose write fails has its err set, and its intent (if
// it recorded one) stays for its next write to repair; the others go on.
// It returns an error only when the directory's transaction has failed.
func (s *Store) writeGroups(ctx context.Context, tx GroupsLock, writes map[string]*groupWrite, limit int) error {
	// The directory, one group after another: the transaction is shared.
	if err := s.placeAll(ctx, tx, writes); err != nil {
		return err
	}
	byShard := map[*shard][]*groupWrite{}
	repaired := false
	for _, g := range slices.Sorted(maps.Keys(writes)) {
		w := writes[g]
		if w.err != nil {
			continue
		}
		// Days are cut in the zone the lock holds, which a change of zone
		// (Rebuild) may have changed since the caller cut them.
		if w.loc, w.err = w.tx.Location(ctx); w.err != nil {
			continue
		}
		if w.sh, w.err = s.shardOf(w.p); w.err != nil {
			continue
		}
		repaired = repaired || w.p.Intent != nil
		if w.p, w.err = s.settled(ctx, w.tx, w.sh, w.p); w.err != nil {
			continue
		}
		byShard[w.sh] = append(byShard[w.sh], w)
	}
	if repaired {
		// A repair may have finished an erasure, which takes the
		// student's events out of the log too.
		logged, err := tx.Logged(ctx, limit)
		if err != nil {
			return err
		}
		for g, w := range writes {
			w.events = append(logged[g], w.extra...)
		}
	}
	for _, w := range writes {
		seenID, seenStudent := map[string]bool{}, map[string]bool{}
		for _, e := range w.events {
			if !seenID[e.ID] {
				seenID[e.ID] = true
				w.ids = append(w.ids, e.ID)
			}
			if !seenStudent[e.StudentID] {
				seenStudent[e.StudentID] = true
				w.students = append(w.students, e.StudentID)
			}
			w.enrol = append(w.enrol, analytics.StudentUpdate{ID: e.StudentID, Name: e.StudentName})
		}
	}
	// The shards at once: what each write needs to know, and its rows.
	eachShard(byShard, func(sh *shard, ws []*groupWrite) error { return s.prepareWrites(ctx, sh, ws) })
	// The intents, recorded together, committed at once.
	intents := map[string][]byte{}
	for g, w := range writes {
		if w.err == nil && len(w.rows.events) > 0 {
			w.in.Whole = &w.p.Seq // settled: whole as of its number
			if intents[g], w.err = json.Marshal(w.in); w.err != nil {
				delete(intents, g)
			}
		}
	}
	if len(intents) > 0 {
		seqs, err := tx.MarkIntents(ctx, intents)
		for g := range intents {
			w := writes[g]
			w.rows.seq, w.err = seqs[g], err
		}
	}
	eachShard(byShard, func(sh *shard, ws []*groupWrite) error {
		var rows []written
		for _, w := range ws {
			if w.err == nil && len(w.rows.events) > 0 {
				rows = append(rows, w.rows)
			}
		}
		if len(rows) == 0 {
			return nil
		}
		var inserts errgroup.Group
		inserts.Go(func() error { return s.insertEvents(ctx, sh, rows...) })
		inserts.Go(func() error { return s.insertCountsRows(ctx, sh, rows...) })
		inserts.Go(func() error { return s.insertGroupRows(ctx, sh, rows...) })
		return inserts.Wait()
	})
	// Enrolment and the end of each intent, with the commit. Every student
	// of the events, new or not, though most are enrolled already: an
	// ordinal does not tell, since a write that died may have numbered a
	// student whose events never landed; and an event stored by an apply
	// whose commit failed is still in the log, stored, so not new, while
	// the intent that would have enrolled its student may have been
	// replaced since by the intent of a write that failed too.
	var written []string
	students := map[string][]analytics.StudentUpdate{}
	for _, g := range slices.Sorted(maps.Keys(writes)) {
		if w := writes[g]; w.err == nil {
			written = append(written, g)
			students[g] = w.enrol
		}
	}
	if len(written) == 0 {
		return nil
	}
	if err := tx.SaveStudents(ctx, students); err != nil {
		return err
	}
	return tx.ClearIntents(ctx, written)
}

// placeAll reads the placements of a flush's groups at once, and places
// those without one together, each on the shard that holds the fewest
// events (then groups) as placing goes: their state is empty, and need not
// be read. It fails only when the directory fails; a group that cannot be
// placed (no shard answers) has its err set.
func (s *Store) placeAll(ctx context.Context, tx GroupsLock, writes map[string]*groupWrite) error {
	placements, err := tx.Placements(ctx)
	if err != nil {
		return err
	}
	var unplaced []string
	for g, w := range writes {
		if p, ok := placements[g]; ok {
			w.p = p
		} else {
			unplaced = append(unplaced, g)
		}
	}
	if len(unplaced) == 0 {
		return nil
	}
	slices.Sort(unplaced)
	events, groups, err := s.shardLoads(ctx, writes[unplaced[0]].tx)
	if err != nil {
		for _, g := range unplaced {
			writes[g].err = err
		}
		return nil
	}
	shards := map[string]string{}
	for _, g := range unplaced {
		shards[g] = s.lightest(events, groups)
		groups[shards[g]]++
	}
	placed, err := tx.Place(ctx, shards)
	if err != nil {
		return err
	}
	for _, g := range unplaced {
		w := writes[g]
		w.p = placed[g]
		w.st = emptyState(w.p.Shard, w.p.Epoch, w.p.Seq, true)
	}
	return nil
}

// eachShard runs fn for the writes of each shard at once; an error fails
// the writes of its shard that have not failed yet.
func eachShard(byShard map[*shard][]*groupWrite, fn func(sh *shard, ws []*groupWrite) error) {
	var wg sync.WaitGroup
	for sh, ws := range byShard {
		wg.Go(func() {
			if err := fn(sh, ws); err != nil {
				for _, w := range ws {
					w.err = cmp.Or(w.err, err)
				}
			}
		})
	}
	wg.Wait()
}

// prepareWrites asks the shard, at once, which of the writes' ids it holds,
// the ordinals of their students (numbering the new ones; a number given
// to a student whose events all turn out to be duplicates is merely
// unused) and each group's current rows; then it makes each write's new
// events, intent and rows.
func (s *Store) prepareWrites(ctx context.Context, sh *shard, ws []*groupWrite) error {
	ws = slices.DeleteFunc(slices.Clone(ws), func(w *groupWrite) bool { return w.err != nil })
	ids, students := map[string][]string{}, map[string][]string{}
	for _, w := range ws {
		ids[w.p.GroupID], students[w.p.GroupID] = w.ids, w.students
	}
	var stored map[string]map[string]bool
	var ords map[string]map[string]int
	var lookups errgroup.Group
	lookups.Go(func() (err error) { stored, err = s.storedIDs(ctx, sh, ids); return err })
	lookups.Go(func() (err error) { ords, err = s.ordinalsOf(ctx, sh, students); return err })
	states := make(chan *groupWrite, len(ws))
	for _, w := range ws {
		if w.st == nil { // placed by this flush: empty
			states <- w
		}
	}
	close(states)
	for range min(len(ws), 8) {
		lookups.Go(func() error {
			for w := range states {
				var err error
				if w.st, err = s.stateAt(ctx, sh, w.p, true); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := lookups.Wait(); err != nil {
		return err
	}
	s.readIDSets(ctx, sh, ws)
	for _, w := range ws {
		w.ords = ords[w.p.GroupID]
		seen := stored[w.p.GroupID]
		if seen == nil {
			seen = map[string]bool{}
		}
		delta := rollup.NewDelta()
		firstExtra := len(w.events) - len(w.extra)
		for i, e := range w.events {
			if seen[e.ID] {
				continue
			}
			if i >= firstExtra {
				w.extraNew++
			}
			e.Day = analytics.DayOf(e.OccurredAt, w.loc)
			seen[e.ID] = true
			w.rows.events = append(w.rows.events, e)
			delta.Add(e)
			w.in.Students = append(w.in.Students, analytics.StudentUpdate{ID: e.StudentID, Name: e.StudentName})
			if m := e.Day.MonthStart(); !slices.Contains(w.in.Months, m) {
				w.in.Months = append(w.in.Months, m)
			}
		}
		if len(w.rows.events) == 0 {
			continue
		}
		w.rows.gkeys, w.rows.grows = newGroupRows(delta, w.st, w.ords)
		w.rows.counts, w.err = newCountsRows(w.st, delta, w.ords)
	}
	return nil
}

// turnstile is the channel at which the process's writers of the group
// take turns.
func (s *Store) turnstile(groupID string) chan struct{} {
	return s.turnstiles[maphash.String(turnstileSeed, groupID)%uint64(len(s.turnstiles))]
}

// locked runs fn holding the group's write lock and, when fn succeeds,
// clears the group's intent with the commit: whatever fn (or a repair on
// its way) meant to do is done.
//
// The writers of one process take turns at a turnstile first, so that at
// most one of them holds a directory connection waiting for the lock.
func (s *Store) locked(ctx context.Context, groupID string, fn func(tx GroupLock) error) error {
	turn := s.turnstile(groupID)
	select {
	case turn <- struct{}{}:
		defer func() { <-turn }()
	case <-ctx.Done():
		return fmt.Errorf("waiting for the group's turn: %w", ctx.Err())
	}
	return s.dir.WithGroupLock(ctx, groupID, func(tx GroupLock) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.ClearIntent(ctx)
	})
}

// markIntent records in, the intent of a write on the rows whole as of
// write number whole, and returns the write's number.
func markIntent(ctx context.Context, tx GroupLock, in intent, whole int64) (int64, error) {
	in.Whole = &whole
	b, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	return tx.MarkIntent(ctx, b)
}

// placeForWrite returns the group's shard, placing a new group on the
// least loaded one, after repairing what an unfinished write left, and
// its placement, whose Seq is the write as of which its rows are whole.
func (s *Store) placeForWrite(ctx context.Context, tx GroupLock) (*shard, Placement, error) {
	p, ok, err := tx.Placement(ctx)
	if err != nil {
		return nil, p, err
	}
	if !ok {
		name, err := s.leastLoaded(ctx, tx)
		if err != nil {
			return nil, p, err
		}
		if p, err = tx.Place(ctx, name); err != nil {
			return nil, p, err
		}
	}
	sh, err := s.shardOf(p)
	if err != nil {
		return nil, p, err
	}
	p, err = s.settled(ctx, tx, sh, p)
	return sh, p, err
}

// settled returns the placement p after repairing what the unfinished
// write it names left, if any.
func (s *Store) settled(ctx context.Context, tx GroupLock, sh *shard, p Placement) (Placement, error) {
	if p.Intent == nil {
		return p, nil
	}
	if err := s.repair(ctx, tx, sh, p); err != nil {
		return p, fmt.Errorf("repair: %w", err)
	}
	p, _, err := tx.Placement(ctx)
	return p, err
}

func (s *Store) shardOf(p Placement) (*shard, error) {
	sh := s.shardNamed(p.Shard)
	if sh == nil {
		return nil, fmt.Errorf("group %s is placed on shard %s, which the usage URL does not name: %w",
			p.GroupID, p.Shard, analytics.ErrUnavailable)
	}
	return sh, nil
}

// leastLoaded returns the shard holding the fewest events, among those that
// answer; the fewest groups breaks ties (and decides between empty shards).
func (s *Store) leastLoaded(ctx context.Context, tx GroupLock) (string, error) {
	events, groups, err := s.shardLoads(ctx, tx)
	if err != nil {
		return "", err
	}
	return s.lightest(events, groups), nil
}

// lightest is the shard, of those that answer (events names them), that
// holds the fewest events, then the fewest groups.
func (s *Store) lightest(events map[string]uint64, groups map[string]int) string {
	best := ""
	for _, sh := range s.shards {
		if _, up := events[sh.name]; up && (best == "" || events[sh.name] < events[best] ||
			events[sh.name] == events[best] && groups[sh.name] < groups[best]) {
			best = sh.name
		}
	}
	return best
}

// shardLoads returns the events of each shard that answers, and the groups
// placed on each; an error when none answers.
func (s *Store) shardLoads(ctx context.Context, tx GroupLock) (events map[string]uint64, groups map[string]int, err error) {
	if groups, err = tx.GroupsPerShard(ctx); err != nil {
		return nil, nil, err
	}
	events = map[string]uint64{}
	var errs []string
	for _, sh := range s.shards {
		n, err := s.eventCount(ctx, sh)
		if err != nil {
			errs = append(errs, sh.name)
			continue
		}
		events[sh.name] = n
	}
	if len(events) == 0 {
		return nil, nil, fmt.Errorf("no shard answers (%s): %w", strings.Join(errs, ", "), analytics.ErrUnavailable)
	}
	return events, groups, nil
}

// storedIDs returns which of each group's ids the shard already holds, in
// one query.
func (s *Store) storedIDs(ctx context.Context, sh *shard, ids map[string][]string) (map[string]map[string]bool, error) {
	stored := map[string]map[string]bool{}
	err := s.eachOfGroups(ctx, sh, ids, `SELECT DISTINCT group_id, event_id FROM `+s.table("events")+`
		WHERE group_id IN groups AND event_id IN lookup`, func(groupID, id string, _ uint32) {
		if stored[groupID] == nil {
			stored[groupID] = map[string]bool{}
		}
		stored[groupID][id] = true
	})
	return stored, err
}

// eachOfGroups runs query, which reads (group_id, value[, ordinal]) rows
// of the groups in the external table "groups" and of values in "lookup",
// and calls fn with each row whose value is one of its group's.
func (s *Store) eachOfGroups(ctx context.Context, sh *shard, values map[string][]string, query string, fn func(groupID, value string, n uint32)) error {
	var groups, all []string
	wanted := map[[2]string]bool{}
	for g, vs := range values {
		groups = append(groups, g)
		for _, v := range vs {
			wanted[[2]string{g, v}] = true
			all = append(all, v)
		}
	}
	if len(all) == 0 {
		return nil
	}
	ctx, err := withLookup(ctx, all, groups...)
	if err != nil {
		return err
	}
	rows, err := sh.query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	withOrdinal := len(rows.Columns()) == 3
	for rows.Next() {
		var g, v string
		var n uint32
		dest := []any{&g, &v}
		if withOrdinal {
			dest = append(dest, &n)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if wanted[[2]string{g, v}] {
			fn(g, v, n)
		}
	}
	return rows.Err()
}

// withLookup attaches values to ctx as the external table "lookup", a
// block of data sent beside the query rather than in its text, so that
// the query can ask `x IN lookup` of any number of values; and groups as
// the table "groups". An empty list makes no table.
func withLookup(ctx context.Context, values []string, groups ...string) (context.Context, error) {
	tables := []*ext.Table{}
	for name, list := range map[string][]string{"lookup": values, "groups": groups} {
		if len(list) == 0 {
			continue
		}
		t, err := ext.NewTable(name, ext.Column("v", "String"))
		if err != nil {
			return nil, err
		}
		for _, v := range list {
			if err := t.Append(v); err != nil {
				return nil, err
			}
		}
		tables = append(tables, t)
	}
	return clickhouse.Context(ctx, clickhouse.WithExternalTable(tables...)), nil
}

// eventsHaving returns which of values col (event_id or student_id) takes
// in the group's events.
func (s *Store) eventsHaving(ctx context.Context, sh *shard, groupID, col string, values []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(values) == 0 {
		return found, nil
	}
	ctx, err := withLookup(ctx, values)
	if err != nil {
		return nil, err
	}
	rows, err := sh.query(ctx, `SELECT DISTINCT `+col+` FROM `+s.table("events")+`
		WHERE group_id = ? AND `+col+` IN lookup`, groupID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		found[v] = true
	}
	return found, rows.Err()
}

// written is what one write of a group inserts, every row labelled with
// the write's number. The inserts take the rows of any number of writes,
// so that a flush of many groups is one INSERT per table.
type written struct {
	seq    int64
	events []analytics.Event
	counts []countsRow
	gkeys  []rollup.GroupKey       // the group rows' keys,
	grows  []analytics.GroupRollup // and their new state
}

func (s *Store) insertEvents(ctx context.Context, sh *shard, ws ...written) error {
	return sh.insert(ctx, `INSERT INTO `+s.table("events")+` (group_id, event_id, student_id, occurred_at, metric, seq)`, func(b driver.Batch) error {
		for _, w := range ws {
			for _, e := range w.events {
				if err := b.Append(e.GroupID, e.ID, e.StudentID, e.OccurredAt.UnixMilli(), uint8(e.Metric), uint64(w.seq)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// newGroupRows returns the new state of the group rows that delta
// changes, st holding their state before.
func newGroupRows(delta *rollup.Delta, st *state, ordinals map[string]int) ([]rollup.GroupKey, []analytics.GroupRollup) {
	keys := delta.GroupKeys()
	rows := make([]analytics.GroupRollup, len(keys))
	for i, k := range keys {
		r := st.groupRow(k.Span, k.Key)
		r.Key = k.Key
		d := delta.Groups[k]
		r.Counts.Add(&d.Counts)
		for id := range d.LiveLectureUsers {
			r.LiveLectureUsers.Add(ordinals[id])
		}
		for id := range d.ChatUsers {
			r.ChatUsers.Add(ordinals[id])
		}
		rows[i] = r
	}
	return keys, rows
}

// insertGroupRows writes the writes' group rows as the new state of their
// keys.
func (s *Store) insertGroupRows(ctx context.Context, sh *shard, ws ...written) error {
	if !slices.ContainsFunc(ws, func(w written) bool { return len(w.gkeys) > 0 }) {
		return nil
	}
	return sh.insert(ctx, `INSERT INTO `+s.table("group_rollups")+` (group_id, span, period, `+metricList+`, live_lecture_users, chat_users, version)`, func(b driver.Batch) error {
		for _, w := range ws {
			for i, k := range w.gkeys {
				c := &w.grows[i].Counts
				if err := b.Append(k.GroupID, uint8(k.Span), int32(k.Key), c[0], c[1], c[2], c[3], c[4], c[5], c[6],
					string(rollup.EncodeSet(w.grows[i].LiveLectureUsers)), string(rollup.EncodeSet(w.grows[i].ChatUsers)), uint64(w.seq)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

var (
	// metricList is the count columns, in analytics.Metric order.
	metricList = rollup.Columns("{c}")
	// studentSums is the columns of a student's counts, summed.
	studentSums = rollup.Columns("sum({c})")
	// groupColumns reads a group rollup's current state: the row of the
	// highest version.
	groupColumns = rollup.Columns("argMax({c}, version)") + ", argMax(live_lecture_users, version), argMax(chat_users, version)"
)

// scanner is a row of a query's result.
type scanner interface{ Scan(dest ...any) error }

// scanGroupRow reads the leading columns into lead, then groupColumns.
func scanGroupRow(row scanner, lead ...any) (analytics.GroupRollup, error) {
	var r analytics.GroupRollup
	var ll, chat string
	if err := row.Scan(append(rollup.ScanDest(&r.Counts, lead...), &ll, &chat)...); err != nil {
		return r, err
	}
	r.LiveLectureUsers, r.ChatUsers = rollup.DecodeSet([]byte(ll)), rollup.DecodeSet([]byte(chat))
	return r, nil
}

// ordinals returns the ordinals of the students, numbering those the group
// has not numbered yet after its highest.
func (s *Store) ordinals(ctx context.Context, sh *shard, groupID string, studentIDs []string) (map[string]int, error) {
	all, err := s.ordinalsOf(ctx, sh, map[string][]string{groupID: studentIDs})
	if err != nil {
		return nil, err
	}
	return all[groupID], nil
}

// ordinalsOf is ordinals of several groups' students, asked and numbered
// at once.
func (s *Store) ordinalsOf(ctx context.Context, sh *shard, students map[string][]string) (map[string]map[string]int, error) {
	ordinals, err := s.storedOrdinals(ctx, sh, students)
	if err != nil {
		return nil, err
	}
	missing := func() map[string][]string {
		out := map[string][]string{}
		for g, ids := range students {
			for _, id := range ids {
				if _, ok := ordinals[g][id]; !ok {
					out[g] = append(out[g], id)
				}
			}
		}
		return out
	}
	unnumbered := missing()
	if len(unnumbered) == 0 {
		return ordinals, nil
	}
	// A write that was told it failed may yet have numbered some of them:
	// once its insert has settled, look again.
	if sh.replicated() {
		if err := s.settleQuorums(ctx, sh); err != nil {
			return nil, err
		}
		settled, err := s.storedOrdinals(ctx, sh, unnumbered)
		if err != nil {
			return nil, err
		}
		for g, ords := range settled {
			maps.Copy(ordinals[g], ords)
		}
		if unnumbered = missing(); len(unnumbered) == 0 {
			return ordinals, nil
		}
	}
	groups := slices.Sorted(maps.Keys(unnumbered))
	lookupCtx, err := withLookup(ctx, nil, groups...)
	if err != nil {
		return nil, err
	}
	rows, err := sh.query(lookupCtx, `SELECT group_id, toUInt32(max(ordinal) + 1) FROM `+s.table("students")+`
		WHERE group_id IN groups GROUP BY group_id`)
	if err != nil {
		return nil, err
	}
	next := map[string]uint32{}
	for rows.Next() {
		var g string
		var n uint32
		if err := rows.Scan(&g, &n); err != nil {
			rows.Close()
			return nil, err
		}
		next[g] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, g := range groups {
		for i, id := range unnumbered[g] {
			ordinals[g][id] = int(next[g]) + i
		}
	}
	return ordinals, sh.insert(ctx, `INSERT INTO `+s.table("students")+` (group_id, student_id, ordinal)`, func(b driver.Batch) error {
		for _, g := range groups {
			for _, id := range unnumbered[g] {
				if err := b.Append(g, id, uint32(ordinals[g][id])); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// storedOrdinals returns the ordinals each group has given its students,
// a map for every group asked of.
func (s *Store) storedOrdinals(ctx context.Context, sh *shard, students map[string][]string) (map[string]map[string]int, error) {
	ordinals := map[string]map[string]int{}
	for g := range students {
		ordinals[g] = map[string]int{}
	}
	err := s.eachOfGroups(ctx, sh, students, `SELECT group_id, student_id, min(ordinal) FROM `+s.table("students")+`
		WHERE group_id IN groups AND student_id IN lookup GROUP BY group_id, student_id`, func(groupID, id string, n uint32) {
		ordinals[groupID][id] = int(n)
	})
	return ordinals, err
}
