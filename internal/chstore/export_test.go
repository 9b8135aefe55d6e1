package chstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// InsertRawEvents stores events on the group's shard and nothing else, as
// a write that dies half way does.
func (s *Store) InsertRawEvents(ctx context.Context, p writebehind.Placement, events []analytics.Event) error {
	sh, err := s.shardOf(p)
	if err != nil {
		return err
	}
	return s.insertEvents(ctx, sh, written{seq: p.Seq, events: events})
}

// SchemaVersion returns the newest migration a shard has recorded.
func (s *Store) SchemaVersion(ctx context.Context, shard string) (uint32, error) {
	return s.schemaVersion(ctx, s.shardNamed(shard))
}

// MigrateWith migrates the shards with the migrations folder of fsys
// instead of the store's own.
func (s *Store) MigrateWith(ctx context.Context, log *slog.Logger, fsys fs.FS) (int, error) {
	return s.migrate(ctx, log, fsys)
}

// errDied stops a write as if its process died.
var errDied = errors.New("died")

// MoveHalfway does what a move does up to its copy (and, when flip is set,
// its change of placement), then stops as if its process died there.
func (s *Store) MoveHalfway(ctx context.Context, groupID, to string, flip bool) error {
	err := s.locked(ctx, groupID, func(tx writebehind.GroupLock) error {
		p, _, err := tx.Placement(ctx)
		if err != nil {
			return err
		}
		if _, err := markIntent(ctx, tx, intent{Move: &move{From: p.Shard, To: to}}, wholeAsOf(p)); err != nil {
			return err
		}
		if _, err := s.copyGroup(ctx, s.shardNamed(p.Shard), s.shardNamed(to), groupID); err != nil {
			return err
		}
		if flip {
			if _, err := tx.Place(ctx, to); err != nil {
				return err
			}
		}
		return errDied
	})
	if errors.Is(err, errDied) {
		return nil
	}
	return err
}

// GroupEventsOn counts the group's events on one shard.
func (s *Store) GroupEventsOn(ctx context.Context, shard, groupID string) (uint64, error) {
	return s.groupRowCount(ctx, s.shardNamed(shard), "events", groupID)
}

// NumberStudents gives the students ordinals on the group's shard, as a
// write that died after its lookups leaves them.
func (s *Store) NumberStudents(ctx context.Context, p writebehind.Placement, ids []string) error {
	sh, err := s.shardOf(p)
	if err != nil {
		return err
	}
	_, err = s.ordinals(ctx, sh, p.GroupID, ids)
	return err
}

