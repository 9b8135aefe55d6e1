package chstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// Reads while the log cannot be applied: with a replica or ZooKeeper down,
// a shard takes no writes, but its rows can still be read. A read settles
// its group from them and the log (pendingView) rather than wait for a
// write that fails; writes, erasures, moves and retention still wait.

// unapplied holds the groups whose last apply failed, and when: a read of
// one answers from the log at once, and tries the apply again behind it.
type unapplied struct {
	mu     sync.Mutex
	failed map[string]time.Time
	trying map[string]bool // an apply of the group runs behind a read
}

// note records how the apply of groups ended: failed, or written.
func (u *unapplied) note(failed map[string]error, written []string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.failed == nil {
		u.failed, u.trying = map[string]time.Time{}, map[string]bool{}
	}
	for g, err := range failed {
		if err != errJustFailed { // not tried: its failure stays as it was
			u.failed[g] = now
		}
	}
	for _, g := range written {
		delete(u.failed, g)
	}
}

// justFailed reports whether the group's last apply failed less than half
// applyEvery before now: a read that may settle from the log does not try
// another so soon.
func (u *unapplied) justFailed(groupID string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, failed := u.failed[groupID]
	return failed && now.Sub(at) < applyEvery/2
}

// errJustFailed fails the apply of a group whose last one just failed.
var errJustFailed = analytics.Errorf(analytics.Unavailable, "the group's last write failed moments ago")

// retry reports whether the group's last apply failed and, if so, whether
// a read should now try it again behind its answer (none runs, and the
// last failed at least applyEvery ago); it then counts as running.
func (u *unapplied) retry(groupID string, now time.Time) (failing, again bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, failing := u.failed[groupID]
	if !failing || u.trying[groupID] || now.Sub(at) < applyEvery {
		return failing, false
	}
	u.trying[groupID] = true
	return true, true
}

// tried records that the apply run behind a read has ended.
func (u *unapplied) tried(groupID string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.trying, groupID)
}

// applyBehind tries the group's apply again in the background, bounded
// like a call; its result is noted as every apply's is.
func (s *Store) applyBehind(groupID string) {
	if s.quit.Err() != nil {
		s.unapplied.tried(groupID)
		return // closing
	}
	s.background.Go(func() {
		defer s.unapplied.tried(groupID)
		ctx, cancel := s.bound(s.quit)
		defer cancel()
		_, _ = s.apply(ctx, []string{groupID}, writebehind.WaitApply, nil)
	})
}

// fromLogKey marks the context of a read's apply that may settle from
// the log when the apply fails: it does not try a write that failed
// moments ago (justFailed), as one that waited for the failing one would.
type fromLogKey struct{}

// settleFailing settles a read of a group whose last apply failed from
// its log, within bounded, trying the apply again behind it. failing: the
// group's last apply failed; err: its view could not be made.
func (s *Store) settleFailing(ctx, bounded context.Context, groupID string) (read context.Context, failing bool, err error) {
	failing, again := s.unapplied.retry(groupID, time.Now())
	if !failing {
		return ctx, false, nil
	}
	if again {
		s.applyBehind(groupID)
	}
	read, err = s.settlePending(ctx, bounded, groupID, nil)
	return read, true, err
}

// settlePending settles a read of the group whose log cannot be applied:
// the context it returns, ctx's child, carries the group's pending view,
// made within bounded, to the reads. When the view cannot be made either,
// the error is cause's, if any.
func (s *Store) settlePending(ctx, bounded context.Context, groupID string, cause error) (context.Context, error) {
	st, err := s.pendingView(bounded, groupID)
	if err != nil {
		return ctx, s.wrap("Settle", errors.Join(cause, err))
	}
	return context.WithValue(ctx, settledKey{}, settledPlacement{p: writebehind.Placement{GroupID: groupID}, pending: st, at: time.Now()}), nil
}

// pendingView returns the group's state as a read sees it while its log
// cannot be applied: its rows whole on its shard, and the log's events of
// the group that they lack folded in, in memory, as an apply would fold
// them. The events' students are enrolled in the directory first, as the
// apply's commit would. Nothing is written to ClickHouse, and the state is
// the caller's alone, never kept. nil: the group holds no usage.
func (s *Store) pendingView(ctx context.Context, groupID string) (*state, error) {
	for range 3 {
		pending, err := s.readPending(ctx, groupID)
		if err != nil {
			return nil, err
		}
		st, stored, ords, next, err := s.wholeOf(ctx, pending)
		if errors.Is(err, errMovedOn) {
			continue // an apply ended since the log was read: read it again
		}
		if err != nil {
			return nil, err
		}
		loc, err := analytics.LoadZone(pending.Zone)
		if err != nil {
			return nil, err
		}
		delta := rollup.NewDelta()
		for _, e := range pending.Events {
			if stored[e.ID] {
				continue
			}
			stored[e.ID] = true
			e.Day = analytics.DayOf(e.OccurredAt, loc)
			delta.Add(e)
			if _, ok := ords[e.StudentID]; !ok {
				ords[e.StudentID] = next
				next++
			}
		}
		var rows written
		rows.seq = st.seq
		rows.gkeys, rows.grows = newGroupRows(delta, st, ords)
		if rows.counts, err = newCountsRows(st, delta, ords); err != nil {
			return nil, err
		}
		view := st.after(rows)
		view.withCounts, view.ordinals = true, ords
		return view, nil
	}
	return nil, errors.New("the group's rows moved on three times while its log was read")
}

