package chstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

func (s *Store) EraseStudent(ctx context.Context, groupID, studentID string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.wrap("EraseStudent", s.locked(ctx, groupID, func(tx GroupLock) error {
		enrolled, err := tx.DeleteStudent(ctx, studentID)
		if err != nil {
			return err
		}
		p, placed, err := tx.Placement(ctx)
		if err != nil {
			return err
		}
		used := false
		if placed {
			sh, err := s.placeForWrite(ctx, tx)
			if err != nil {
				return err
			}
			if used, err = s.eraseUsage(ctx, tx, sh, p, studentID); err != nil {
				return err
			}
		}
		if !enrolled && !used {
			return analytics.Errorf(analytics.NotFound, "Student %q not found in group %q", studentID, groupID)
		}
		return nil
	}))
}

// eraseUsage takes the student's share out of the group rollups (one
// insert of their new state), then deletes the student's rows and waits
// for ClickHouse to have deleted them. It reports whether the student had
// events.
func (s *Store) eraseUsage(ctx context.Context, tx GroupLock, sh *shard, p Placement, studentID string) (bool, error) {
	var events uint64
	if err := sh.conn.QueryRow(ctx, `SELECT count() FROM `+s.table("events")+` WHERE group_id = ? AND student_id = ?`,
		p.GroupID, studentID).Scan(&events); err != nil {
		return false, err
	}
	shares, err := s.studentShares(ctx, sh, p.GroupID, studentID)
	if err != nil {
		return false, err
	}
	if events == 0 && len(shares) == 0 {
		return false, nil
	}
	in := intent{Erase: studentID}
	keys := make([]rollup.GroupKey, 0, len(shares))
	for k := range shares {
		keys = append(keys, k)
		if m := k.Key.MonthStart(); !slices.Contains(in.Months, m) {
			in.Months = append(in.Months, m)
		}
	}
	slices.SortFunc(keys, func(a, b rollup.GroupKey) int {
		return cmp.Or(cmp.Compare(a.Span, b.Span), cmp.Compare(a.Key, b.Key))
	})
	seq, err := markIntent(ctx, tx, in)
	if err != nil {
		return false, err
	}
	ordinals, err := s.ordinals(ctx, sh, p.GroupID, []string{studentID})
	if err != nil {
		return false, err
	}
	current, err := s.groupRows(ctx, sh, p.GroupID, keys)
	if err != nil {
		return false, err
	}
	rows := make([]analytics.GroupRollup, len(keys))
	for i, k := range keys {
		r := current[k]
		share := shares[k]
		for m := range r.Counts {
			r.Counts[m] -= share[m]
		}
		r.LiveLectureUsers.Remove(ordinals[studentID])
		r.ChatUsers.Remove(ordinals[studentID])
		rows[i] = r
	}
	if err := s.insertGroupRows(ctx, sh, keys, rows, seq); err != nil {
		return false, err
	}
	if err := s.deleteStudentRows(ctx, sh, p.GroupID, studentID); err != nil {
		return false, err
	}
	return events > 0, nil
}

