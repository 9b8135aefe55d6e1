package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"hash/maphash"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// The rollups behind the events (SQLite): a small flush writes its
// events, enrols their students and notes each new event's share of the
// rollups in rollups_behind, in its one transaction; about once a second
// the writer folds each school's shares into the rollups and deletes them,
// in one transaction (a quarter of the schools at a time), so that a
// rollup row is written once for a second's events of its school rather
// than once a flush.
//
// A fold writes exactly what the appends would have written, as rollups
// only add (counts summed, sets joined), in any order; it deletes what it
// folds in the same transaction, so a fold cut short folds nothing and the
// next one folds it all. Nothing reads a group's rollups before its shares
// are folded: a read calls Settle, which folds the group's shares first,
// and every other write of a group's usage (erasure, a change of zone,
// retention, offboarding) folds them first under the write lock.

const (
	// foldBehindEvery bounds how long an event's share waits for the
	// writer's fold (a read folds its group's at once). The writer folds
	// a part of the groups at a time (foldParts of them in turn, each part
	// once in foldBehindEvery), so that no fold holds the writer long.
	foldBehindEvery = time.Second
	foldParts       = 4
	// maxBehind is how many shares make the writer fold them all at once.
	maxBehind = 20_000
	// applyAtOnce is the size of a flush (its new events) that writes its
	// own rollups: a large batch shares its rows among its own events
	// already.
	applyAtOnce = 1_000
)

// behindStats is what the process knows of rollups_behind: how many
// shares wait there and since when the oldest (the writer's folds count
// what they leave, other processes' shares too; a group's fold takes its
// own off), and which part of the groups the writer folds next.
type behindStats struct {
	mu       sync.Mutex
	events   int
	oldest   time.Time
	lastPart time.Time // when the writer last folded a part
	part     uint64
}

// BehindStats tells how many events' shares of the rollups wait for a
// fold, and how long the oldest has waited (SQLite; none elsewhere).
func (s *Store) BehindStats() (events int, oldestAge time.Duration) {
	s.behind.mu.Lock()
	defer s.behind.mu.Unlock()
	if s.behind.events > 0 {
		oldestAge = time.Since(s.behind.oldest)
	}
	return s.behind.events, oldestAge
}

// countBehind reads how many shares wait in rollups_behind, and since
// when, into the process's count: those a process stopped before its fold
// left there, which the writer's folds take with its own.
func (s *Store) countBehind(ctx context.Context) error {
	if !s.dialect.rollupsBehind {
		return nil
	}
	var n int
	var oldest sql.NullInt64
	if err := s.read.QueryRowContext(ctx, `SELECT count(*), min(noted_at) FROM rollups_behind`).Scan(&n, &oldest); err != nil {
		return err
	}
	s.behind.mu.Lock()
	defer s.behind.mu.Unlock()
	s.behind.events, s.behind.oldest = n, fromMillis(oldest.Int64)
	return nil
}

// noteBehind writes the events' shares of the rollups to rollups_behind
// with tx, for a fold to write into the rollups.
func (s *Store) noteBehind(ctx context.Context, tx *txn, events []analytics.Event) error {
	now := time.Now()
	rows := make([][]any, len(events))
	for i, e := range events {
		rows[i] = []any{e.GroupID, e.StudentID, int(e.Day), int16(e.Metric), millis(now)}
	}
	if err := s.insertRows(ctx, tx, "rollups_behind (group_id, student_id, day, metric, noted_at)", behindTypes, rows, "", nil); err != nil {
		return err
	}
	s.behind.mu.Lock()
	defer s.behind.mu.Unlock()
	if s.behind.events == 0 {
		s.behind.oldest = now
	}
	s.behind.events += len(events)
	return nil
}

// behindTypes are the SQL types of a row of rollups_behind.
var behindTypes = []string{"text", "text", "integer", "smallint", "bigint"}

