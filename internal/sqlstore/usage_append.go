package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"hash/maphash"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// eventTypes are the SQL types of an event row's columns.
var eventTypes = []string{"text", "text", "text", "bigint", "smallint"}

// copyThreshold is the batch size from which PostgreSQL stages events with
// COPY rather than multi-row INSERTs.
const copyThreshold = 2000

// AppendEvents hands the batch to a writer of the store (the one of its
// first group), which merges the calls waiting for it at that moment into
// one transaction: one commit for all of them, and one upsert per rollup
// row they share. No call waits for others to arrive; each returns once
// the transaction holding its events has committed, or when its context
// ends. Two writers whose calls share groups take turns at the groups'
// locks.
func (s *Store) AppendEvents(ctx context.Context, events []analytics.Event) (analytics.AppendResult, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	call := rollup.NewCall(ctx, events)
	if err := s.enqueue(call); err != nil {
		return analytics.AppendResult{}, s.wrap("AppendEvents", err)
	}
	select {
	case d := <-call.Done:
		return d.Result, d.Err
	case <-ctx.Done():
		// The events may still be written. The caller is not told they
		// were; sent again, they count once.
		return analytics.AppendResult{}, s.wrap("AppendEvents", ctx.Err())
	}
}

// QueueDepth is how many AppendEvents calls wait for the writers.
func (s *Store) QueueDepth() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, q := range s.appends {
		n += len(q)
	}
	return n
}

// enqueue hands call to the writer of its first group, starting the
// writers on first use.
func (s *Store) enqueue(call *rollup.Call) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.startWriter.Do(func() {
		s.appends = make([]chan *rollup.Call, s.dialect.appendWriters)
		for i := range s.appends {
			s.appends[i] = make(chan *rollup.Call, 256)
			s.writers.Add(1)
			go s.writeAppends(s.appends[i])
		}
	})
	q := s.appends[0]
	if len(call.Events) > 0 {
		q = s.appends[maphash.String(writerSeed, call.Events[0].GroupID)%uint64(len(s.appends))]
	}
	select {
	case q <- call:
		return nil
	case <-call.Ctx.Done():
		return call.Ctx.Err()
	}
}

// writeAppends is a writer: it takes the first call waiting in its queue,
// and the others already queued, and writes them together. Calls whose
// callers gave up before their turn are dropped. It returns when Close has
// closed the queue and everything queued is written.
//
// On SQLite it also folds the rollups behind the events (usage_behind.go) when
// they are due, between flushes, and once more before it returns.
func (s *Store) writeAppends(queue chan *rollup.Call) {
	defer s.writers.Done()
	tick := time.NewTicker(foldBehindEvery / foldParts)
	defer tick.Stop()
	for {
		var first *rollup.Call
		select {
		case c, ok := <-queue:
			if !ok {
				s.foldBehindDue(true)
				return
			}
			first = c
		case <-tick.C:
			s.foldBehindDue(false)
			continue
		}
		calls, n := []*rollup.Call{first}, len(first.Events)
	more:
		for n < rollup.MaxMergedEvents {
			select {
			case c, ok := <-queue:
				if !ok {
					break more
				}
				calls, n = append(calls, c), n+len(c.Events)
			default:
				break more
			}
		}
		calls = slices.DeleteFunc(calls, func(c *rollup.Call) bool { return c.Ctx.Err() != nil })
		if len(calls) == 0 {
			continue
		}
		if s.observer != nil {
			s.observer.Merged(len(calls), n)
		}
		results, err := s.appendMerged(calls)
		for i, c := range calls {
			c.Done <- rollup.Done{Result: results[i], Err: err}
		}
		s.foldBehindDue(false)
	}
}

