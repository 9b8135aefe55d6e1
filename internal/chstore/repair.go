package chstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

func (s *Store) EraseStudent(ctx context.Context, groupID, studentID string) ([]analytics.Deleted, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var deleted []analytics.Deleted
	err := s.locked(ctx, groupID, func(tx GroupLock) error {
		enrolled, err := tx.DeleteStudent(ctx, studentID)
		if err != nil {
			return err
		}
		deleted = enrolled
		_, placed, err := tx.Placement(ctx)
		if err != nil {
			return err
		}
		if placed {
			sh, p, err := s.placeForWrite(ctx, tx)
			if err != nil {
				return err
			}
			usage, err := s.eraseUsage(ctx, tx, sh, p, studentID)
			if err != nil {
				return err
			}
			deleted = append(deleted, usage...)
		}
		if len(deleted) == 0 {
			return analytics.Errorf(analytics.NotFound, "Student %q not found in group %q", studentID, groupID)
		}
		return nil
	})
	return deleted, s.wrap("EraseStudent", err)
}

// eraseUsage takes the student out of the group rows and the rows of
// counts (one insert each of their new state), then deletes the
// student's events and ordinal and waits for ClickHouse to have deleted
// them. It returns what it removed, and rewrote without the student.
func (s *Store) eraseUsage(ctx context.Context, tx GroupLock, sh *shard, p Placement, studentID string) ([]analytics.Deleted, error) {
	groupID := p.GroupID
	var events uint64
	if err := sh.queryRow(ctx, `SELECT count() FROM `+s.table("events")+` WHERE group_id = ? AND student_id = ?`,
		groupID, studentID).Scan(&events); err != nil {
		return nil, err
	}
	ordinals, err := s.studentOrdinals(ctx, sh, groupID, studentID)
	if err != nil {
		return nil, err
	}
	if events == 0 && len(ordinals) == 0 {
		return nil, nil
	}
	st, err := s.stateAt(ctx, sh, p, true)
	if err != nil {
		return nil, err
	}
	// The student's share of each period, and the rows without them.
	shares := map[period]analytics.Counts{}
	var counts []countsRow
	for _, n := range ordinals {
		for p := range st.counts {
			b := st.chunk(p.span, p.key, rollup.ChunkOf(int(n)))
			if b == nil {
				continue
			}
			students, err := rollup.DecodeCounts(b)
			if err != nil {
				return nil, fmt.Errorf("student counts of %s %s: %w", groupID, p.key, err)
			}
			i := slices.IndexFunc(students, func(sc rollup.StudentCounts) bool { return sc.Ordinal == int(n) })
			if i < 0 {
				continue
			}
			share := shares[p]
			share.Add(&students[i].Counts)
			shares[p] = share
			counts = append(counts, countsRow{rollup.CountsKey{GroupID: groupID, Span: p.span, Key: p.key, Chunk: rollup.ChunkOf(int(n))},
				rollup.AppendCounts(nil, slices.Delete(students, i, i+1))})
		}
	}
	in := intent{Erase: studentID}
	keys := make([]rollup.GroupKey, 0, len(shares))
	for p := range shares {
		keys = append(keys, rollup.GroupKey{GroupID: groupID, Span: p.span, Key: p.key})
		if m := p.key.MonthStart(); !slices.Contains(in.Months, m) {
			in.Months = append(in.Months, m)
		}
	}
	slices.SortFunc(keys, func(a, b rollup.GroupKey) int {
		return cmp.Or(cmp.Compare(a.Span, b.Span), cmp.Compare(a.Key, b.Key))
	})
	seq, err := markIntent(ctx, tx, in, p.Seq)
	if err != nil {
		return nil, err
	}
	rows := make([]analytics.GroupRollup, len(keys))
	for i, k := range keys {
		r := st.groupRow(k.Span, k.Key)
		share := shares[period{k.Span, k.Key}]
		for m := range r.Counts {
			r.Counts[m] -= share[m]
		}
		for _, n := range ordinals {
			r.LiveLectureUsers.Remove(int(n))
			r.ChatUsers.Remove(int(n))
		}
		rows[i] = r
	}
	if err := s.insertGroupRows(ctx, sh, written{seq: seq, gkeys: keys, grows: rows}); err != nil {
		return nil, err
	}
	if err := s.insertCountsRows(ctx, sh, written{seq: seq, counts: counts}); err != nil {
		return nil, err
	}
	if err := s.deleteStudentRows(ctx, sh, groupID, studentID); err != nil {
		return nil, err
	}
	deleted := []analytics.Deleted{{Store: "clickhouse", Table: "events", Rows: int64(events)},
		{Store: "clickhouse", Table: "students", Rows: int64(len(ordinals))},
		{Store: "clickhouse", Table: "student_counts (rewritten)", Rows: int64(len(counts))},
		{Store: "clickhouse", Table: "group_rollups (rewritten)", Rows: int64(len(rows))}}
	return nonZero(deleted), nil
}

