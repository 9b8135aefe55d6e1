package chstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// Intents and repair: every write of a group records what it means to do
// (its intent) in the directory before it writes a row, and the next
// write or read of the group that finds an intent left behind recomputes
// the rollups it names from the raw events.

// intent is what a write of a group's usage means to do, recorded in the
// directory before it writes a row: should it die half way, the next
// write (or read) of the group repairs what it left from the raw events.
type intent struct {
	// Months are the first days of the months whose rollups it changes.
	Months []analytics.Day `json:"months,omitempty"`
	// Students are the enrolments of its new events' students, each
	// once, with their names (enrolment).
	Students []analytics.StudentUpdate `json:"students,omitempty"`
	// Erase is the student it erases; ErasedBy who asked, and EraseBegan
	// when (Unix milliseconds): a repair that finishes the erasure writes
	// its receipt.
	Erase      string `json:"erase,omitempty"`
	ErasedBy   string `json:"erasedBy,omitempty"`
	EraseBegan int64  `json:"eraseBegan,omitempty"`
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
func wholeAsOf(p writebehind.Placement) int64 {
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

// markIntent records in, the intent of a write on the rows whole as of
// write number whole, and returns the write's number.
func markIntent(ctx context.Context, tx writebehind.GroupLock, in intent, whole int64) (int64, error) {
	in.Whole = &whole
	b, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	return tx.MarkIntent(ctx, b)
}

// settled returns the placement p after repairing what the unfinished
// write it names left, if any.
func (s *Store) settled(ctx context.Context, tx writebehind.GroupLock, sh *shard, p writebehind.Placement) (writebehind.Placement, error) {
	if p.Intent == nil {
		return p, nil
	}
	if err := s.repair(ctx, tx, sh, p); err != nil {
		return p, fmt.Errorf("repair: %w", err)
	}
	p, _, err := tx.Placement(ctx)
	return p, err
}

// Rebuild recomputes every rollup of the group from its raw events,
// cutting days in loc. It holds the group's lock throughout.
func (s *Store) Rebuild(ctx context.Context, groupID, zone string) error {
	loc, err := analytics.LoadZone(zone)
	if err != nil {
		return s.wrap("Rebuild", err)
	}
	return s.wrap("Rebuild", s.locked(ctx, groupID, func(tx writebehind.GroupLock) error {
		// Committed with the lock's transaction, after the new rows.
		if err := tx.SetTimeZone(ctx, zone); err != nil {
			return err
		}
		p, ok, err := tx.Placement(ctx)
		if err != nil || !ok {
			return err
		}
		sh, err := s.shardOf(p)
		if err != nil {
			return err
		}
		seq, err := markIntent(ctx, tx, intent{All: true}, wholeAsOf(p))
		if err != nil {
			return err
		}
		return s.recompute(ctx, sh, p, intent{All: true}, loc, seq)
	}))
}

// repair finishes or undoes what the write that recorded p's intent left:
// it redoes the erasure it meant, enrols the students whose events it
// stored, and recomputes the months it touched from the raw events.
func (s *Store) repair(ctx context.Context, tx writebehind.GroupLock, sh *shard, p writebehind.Placement) error {
	var in intent
	if err := json.Unmarshal(p.Intent, &in); err != nil {
		return fmt.Errorf("intent of group %s: %w", p.GroupID, err)
	}
	if in.Move != nil {
		return s.settleMove(ctx, p, in.Move)
	}
	if err := s.settleQuorums(ctx, sh); err != nil {
		return err
	}
	loc, err := tx.Location(ctx)
	if err != nil {
		return err
	}
	seq, err := tx.MarkIntent(ctx, p.Intent)
	if err != nil {
		return err
	}
	if in.Erase != "" {
		if err := s.finishErasure(ctx, tx, sh, p.GroupID, in); err != nil {
			return err
		}
	}
	if in.Expire != nil {
		if _, err := s.expireRows(ctx, sh, p, in.Expire, wholeAsOf(p), seq); err != nil {
			return err
		}
	}
	var enrol []analytics.StudentUpdate
	if len(in.Students) > 0 {
		ids := make([]string, len(in.Students))
		for i, u := range in.Students {
			ids[i] = u.ID
		}
		used, err := s.eventsHaving(ctx, sh, p.GroupID, "student_id", ids, math.MaxInt64)
		if err != nil {
			return err
		}
		enrol = slices.DeleteFunc(slices.Clone(in.Students), func(u analytics.StudentUpdate) bool { return !used[u.ID] })
	}
	if err := s.recompute(ctx, sh, p, in, loc, seq); err != nil {
		return err
	}
	// Enrolled last, as an apply enrols in its commit: the students' rows
	// are then locked for the commit only, not while ClickHouse is written
	// (which may wait for a quorum), so that a read enrolling the same
	// students from the log (readPending) does not wait for it.
	if len(enrol) == 0 {
		return nil
	}
	return tx.SaveStudents(ctx, enrol)
}

// recompute sets the rollups of the months in (every month, for in.All)
// to what the raw events say, month by month, and the rows of last days
// to what the days then say, as write seq of the group placed as p.
func (s *Store) recompute(ctx context.Context, sh *shard, p writebehind.Placement, in intent, loc *time.Location, seq int64) error {
	groupID, months := p.GroupID, in.Months
	if in.All {
		var err error
		if months, err = s.allMonths(ctx, sh, groupID, loc); err != nil {
			return err
		}
	}
	for _, m := range months {
		if err := s.recomputeMonth(ctx, sh, groupID, m, loc, seq); err != nil {
			return fmt.Errorf("month %s: %w", m, err)
		}
	}
	return s.recomputeLastDays(ctx, sh, p, seq)
}

// allMonths returns every month that holds the group's events (cut in
// loc) or rollups (cut as before).
func (s *Store) allMonths(ctx context.Context, sh *shard, groupID string, loc *time.Location) ([]analytics.Day, error) {
	var months []analytics.Day
	add := func(m analytics.Day) {
		if !slices.Contains(months, m) {
			months = append(months, m)
		}
	}
	var first, last int64
	var n uint64
	if err := sh.queryRow(ctx, `SELECT count(), min(occurred_at), max(occurred_at) FROM `+s.table("events")+` WHERE group_id = ?`,
		groupID).Scan(&n, &first, &last); err != nil {
		return nil, err
	}
	if n > 0 {
		end := analytics.DayOf(time.UnixMilli(last), loc).MonthStart()
		for m := analytics.DayOf(time.UnixMilli(first), loc).MonthStart(); m <= end; m = m.NextMonthStart() {
			add(m)
		}
	}
	rows, err := sh.query(ctx, `SELECT DISTINCT period FROM `+s.table("group_rollups")+` WHERE group_id = ? AND span = 1`, groupID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var m int32
		if err := rows.Scan(&m); err != nil {
			return nil, err
		}
		add(analytics.Day(m))
	}
	slices.Sort(months)
	return months, rows.Err()
}

// recomputeMonth sets the rollups of month m (its days and itself) to what
// the events of m say: the student rows by inserting the difference, the
// group rows by inserting their new state, zero where no usage is left.
func (s *Store) recomputeMonth(ctx context.Context, sh *shard, groupID string, m analytics.Day, loc *time.Location, seq int64) error {
	end := m.NextMonthStart()
	target := rollup.NewDelta()
	rows, err := sh.query(ctx, `SELECT event_id, student_id, occurred_at, metric FROM `+s.table("events")+`
		WHERE group_id = ? AND occurred_at >= ? AND occurred_at < ?`,
		groupID, m.Start(loc).UnixMilli(), end.Start(loc).UnixMilli())
	if err != nil {
		return err
	}
	for rows.Next() {
		e := analytics.Event{GroupID: groupID}
		var at int64
		var metric uint8
		if err := rows.Scan(&e.ID, &e.StudentID, &at, &metric); err != nil {
			rows.Close()
			return err
		}
		e.OccurredAt, e.Metric = time.UnixMilli(at).UTC(), analytics.Metric(metric)
		e.Day = analytics.DayOf(e.OccurredAt, loc)
		target.Add(e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	ordinals, err := s.ordinals(ctx, sh, groupID, target.StudentIDs()[groupID])
	if err != nil {
		return err
	}
	// Rows of counts: the new state of every chunk of m's periods that has
	// a row (of any write, finished or not) or usage, empty where it has
	// none.
	stored, err := s.monthChunks(ctx, sh, groupID, m)
	if err != nil {
		return err
	}
	// The rows of last days are not a month's: recompute sets them last.
	maps.DeleteFunc(target.Students, func(k rollup.StudentKey, _ *analytics.Counts) bool { return k.Span == analytics.SpanLast })
	counts, err := newCountsRows(&state{}, target, ordinals)
	if err != nil {
		return err
	}
	for _, r := range counts {
		delete(stored, r.key)
	}
	for k := range stored {
		counts = append(counts, countsRow{k, rollup.AppendCounts(nil, nil)})
	}
	if err := s.insertCountsRows(ctx, sh, written{seq: seq, counts: counts}); err != nil {
		return err
	}
	// Group rows: the new state of every day of m and of m itself.
	var keys []rollup.GroupKey
	for d := m; d < end; d++ {
		keys = append(keys, rollup.GroupKey{GroupID: groupID, Span: analytics.SpanDay, Key: d})
	}
	keys = append(keys, rollup.GroupKey{GroupID: groupID, Span: analytics.SpanMonth, Key: m})
	groupRows := make([]analytics.GroupRollup, len(keys))
	for i, k := range keys {
		r := analytics.GroupRollup{Key: k.Key}
		if d := target.Groups[k]; d != nil {
			r.Counts = d.Counts
			for id := range d.LiveLectureUsers {
				r.LiveLectureUsers.Add(ordinals[id])
			}
			for id := range d.ChatUsers {
				r.ChatUsers.Add(ordinals[id])
			}
		}
		groupRows[i] = r
	}
	return s.insertGroupRows(ctx, sh, written{seq: seq, gkeys: keys, grows: groupRows})
}

// monthChunks returns the keys of the rows of counts of month m's days
// and of m itself, of every version.
func (s *Store) monthChunks(ctx context.Context, sh *shard, groupID string, m analytics.Day) (map[rollup.CountsKey]bool, error) {
	rows, err := sh.query(ctx, `SELECT DISTINCT span, period, chunk FROM `+s.table("student_counts")+`
		WHERE group_id = ? AND (span = 0 AND period >= ? AND period < ? OR span = 1 AND period = ?)`,
		groupID, int32(m), int32(m.NextMonthStart()), int32(m))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	keys := map[rollup.CountsKey]bool{}
	for rows.Next() {
		var span uint8
		var key int32
		var chunk uint32
		if err := rows.Scan(&span, &key, &chunk); err != nil {
			return nil, err
		}
		keys[rollup.CountsKey{GroupID: groupID, Span: analytics.Span(span), Key: analytics.Day(key), Chunk: int(chunk)}] = true
	}
	return keys, rows.Err()
}