// mergedContext lasts as long as the longest of the calls' deadlines (ctx
// gives a call's context): a transaction that serves them all.
func mergedContext[C any](calls []C, ctx func(C) context.Context) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range calls {
		d, ok := ctx(c).Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// appendMerged writes the events of several calls in one transaction and
// tells each call how many of its events were new. An id sent by two calls
// counts for the first; only the new events enrol and name students.
func (s *Store) appendMerged(calls []*rollup.Call) ([]analytics.AppendResult, error) {
	var batch []analytics.Event
	for _, c := range calls {
		batch = append(batch, c.Events...)
	}
	// Sorted, so that concurrent writers (other processes) with shared ids
	// wait on each other in one order, and with duplicates dropped up front.
	slices.SortStableFunc(batch, func(a, b analytics.Event) int {
		return cmp.Or(cmp.Compare(a.GroupID, b.GroupID), cmp.Compare(a.ID, b.ID))
	})
	batch = slices.CompactFunc(batch, func(a, b analytics.Event) bool { return a.GroupID == b.GroupID && a.ID == b.ID })
	var groups []string
	for _, e := range batch {
		if len(groups) == 0 || groups[len(groups)-1] != e.GroupID {
			groups = append(groups, e.GroupID)
		}
	}
	results := make([]analytics.AppendResult, len(calls))
	ctx, cancel := mergedContext(calls, func(c *rollup.Call) context.Context { return c.Ctx })
	defer cancel()
	err := s.transactIn(ctx, "AppendEvents", txAppend, func(tx *txn) error {
		zones, err := s.lockGroups(ctx, tx, groups, forWrite)
		if err != nil {
			return err
		}
		locs := map[string]*time.Location{}
		for g, zone := range zones {
			if locs[g], err = analytics.LoadZone(zone); err != nil {
				return err
			}
		}
		batch := slices.DeleteFunc(slices.Clone(batch), func(e analytics.Event) bool { return locs[e.GroupID] == nil })
		inserted, err := s.insertEvents(ctx, tx, batch)
		if err != nil {
			return err
		}
		accepted := make([]analytics.Event, 0, len(batch))
		students := map[string][]analytics.StudentUpdate{}
		for i, c := range calls {
			results[i] = analytics.AppendResult{}
			for _, e := range c.Events {
				loc := locs[e.GroupID]
				if loc == nil {
					if !slices.Contains(results[i].Gone, e.GroupID) {
						results[i].Gone = append(results[i].Gone, e.GroupID)
					}
					continue
				}
				// The day in the zone the lock holds, which a change of
				// zone may have changed since the caller cut it.
				e.Day = analytics.DayOf(e.OccurredAt, loc)
				k := [2]string{e.GroupID, e.ID}
				if !inserted[k] {
					results[i].Duplicates++
					continue
				}
				delete(inserted, k)
				results[i].Accepted++
				accepted = append(accepted, e)
				students[e.GroupID] = append(students[e.GroupID], analytics.StudentUpdate{ID: e.StudentID, Name: e.StudentName})
			}
		}
		ordinals := map[[2]string]int{}
		if err := s.saveStudents(ctx, tx, students, ordinals, rollup.LastDaysOf(accepted)); err != nil {
			return err
		}
		if s.dialect.rollupsBehind && len(accepted) < applyAtOnce {
			return s.noteBehind(ctx, tx, accepted)
		}
		delta := rollup.NewDelta()
		for _, e := range accepted {
			delta.Add(e)
		}
		delta.TakeLastDays() // written with the students above
		return s.applyDelta(ctx, tx, delta, ordinals)
	})
	return results, err
}

// insertEvents inserts the events whose ids are new and returns their
// (group, id) keys.
func (s *Store) insertEvents(ctx context.Context, tx *txn, events []analytics.Event) (map[[2]string]bool, error) {
	rows := make([][]any, len(events))
	for i, e := range events {
		rows[i] = []any{e.GroupID, e.ID, e.StudentID, millis(e.OccurredAt), int16(e.Metric)}
	}
	if s.pool != nil && len(rows) >= copyThreshold {
		return s.copyEvents(ctx, tx, rows)
	}
	inserted := map[[2]string]bool{}
	err := s.insertRows(ctx, tx, "events (group_id, event_id, student_id, occurred_at, metric)", eventTypes, rows,
		"ON CONFLICT (group_id, event_id) DO NOTHING RETURNING group_id, event_id", func(r *sql.Rows) error {
			var k [2]string
			err := r.Scan(&k[0], &k[1])
			inserted[k] = true
			return err
		})
	return inserted, err
}

// scanKeys reads (group_id, event_id) rows into a set.
func scanKeys(rows *sql.Rows) (map[[2]string]bool, error) {
	defer rows.Close()
	keys := map[[2]string]bool{}
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return nil, err
		}
		keys[k] = true
	}
	return keys, rows.Err()
}

// applyDelta adds delta to the rollups: the students' counts to their
// rows, their last days to their enrolments, the group rows' counts and
// student sets (of days, weeks and months), merged into the stored rows
// by the upsert where the database can (mergesRollups), or else read
// under lock and written back. known holds ordinals read already in tx
// (or is nil).
func (s *Store) applyDelta(ctx context.Context, tx *txn, delta *rollup.Delta, known map[[2]string]int) error {
	delta.AddWeeks()
	ordinals, err := s.ordinals(ctx, tx, delta.StudentIDs(), known)
	if err != nil {
		return err
	}
	if last := delta.TakeLastDays(); len(last) > 0 {
		if err := s.saveLastDays(ctx, tx, last); err != nil {
			return err
		}
	}
	if err := s.addCounts(ctx, tx, delta, ordinals); err != nil {
		return err
	}
	add := func(k rollup.GroupKey, r *analytics.GroupRollup) {
		d := delta.Groups[k]
		r.Counts.Add(&d.Counts)
		for id := range d.LiveLectureUsers {
			r.LiveLectureUsers.Add(ordinals[[2]string{k.GroupID, id}])
		}
		for id := range d.ChatUsers {
			r.ChatUsers.Add(ordinals[[2]string{k.GroupID, id}])
		}
	}
	if s.dialect.mergesRollups {
		return s.writeGroupRollups(ctx, tx, delta.GroupKeys(), nil, add, addToGroupRollup)
	}
	return s.updateGroupRollups(ctx, tx, delta.GroupKeys(), add)
}