// errMovedOn: the group's kept state is newer than the log read with it.
var errMovedOn = errors.New("the group's rows moved on")

// readPending reads the group's placement, zone and logged events under
// its log lock, and enrols the events' students. A group whose write lock
// is held (an erasure, a move, a repair) waits for it, as writes do.
func (s *Store) readPending(ctx context.Context, groupID string) (writebehind.Pending, error) {
	var pending writebehind.Pending
	err := s.dir.WithGroupsLogging(ctx, []string{groupID}, func(tx writebehind.LogLock) error {
		switch {
		case slices.Contains(tx.Gone(), groupID):
			return analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
		case !slices.Contains(tx.Locked(), groupID):
			return analytics.Errorf(analytics.Unavailable, "group %s: a write holds it", groupID)
		}
		var err error
		if pending, err = tx.Pending(ctx, groupID, maxApplied+1); err != nil {
			return fmt.Errorf("the log: %w", err)
		}
		if len(pending.Events) > maxApplied {
			return analytics.Errorf(analytics.Unavailable, "group %s: more than %d events wait to be applied", groupID, maxApplied)
		}
		if err := tx.SaveStudents(ctx, map[string][]analytics.StudentUpdate{groupID: enrolment(pending.Events)}); err != nil {
			return fmt.Errorf("enrolment: %w", err)
		}
		return nil
	})
	return pending, err
}

// enrolment is the enrolment of the events' students, one update each,
// in the order they first appear, with the last name an event gave them
// (an event without a name keeps the one before), as saving every
// event's update in order would leave it.
func enrolment(events []analytics.Event) []analytics.StudentUpdate {
	var updates []analytics.StudentUpdate
	at := map[string]int{}
	for _, e := range events {
		i, seen := at[e.StudentID]
		switch {
		case !seen:
			at[e.StudentID] = len(updates)
			updates = append(updates, analytics.StudentUpdate{ID: e.StudentID, Name: e.StudentName})
		case e.StudentName != "":
			updates[i].Name = e.StudentName
		}
	}
	return updates
}

// wholeOf reads what the group's shard holds whole as of the pending
// placement: its state, which of the pending events' ids it counts, its
// students' ordinals and the next ordinal free. A group not placed holds
// nothing yet.
func (s *Store) wholeOf(ctx context.Context, pending writebehind.Pending) (st *state, stored map[string]bool, ords map[string]int, next int, err error) {
	p := pending.Placement
	if !pending.Placed {
		return emptyState("", 0, 0, true), map[string]bool{}, map[string]int{}, 0, nil
	}
	if p.Intent != nil && isMove(p.Intent) {
		return nil, nil, nil, 0, analytics.Errorf(analytics.Unavailable, "group %s is moving to another shard", p.GroupID)
	}
	sh, err := s.shardOf(p)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	p.Seq, p.Intent = wholeAsOf(p), nil
	if st, err = s.stateAt(ctx, sh, p, true); err != nil {
		return nil, nil, nil, 0, err
	}
	if st.seq != p.Seq {
		return nil, nil, nil, 0, errMovedOn
	}
	ids := make([]string, len(pending.Events))
	for i, e := range pending.Events {
		ids[i] = e.ID
	}
	if stored, err = s.eventsHaving(ctx, sh, p.GroupID, "event_id", ids, p.Seq); err != nil {
		return nil, nil, nil, 0, err
	}
	if ords, err = s.readOrdinals(ctx, sh, p.GroupID); err != nil {
		return nil, nil, nil, 0, err
	}
	next, err = s.nextOrdinal(ctx, sh, p.GroupID)
	return st, stored, ords, next, err
}

// nextOrdinal is the number after the group's highest ordinal, erased
// students' included.
func (s *Store) nextOrdinal(ctx context.Context, sh *shard, groupID string) (int, error) {
	var next uint64
	err := sh.eachRow(ctx, `SELECT if(count() = 0, 0, max(ordinal) + 1) FROM `+s.table("students")+` WHERE group_id = ?`,
		[]any{groupID}, func(rows driver.Rows) error { return rows.Scan(&next) })
	if err != nil {
		return 0, fmt.Errorf("next ordinal: %w", err)
	}
	return int(next), nil
}
