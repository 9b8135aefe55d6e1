package chstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// The apply: the applier (or a read, through Settle) takes the logged
// events of many groups under their locks, writes each group's intent,
// finds what is new on its shard and what it changes (writeGroups), and
// inserts it, one INSERT per table per shard (inserts.go); the same
// transaction takes the events out of the log.

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
			now := time.Now()
			s.outage.failed(now, fmt.Errorf("leading the appliers: %w", err))
			s.outage.roundDone(now, true)
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
// does not hold up the others. Failures are logged as an outage's.
func (s *Store) applyLogged(ctx context.Context) {
	now := time.Now()
	groups, err := s.dir.LoggedGroups(ctx, 10*maxAppliedGroups)
	if err != nil {
		s.outage.failed(now, fmt.Errorf("reading the log: %w", err))
		s.outage.roundDone(now, true)
		return
	}
	groups = slices.DeleteFunc(groups, func(g string) bool { return now.Before(s.retryAt[g]) })
	maps.DeleteFunc(s.retryAt, func(_ string, at time.Time) bool { return !now.Before(at) })
	batchFailed := false
	for len(groups) > 0 && ctx.Err() == nil {
		batch := groups[:min(len(groups), maxAppliedGroups)]
		groups = groups[len(batch):]
		res, err := s.apply(ctx, batch, writebehind.SkipHeld, nil)
		if err != nil {
			s.outage.failed(now, err, batch...)
			batchFailed = true
			break
		}
		for g, err := range res.failed {
			s.retryAt[g] = now.Add(applyEvery)
			s.outage.failed(now, err, g)
		}
		if res.logged >= maxApplied {
			groups = append(batch, groups...) // more waits: again
		}
	}
	s.outage.roundDone(now, batchFailed || len(s.retryAt) > 0)
	s.readLogStats(ctx)
}

// logVacuumEvents: once the process has applied so many events of the
// directory's log since it last vacuumed it, it vacuums it again.
var logVacuumEvents int64 = 100_000