// studentOrdinals returns the ordinals the student holds (one, or none).
func (s *Store) studentOrdinals(ctx context.Context, sh *shard, groupID, studentID string) ([]uint32, error) {
	var ordinals []uint32
	rows, err := sh.query(ctx, `SELECT DISTINCT ordinal FROM `+s.table("students")+` WHERE group_id = ? AND student_id = ?`, groupID, studentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var n uint32
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		ordinals = append(ordinals, n)
	}
	return ordinals, rows.Err()
}

// erasedMark starts the id under which an erased student's ordinal stays
// taken: student ids have no control characters, and an ordinal is never
// given to another student (analytics.UsageStore.Ordinals).
const erasedMark = "\x00erased "

// deleteStudentRows deletes every row naming the student, marking their
// ordinal taken, and waits until the deletions are done.
func (s *Store) deleteStudentRows(ctx context.Context, sh *shard, groupID, studentID string) error {
	ordinals, err := s.studentOrdinals(ctx, sh, groupID, studentID)
	if err != nil {
		return err
	}
	if len(ordinals) > 0 {
		err := sh.insert(ctx, `INSERT INTO `+s.table("students")+` (group_id, student_id, ordinal)`, func(b driver.Batch) error {
			for _, n := range ordinals {
				if err := b.Append(groupID, erasedMark+strconv.Itoa(int(n)), n); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, t := range []string{"events", "students"} {
		if err := s.deleteRows(ctx, sh, t, `group_id = ? AND student_id = ?`, groupID, studentID); err != nil {
			return err
		}
	}
	return s.awaitMutations(ctx, sh)
}

// awaitMutations waits until every replica of the shard has done every
// deletion of the store's tables: ClickHouse runs them in the background,
// on each replica by itself. A replica that is down fails the wait, so
// that no replica that comes back can answer with what was deleted.
func (s *Store) awaitMutations(ctx context.Context, sh *shard) error {
	return sh.onEvery(func(r *replica) error {
		for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
			var pending uint64
			if err := r.conn.QueryRow(ctx, `SELECT count() FROM system.mutations WHERE database = ? AND NOT is_done`,
				s.database).Scan(&pending); err != nil {
				return err
			}
			if pending == 0 {
				return nil
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return fmt.Errorf("waiting for ClickHouse to delete: %w", ctx.Err())
			}
		}
	})
}

// Rebuild recomputes every rollup of the group from its raw events,
// cutting days in loc. It holds the group's lock throughout.
func (s *Store) Rebuild(ctx context.Context, groupID, zone string) error {
	loc, err := analytics.LoadZone(zone)
	if err != nil {
		return s.wrap("Rebuild", err)
	}
	return s.wrap("Rebuild", s.locked(ctx, groupID, func(tx GroupLock) error {
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
		return s.recompute(ctx, sh, groupID, intent{All: true}, loc, seq)
	}))
}

// repair finishes or undoes what the write that recorded p's intent left:
// it redoes the erasure it meant, enrols the students whose events it
// stored, and recomputes the months it touched from the raw events.
func (s *Store) repair(ctx context.Context, tx GroupLock, sh *shard, p Placement) error {
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
		if err := s.deleteStudentRows(ctx, sh, p.GroupID, in.Erase); err != nil {
			return err
		}
		if _, err := tx.DeleteStudent(ctx, in.Erase); err != nil {
			return err
		}
	}
	if in.Expire != nil {
		if _, err := s.expireRows(ctx, sh, p, in.Expire, wholeAsOf(p), seq); err != nil {
			return err
		}
	}
	if len(in.Students) > 0 {
		ids := make([]string, len(in.Students))
		for i, u := range in.Students {
			ids[i] = u.ID
		}
		used, err := s.eventsHaving(ctx, sh, p.GroupID, "student_id", ids)
		if err != nil {
			return err
		}
		updates := slices.DeleteFunc(slices.Clone(in.Students), func(u analytics.StudentUpdate) bool { return !used[u.ID] })
		if err := tx.SaveStudents(ctx, updates); err != nil {
			return err
		}
	}
	return s.recompute(ctx, sh, p.GroupID, in, loc, seq)
}

// recompute sets the rollups of the months in (every month, for in.All)
// to what the raw events say, month by month.
func (s *Store) recompute(ctx context.Context, sh *shard, groupID string, in intent, loc *time.Location, seq int64) error {
	months := in.Months
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
	return nil
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