// RawEvents reads the group's events from every shard: event id -> student
// id. An id found twice is an error. The tests check the store against
// what it was sent with it.
func (s *Store) RawEvents(ctx context.Context, groupID string) (map[string]string, error) {
	events := map[string]string{}
	for _, sh := range s.shards {
		rows, err := sh.query(ctx, `SELECT event_id, student_id FROM `+s.table("events")+` WHERE group_id = ?`, groupID)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, student string
			if err := rows.Scan(&id, &student); err != nil {
				rows.Close()
				return nil, err
			}
			if _, twice := events[id]; twice {
				rows.Close()
				return nil, fmt.Errorf("event %s of group %s is stored twice", id, groupID)
			}
			events[id] = student
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// setForTest sets *v to value until the test ends.
func setForTest[T any](t interface{ Cleanup(func()) }, v *T, value T) {
	old := *v
	*v = value
	t.Cleanup(func() { *v = old })
}

// SetMaxQueuedEvents sets the bound of the events waiting for a flush,
// until the test ends.
func SetMaxQueuedEvents(t interface{ Cleanup(func()) }, n int) { setForTest(t, &maxQueuedEvents, n) }

// SetApplyEvery sets how often the applier of stores opened after it
// applies the log, until the test ends.
func SetApplyEvery(t interface{ Cleanup(func()) }, d time.Duration) { setForTest(t, &applyEvery, d) }

// SetLogVacuumEvents sets how many events a process applies between two
// vacuums of the log, until the test ends.
func SetLogVacuumEvents(t interface{ Cleanup(func()) }, n int64) { setForTest(t, &logVacuumEvents, n) }

// SetMaxLogged sets the log's depth past which calls are refused, until
// the test ends.
func SetMaxLogged(t interface{ Cleanup(func()) }, n int) { setForTest(t, &maxLogged, n) }

// SetDirectEvents sets the size from which a group's events in one call
// are written at once, until the test ends.
func SetDirectEvents(t interface{ Cleanup(func()) }, n int) { setForTest(t, &directEvents, n) }

// SetReadRepairWait sets how long a read tries to repair an unfinished
// write before it reads as of the write before it, until the test ends.
func SetReadRepairWait(t interface{ Cleanup(func()) }, d time.Duration) {
	setForTest(t, &readRepairWait, d)
}

// InsertGroupRows stores the group rows that events make on the group's
// rows as of p.Seq, numbered seq, and nothing else, as a write that died
// after that INSERT leaves them.
func (s *Store) InsertGroupRows(ctx context.Context, p writebehind.Placement, seq int64, events []analytics.Event) error {
	sh, err := s.shardOf(p)
	if err != nil {
		return err
	}
	st, err := s.stateAt(ctx, sh, p, true)
	if err != nil {
		return err
	}
	delta, students := rollup.NewDelta(), []string{}
	for _, e := range events {
		delta.Add(e)
		students = append(students, e.StudentID)
	}
	ords, err := s.ordinals(ctx, sh, p.GroupID, students)
	if err != nil {
		return err
	}
	w := written{seq: seq}
	w.gkeys, w.grows = newGroupRows(delta, st, ords)
	return s.insertGroupRows(ctx, sh, w)
}

// ApplyDying writes what the log holds of the group to ClickHouse, as an
// apply does, then stops before its commit as if its process died there:
// the events stored and an intent recorded, the log and the enrolments as
// they were.
func (s *Store) ApplyDying(ctx context.Context, groupID string) error {
	err := s.dir.WithGroupsLock(ctx, []string{groupID}, writebehind.WaitApply, func(tx writebehind.GroupsLock) error {
		logged, err := tx.Logged(ctx, maxApplied)
		if err != nil {
			return err
		}
		writes := map[string]*groupWrite{}
		for _, lock := range tx.Locked() {
			writes[lock.GroupID()] = &groupWrite{tx: lock, events: logged[lock.GroupID()]}
		}
		if err := s.writeGroups(ctx, tx, writes, maxApplied); err != nil {
			return err
		}
		if w := writes[groupID]; w != nil && w.err != nil {
			return w.err
		}
		return errDied
	})
	if errors.Is(err, errDied) {
		return nil
	}
	return err
}

// ExpireHalfway does what ExpireDays does up to its intent and the
// deletion of the events before first, then stops as if its process died
// there.
func (s *Store) ExpireHalfway(ctx context.Context, groupID string, first analytics.Day) error {
	err := s.locked(ctx, groupID, func(tx writebehind.GroupLock) error {
		sh, p, err := s.placeForWrite(ctx, tx)
		if err != nil {
			return err
		}
		loc, err := tx.Location(ctx)
		if err != nil {
			return err
		}
		e := expiry{First: first, Before: first.Start(loc).UnixMilli()}
		if _, err := markIntent(ctx, tx, intent{Expire: &e, Months: []analytics.Day{first.MonthStart()}}, p.Seq); err != nil {
			return err
		}
		if err := s.deleteRows(ctx, sh, "events", `group_id = ? AND occurred_at < ?`, groupID, e.Before); err != nil {
			return err
		}
		return errDied
	})
	if errors.Is(err, errDied) {
		return nil
	}
	return err
}

// SetReadDrain sets how long a move lets reads of the old shard finish
// before it deletes the group's copy there, until the test ends.
func SetReadDrain(t interface{ Cleanup(func()) }, d time.Duration) { setForTest(t, &readDrain, d) }

// SetWarmBytes sets what a process's warm-up loads at most (0: nothing),
// until the test ends.
func SetWarmBytes(t interface{ Cleanup(func()) }, n int) { setForTest(t, &warmBytes, n) }

// WaitWarm waits until the process's warm-up ends.
func (s *Store) WaitWarm() { <-s.warmDone }

// KeptState says whether the process keeps a state of the group, and
// whether it holds the students' counts and their ordinals.
func (s *Store) KeptState(groupID string) (kept, withCounts, ordinals bool) {
	st := s.states.get(groupID)
	if st == nil {
		return false, false, false
	}
	st.ordinalsMu.Lock()
	defer st.ordinalsMu.Unlock()
	return true, st.withCounts, st.ordinals != nil
}

// KeptBytes is what the process's state of the group takes, by the
// cache's count; 0 when it keeps none.
func (s *Store) KeptBytes(groupID string) int {
	if st := s.states.get(groupID); st != nil {
		return st.bytes
	}
	return 0
}

// PreferReplica makes the shard's calls start at its replica addr, as
// they do once that replica answered last.
func (s *Store) PreferReplica(shard, addr string) {
	sh := s.shardNamed(shard)
	for i, r := range sh.replicas {
		if r.addr == addr {
			sh.preferred.Store(int32(i))
		}
	}
}

// PreferredReplica is the replica the shard's calls start at.
func (s *Store) PreferredReplica(shard string) string {
	sh := s.shardNamed(shard)
	return sh.replicas[sh.preferred.Load()].addr
}