// foldBehind writes into the rollups, with tx, the shares waiting in
// rollups_behind of one group (groupID), or else of the groups pick picks
// (all of them if pick is nil), and deletes them. A share of a group that
// is gone is dropped (EraseGroup folds the group's first; this is for a
// group deleted by a process of an earlier version).
func (s *Store) foldBehind(ctx context.Context, tx *txn, groupID string, pick func(groupID string) bool) error {
	if !s.dialect.rollupsBehind {
		return nil
	}
	query := `SELECT b.seq, b.group_id, b.student_id, b.day, b.metric, b.noted_at, g.group_id IS NOT NULL
		FROM rollups_behind b LEFT JOIN groups g ON g.group_id = b.group_id`
	var args []any
	if groupID != "" {
		// A scan still (the table has no index but its order, so that
		// noting a share costs one row), of a second's shares at most.
		query += ` WHERE b.group_id = ?`
		args = append(args, groupID)
	}
	delta := rollup.NewDelta()
	var folded []int64
	left, oldest := 0, int64(0)
	err := s.query(ctx, tx, query, args, func(rows *sql.Rows) error {
		var e analytics.Event
		var seq, noted int64
		var exists bool
		if err := rows.Scan(&seq, &e.GroupID, &e.StudentID, &e.Day, &e.Metric, &noted, &exists); err != nil {
			return err
		}
		switch {
		case pick == nil || pick(e.GroupID):
			folded = append(folded, seq)
			if exists {
				delta.Add(e)
			}
		case left == 0 || noted < oldest:
			left, oldest = left+1, noted
		default:
			left++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(folded) > 0 {
		delta.TakeLastDays() // kept on the enrolments by the appends
		if err := s.applyDelta(ctx, tx, delta, nil); err != nil {
			return err
		}
		if groupID == "" && left == 0 {
			_, err = tx.ExecContext(ctx, `DELETE FROM rollups_behind`)
		} else {
			seqs, _ := json.Marshal(folded)
			_, err = tx.ExecContext(ctx, `DELETE FROM rollups_behind WHERE seq IN (SELECT value FROM json_each(?))`, string(seqs))
		}
		if err != nil {
			return err
		}
	}
	b := &s.behind
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case groupID != "":
		b.events = max(b.events-len(folded), 0)
	case left > 0:
		b.events, b.oldest = left, fromMillis(oldest)
	default:
		b.events = 0
	}
	return nil
}

// foldBehindDue is the writer's fold, between its flushes: a part of the
// groups each foldBehindEvery/foldParts, all of them when maxBehind wait
// (or, at the end, when any do). A fold that fails leaves the shares
// behind for the next one, which the age of the oldest tells
// (BehindStats, a metric); reads fold for themselves.
func (s *Store) foldBehindDue(end bool) {
	if !s.dialect.rollupsBehind {
		return
	}
	now := time.Now()
	b := &s.behind
	b.mu.Lock()
	var pick func(string) bool
	switch {
	case b.events == 0:
		b.mu.Unlock()
		return
	case end || b.events >= maxBehind:
	case now.Sub(b.lastPart) >= foldBehindEvery/foldParts:
		part := b.part
		b.part, b.lastPart = b.part+1, now
		pick = func(g string) bool { return maphash.String(writerSeed, g)%foldParts == part%foldParts }
	default:
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	ctx, cancel := s.bound(context.Background())
	defer cancel()
	_ = s.transactIn(ctx, "fold the rollups behind", txAppend, func(tx *txn) error { return s.foldBehind(ctx, tx, "", pick) })
}

// Settle folds the group's shares of the rollups waiting behind its
// events, if it has any: the reads that follow count every event stored
// before the call. (Without a share behind, AppendEvents answered once
// its events were where reads look.)
func (s *Store) Settle(ctx context.Context, groupID string) (context.Context, error) {
	if !s.dialect.rollupsBehind {
		return ctx, nil
	}
	bounded, cancel := s.bound(ctx)
	defer cancel()
	var behind bool
	if err := s.read.QueryRowContext(bounded, `SELECT EXISTS (SELECT 1 FROM rollups_behind WHERE group_id = ?)`, groupID).Scan(&behind); err != nil {
		return ctx, s.wrap("Settle", err)
	}
	if !behind {
		return ctx, nil
	}
	return ctx, s.transactIn(bounded, "Settle", txAppend, func(tx *txn) error { return s.foldBehind(bounded, tx, groupID, nil) })
}

// SettleGroups folds the shares waiting of any of the groups, in one
// transaction.
func (s *Store) SettleGroups(ctx context.Context, groupIDs []string) (context.Context, error) {
	if !s.dialect.rollupsBehind || len(groupIDs) == 0 {
		return ctx, nil
	}
	bounded, cancel := s.bound(ctx)
	defer cancel()
	in, args := inList(s.dialect, groupIDs, "text")
	var behind bool
	if err := s.read.QueryRowContext(bounded, `SELECT EXISTS (SELECT 1 FROM rollups_behind WHERE group_id `+in+`)`, args...).Scan(&behind); err != nil {
		return ctx, s.wrap("SettleGroups", err)
	}
	if !behind {
		return ctx, nil
	}
	asked := make(map[string]bool, len(groupIDs))
	for _, id := range groupIDs {
		asked[id] = true
	}
	return ctx, s.transactIn(bounded, "SettleGroups", txAppend, func(tx *txn) error {
		return s.foldBehind(bounded, tx, "", func(groupID string) bool { return asked[groupID] })
	})
}