// vacuumLog vacuums the directory's log in the background, unless a
// vacuum runs already. Each applied event leaves a dead row that every
// read of the log walks past until a vacuum clears it, and autovacuum may
// be off or late. A vacuum takes no lock that the log's writers or
// appliers wait for.
func (s *Store) vacuumLog() {
	if s.quit.Err() != nil || !s.vacuuming.CompareAndSwap(false, true) {
		return // closing (its last apply), or a vacuum runs
	}
	s.background.Go(func() {
		defer s.vacuuming.Store(false)
		ctx, cancel := context.WithTimeout(s.quit, 10*time.Minute)
		defer cancel()
		if err := s.dir.VacuumLog(ctx); err != nil && s.quit.Err() == nil {
			s.log.Warn("write-behind log: vacuum failed", "err", err)
		}
	})
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
func (s *Store) apply(ctx context.Context, groups []string, mode writebehind.LockMode, extra map[string][]analytics.Event) (applied, error) {
	writes := map[string]*groupWrite{}
	res := applied{failed: map[string]error{}, extraNew: map[string]int{}}
	limit := maxApplied
	if mode == writebehind.WaitWrite {
		limit = math.MaxInt32 // extra's ids must be told from every logged one
	}
	var locked []string
	err := s.dir.WithGroupsLock(ctx, groups, mode, func(tx writebehind.GroupsLock) error {
		res.gone = tx.Gone()
		logged, err := tx.Logged(ctx, limit)
		if err != nil {
			return err
		}
		now := time.Now()
		for _, lock := range tx.Locked() {
			g := lock.GroupID()
			locked = append(locked, g)
			switch {
			case len(logged[g]) == 0 && len(extra[g]) == 0:
			case ctx.Value(fromLogKey{}) != nil && s.unapplied.justFailed(g, now):
				res.failed[g] = errJustFailed
			default:
				writes[g] = &groupWrite{tx: lock, events: append(logged[g], extra[g]...), extra: extra[g]}
			}
		}
		if len(writes) == 0 {
			return nil
		}
		err = s.writeGroups(ctx, tx, writes, limit)
		// Noted before the locks go, so that a read waiting for one finds
		// the failure rather than try the write again (justFailed).
		for g, w := range writes {
			if w.err != nil {
				res.failed[g] = w.err
			}
		}
		s.unapplied.note(res.failed, slices.DeleteFunc(slices.Clone(locked), func(g string) bool { return res.failed[g] != nil }), time.Now())
		if err != nil {
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
		if s.sinceVacuum.Add(int64(res.logged)) >= logVacuumEvents {
			s.sinceVacuum.Store(0)
			s.vacuumLog()
		}
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
	res, err := s.apply(ctx, []string{groupID}, writebehind.WaitWrite, map[string][]analytics.Event{groupID: events})
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

// groupWrite is one group's part of an apply.
type groupWrite struct {
	tx       writebehind.GroupLock
	events   []analytics.Event // from the log, oldest first, then extra
	extra    []analytics.Event // a large call's, written at once
	extraNew int               // of extra, the events new to the shard and the log
	loc      *time.Location
	sh       *shard
	p        writebehind.Placement
	ids      []string                  // of the events, each once
	enrol    []analytics.StudentUpdate // of the events' students, each once
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
func (s *Store) writeGroups(ctx context.Context, tx writebehind.GroupsLock, writes map[string]*groupWrite, limit int) error {
	byShard, err := s.settleWrites(ctx, tx, writes, limit)
	if err != nil {
		return err
	}
	for _, w := range writes {
		w.gatherIDs()
	}
	// The shards at once: what each write needs to know, and its rows.
	eachShard(byShard, func(sh *shard, ws []*groupWrite) error { return s.prepareWrites(ctx, sh, ws) })
	recordIntents(ctx, tx, writes)
	eachShard(byShard, func(sh *shard, ws []*groupWrite) error { return s.insertWrites(ctx, sh, ws) })
	return endWrites(ctx, tx, writes)
}

// settleWrites places the groups of writes (in the directory, one after
// another: the transaction is shared), reads each one's zone and shard,
// and repairs what an unfinished write of it left; it returns the writes
// by shard. A repair may have finished an erasure, which takes the
// student's events out of the log too: then the log is read again.
func (s *Store) settleWrites(ctx context.Context, tx writebehind.GroupsLock, writes map[string]*groupWrite, limit int) (map[*shard][]*groupWrite, error) {
	if err := s.placeAll(ctx, tx, writes); err != nil {
		return nil, err
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
		logged, err := tx.Logged(ctx, limit)
		if err != nil {
			return nil, err
		}
		for g, w := range writes {
			w.events = append(logged[g], w.extra...)
		}
	}
	return byShard, nil
}

// gatherIDs lists the write's event ids, each once, and its students'
// enrolment.
func (w *groupWrite) gatherIDs() {
	seenID := map[string]bool{}
	for _, e := range w.events {
		if !seenID[e.ID] {
			seenID[e.ID] = true
			w.ids = append(w.ids, e.ID)
		}
	}
	w.enrol = enrolment(w.events)
}

// recordIntents records the intent of every write with rows to insert,
// together, and numbers each write; a write whose intent cannot be
// recorded has its err set.
func recordIntents(ctx context.Context, tx writebehind.GroupsLock, writes map[string]*groupWrite) {
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
}

// insertWrites inserts the rows of a shard's writes: one INSERT per table,
// the three at once.
func (s *Store) insertWrites(ctx context.Context, sh *shard, ws []*groupWrite) error {
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
}

// endWrites enrols the students of the writes that did not fail and ends
// their intents, in the directory's commit. It enrols every student of
// the events, not only new ones, because neither an ordinal nor the log
// tells which are new after a failed write (see docs/architecture.md,
// "A ClickHouse write").
func endWrites(ctx context.Context, tx writebehind.GroupsLock, writes map[string]*groupWrite) error {
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

// prepareWrites asks the shard, at once, which of the writes' ids it holds,
// the ordinals of their students (numbering the new ones; a number given
// to a student whose events all turn out to be duplicates is merely
// unused) and each group's current rows; then it makes each write's new
// events, intent and rows.
func (s *Store) prepareWrites(ctx context.Context, sh *shard, ws []*groupWrite) error {
	ws = slices.DeleteFunc(slices.Clone(ws), func(w *groupWrite) bool { return w.err != nil })
	ids, students := map[string][]string{}, map[string][]string{}
	for _, w := range ws {
		ids[w.p.GroupID] = w.ids
		for _, u := range w.enrol {
			students[w.p.GroupID] = append(students[w.p.GroupID], u.ID)
		}
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
			if m := e.Day.MonthStart(); !slices.Contains(w.in.Months, m) {
				w.in.Months = append(w.in.Months, m)
			}
		}
		if len(w.rows.events) == 0 {
			continue
		}
		w.in.Students = enrolment(w.rows.events)
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
func (s *Store) locked(ctx context.Context, groupID string, fn func(tx writebehind.GroupLock) error) error {
	turn := s.turnstile(groupID)
	select {
	case turn <- struct{}{}:
		defer func() { <-turn }()
	case <-ctx.Done():
		return fmt.Errorf("waiting for the group's turn: %w", ctx.Err())
	}
	return s.dir.WithGroupLock(ctx, groupID, func(tx writebehind.GroupLock) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.ClearIntent(ctx)
	})
}