// studentShares returns the student's counts in each of the group's rollup
// periods.
func (s *Store) studentShares(ctx context.Context, sh *shard, groupID, studentID string) (map[rollup.GroupKey]analytics.Counts, error) {
	rows, err := sh.conn.Query(ctx, `SELECT span, period, `+studentSums+` FROM `+s.table("student_rollups")+`
		WHERE group_id = ? AND student_id = ? GROUP BY span, period`, groupID, studentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	shares := map[rollup.GroupKey]analytics.Counts{}
	for rows.Next() {
		var span uint8
		var period int32
		var c analytics.Counts
		if err := rows.Scan(rollup.ScanDest(&c, &span, &period)...); err != nil {
			return nil, err
		}
		if c != (analytics.Counts{}) {
			shares[rollup.GroupKey{GroupID: groupID, Span: analytics.Span(span), Key: analytics.Day(period)}] = c
		}
	}
	return shares, rows.Err()
}

// erasedMark starts the id under which an erased student's ordinal stays
// taken: student ids have no control characters, and an ordinal is never
// given to another student (analytics.UsageStore.Ordinals).
const erasedMark = "\x00erased "

// deleteStudentRows deletes every row naming the student, marking their
// ordinal taken, and waits until the deletions are done.
func (s *Store) deleteStudentRows(ctx context.Context, sh *shard, groupID, studentID string) error {
	var ordinals []uint32
	rows, err := sh.conn.Query(ctx, `SELECT ordinal FROM `+s.table("students")+` WHERE group_id = ? AND student_id = ?`, groupID, studentID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var n uint32
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		ordinals = append(ordinals, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(ordinals) > 0 {
		batch, err := sh.conn.PrepareBatch(ctx, `INSERT INTO `+s.table("students")+` (group_id, student_id, ordinal)`)
		if err != nil {
			return err
		}
		for _, n := range ordinals {
			if err := batch.Append(groupID, erasedMark+strconv.Itoa(int(n)), n); err != nil {
				batch.Abort()
				return err
			}
		}
		if err := batch.Send(); err != nil {
			return err
		}
	}
	for _, t := range []string{"events", "student_rollups", "students"} {
		if err := sh.conn.Exec(ctx, `ALTER TABLE `+s.table(t)+` DELETE WHERE group_id = ? AND student_id = ?`, groupID, studentID); err != nil {
			return err
		}
	}
	return s.awaitMutations(ctx, sh)
}

// awaitMutations waits until the shard has done every deletion of the
// store's tables: ClickHouse runs them in the background.
func (s *Store) awaitMutations(ctx context.Context, sh *shard) error {
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		var pending uint64
		if err := sh.conn.QueryRow(ctx, `SELECT count() FROM system.mutations WHERE database = ? AND NOT is_done`,
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
}

// Rebuild recomputes every rollup of the group from its raw events,
// cutting days in loc. It holds the group's lock throughout.
func (s *Store) Rebuild(ctx context.Context, groupID string, loc *time.Location) error {
	return s.wrap("Rebuild", s.locked(ctx, groupID, func(tx GroupLock) error {
		p, ok, err := tx.Placement(ctx)
		if err != nil || !ok {
			return err
		}
		sh, err := s.shardOf(p)
		if err != nil {
			return err
		}
		seq, err := markIntent(ctx, tx, intent{All: true})
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
	if err := sh.conn.QueryRow(ctx, `SELECT count(), min(occurred_at), max(occurred_at) FROM `+s.table("events")+` WHERE group_id = ?`,
		groupID).Scan(&n, &first, &last); err != nil {
		return nil, err
	}
	if n > 0 {
		end := analytics.DayOf(time.UnixMilli(last), loc).MonthStart()
		for m := analytics.DayOf(time.UnixMilli(first), loc).MonthStart(); m <= end; m = m.NextMonthStart() {
			add(m)
		}
	}
	rows, err := sh.conn.Query(ctx, `SELECT DISTINCT period FROM `+s.table("group_rollups")+` WHERE group_id = ? AND span = 1`, groupID)
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
	rows, err := sh.conn.Query(ctx, `SELECT event_id, student_id, occurred_at, metric FROM `+s.table("events")+`
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
	// Student rows: what is there now, and the difference to the target.
	current, err := s.monthStudentRows(ctx, sh, groupID, m)
	if err != nil {
		return err
	}
	diff := map[rollup.StudentKey]*analytics.Counts{}
	for k, c := range target.Students {
		d := *c
		diff[k] = &d
	}
	for k, c := range current {
		d := diff[k]
		if d == nil {
			d = new(analytics.Counts)
			diff[k] = d
		}
		for i := range d {
			d[i] -= c[i]
		}
	}
	var studentKeys []rollup.StudentKey
	for k, d := range diff {
		if *d != (analytics.Counts{}) {
			studentKeys = append(studentKeys, k)
		}
	}
	if err := s.insertStudentRows(ctx, sh, studentKeys, diff); err != nil {
		return err
	}
	// Group rows: the new state of every day of m and of m itself.
	ordinals, err := s.ordinals(ctx, sh, groupID, target.StudentIDs()[groupID])
	if err != nil {
		return err
	}
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
	return s.insertGroupRows(ctx, sh, keys, groupRows, seq)
}

// monthStudentRows returns the current student rows of month m's days and
// of m itself.
func (s *Store) monthStudentRows(ctx context.Context, sh *shard, groupID string, m analytics.Day) (map[rollup.StudentKey]analytics.Counts, error) {
	rows, err := sh.conn.Query(ctx, `SELECT span, period, student_id, `+studentSums+` FROM `+s.table("student_rollups")+`
		WHERE group_id = ? AND (span = 0 AND period >= ? AND period < ? OR span = 1 AND period = ?)
		GROUP BY span, period, student_id`, groupID, int32(m), int32(m.NextMonthStart()), int32(m))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	current := map[rollup.StudentKey]analytics.Counts{}
	for rows.Next() {
		var span uint8
		var period int32
		var id string
		var c analytics.Counts
		if err := rows.Scan(rollup.ScanDest(&c, &span, &period, &id)...); err != nil {
			return nil, err
		}
		if c != (analytics.Counts{}) {
			current[rollup.StudentKey{GroupID: groupID, Span: analytics.Span(span), Key: analytics.Day(period), StudentID: id}] = c
		}
	}
	return current, rows.Err()
}
