package chstore

import (
	"context"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// expiry is a retention run's cut: the group's usage of the days before
// First goes.
type expiry struct {
	First  analytics.Day `json:"first"`
	Before int64         `json:"before"` // the instant First starts, in Unix milliseconds
}

// gone reports whether the rollup of p covers only days before the cut.
// (The rows of a month the cut falls in are recomputed from its events.)
func (e *expiry) gone(p period) bool {
	switch p.span() {
	case analytics.SpanDay:
		return p.key() < e.First
	case analytics.SpanMonth:
		return p.key() < e.First.MonthStart()
	}
	return false
}

// ExpireDays holds the group's lock throughout: the directory's cut and
// the log's events before it go with its transaction, ClickHouse's rows
// under an intent that a write or read after a failure repairs.
func (s *Store) ExpireDays(ctx context.Context, groupID string, first analytics.Day) ([]analytics.Deleted, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var deleted []analytics.Deleted
	var ran bool
	err := s.locked(ctx, groupID, func(tx writebehind.GroupLock) error {
		loc, err := tx.Location(ctx)
		if err != nil {
			return err
		}
		before := first.Start(loc)
		if ran, deleted, err = tx.ExpireBefore(ctx, first, before); err != nil || !ran {
			return err
		}
		if _, placed, err := tx.Placement(ctx); err != nil || !placed {
			return err
		}
		sh, p, err := s.placeForWrite(ctx, tx)
		if err != nil {
			return err
		}
		usage, err := s.expireUsage(ctx, tx, sh, p, loc, expiry{First: first, Before: before.UnixMilli()})
		deleted = append(deleted, usage...)
		return err
	})
	return deleted, ran, s.wrap("ExpireDays", err)
}

// expireUsage deletes the group's events before the cut and empties its
// rollups of the days and months before it, then recomputes the month the
// cut falls in from its events that stay. It returns what it removed.
func (s *Store) expireUsage(ctx context.Context, tx writebehind.GroupLock, sh *shard, p writebehind.Placement, loc *time.Location, e expiry) ([]analytics.Deleted, error) {
	var events uint64
	if err := sh.queryRow(ctx, `SELECT count() FROM `+s.table("events")+` WHERE group_id = ? AND occurred_at < ?`,
		p.GroupID, e.Before).Scan(&events); err != nil {
		return nil, err
	}
	in := intent{Expire: &e}
	if m := e.First.MonthStart(); m < e.First {
		in.Months = []analytics.Day{m}
	}
	seq, err := markIntent(ctx, tx, in, p.Seq)
	if err != nil {
		return nil, err
	}
	emptied, err := s.expireRows(ctx, sh, p, &e, p.Seq, seq)
	if err != nil {
		return nil, err
	}
	if err := s.recompute(ctx, sh, p, in, loc, seq); err != nil {
		return nil, err
	}
	deleted := nonZero(append([]analytics.Deleted{{Store: "clickhouse", Table: "events", Rows: int64(events)}}, emptied...))
	if len(in.Months) > 0 && len(deleted) > 0 {
		// The month the cut falls in lost the share of its days before it.
		deleted = append(deleted, analytics.Deleted{Store: "clickhouse", Table: "group_rollups (rewritten)", Rows: 1})
	}
	return deleted, nil
}

// expireRows empties the group's rows of the periods before e's cut that
// hold usage as of write whole (a new row of each, numbered seq, so that
// every process's kept state takes it), deletes the rows of those periods
// written up to whole, and the events before the cut, and waits for
// ClickHouse to have done it on every replica. Run again (a repair), it
// empties what is left and deletes nothing twice. It returns the rows it
// emptied.
func (s *Store) expireRows(ctx context.Context, sh *shard, p writebehind.Placement, e *expiry, whole, seq int64) ([]analytics.Deleted, error) {
	groupID := p.GroupID
	st, err := s.stateAt(ctx, sh, writebehind.Placement{GroupID: groupID, Shard: sh.name, Seq: whole, Epoch: p.Epoch}, true)
	if err != nil {
		return nil, err
	}
	w := written{seq: seq}
	for per, r := range st.groups {
		if e.gone(per) && (r.Counts != analytics.Counts{} || r.LiveLectureUsers.Len() > 0 || r.ChatUsers.Len() > 0) {
			w.gkeys = append(w.gkeys, rollup.GroupKey{GroupID: groupID, Span: per.span(), Key: per.key()})
			w.grows = append(w.grows, analytics.GroupRollup{Key: per.key()})
		}
	}
	empty := rollup.AppendCounts(nil, nil)
	for per, chunks := range st.counts {
		if !e.gone(per) {
			continue
		}
		for chunk, b := range chunks {
			if len(b) > len(empty) {
				w.counts = append(w.counts, countsRow{rollup.CountsKey{GroupID: groupID, Span: per.span(), Key: per.key(), Chunk: chunk}, empty})
			}
		}
	}
	if err := s.insertGroupRows(ctx, sh, w); err != nil {
		return nil, err
	}
	if err := s.insertCountsRows(ctx, sh, w); err != nil {
		return nil, err
	}
	if err := s.deleteRows(ctx, sh, "events", `group_id = ? AND occurred_at < ?`, groupID, e.Before); err != nil {
		return nil, err
	}
	for _, table := range []string{"group_rollups", "student_counts"} {
		if err := s.deleteRows(ctx, sh, table, `group_id = ? AND version <= ? AND (span = 0 AND period < ? OR span = 1 AND period < ?)`,
			groupID, uint64(whole), int32(e.First), int32(e.First.MonthStart())); err != nil {
			return nil, err
		}
	}
	if err := s.awaitMutations(ctx, sh); err != nil {
		return nil, err
	}
	return []analytics.Deleted{{Store: "clickhouse", Table: "group_rollups", Rows: int64(len(w.gkeys))},
		{Store: "clickhouse", Table: "student_counts", Rows: int64(len(w.counts))}}, nil
}

// nonZero returns deleted without its tables of no rows.
func nonZero(deleted []analytics.Deleted) []analytics.Deleted {
	return slices.DeleteFunc(deleted, func(d analytics.Deleted) bool { return d.Rows == 0 })
}
