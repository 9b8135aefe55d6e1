package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// metricList is the count columns, in analytics.Metric order.
var metricList = rollup.Columns("{c}")

// eventTypes are the SQL types of an event row's columns.
var eventTypes = []string{"text", "text", "text", "bigint", "smallint"}

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

// writerSeed hashes a group to its writer.
var writerSeed = maphash.MakeSeed()

// writeAppends is a writer: it takes the first call waiting in its queue,
// and the others already queued, and writes them together. Calls whose
// callers gave up before their turn are dropped. It returns when Close has
// closed the queue and everything queued is written.
//
// On SQLite it also folds the rollups behind the events (behind.go) when
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
		if err := s.saveStudents(ctx, tx, students, ordinals); err != nil {
			return err
		}
		if s.dialect.rollupsBehind && len(accepted) < applyAtOnce {
			return s.noteBehind(ctx, tx, accepted)
		}
		delta := rollup.NewDelta()
		for _, e := range accepted {
			delta.Add(e)
		}
		return s.applyDelta(ctx, tx, delta, ordinals)
	})
	return results, err
}

// lockGroups takes the write locks of the groups (sorted ids), which every
// writer of a group's usage and students holds until its transaction
// ends: on PostgreSQL the groups' rows, locked in id order so that writers
// cannot deadlock; on SQLite the write transaction itself, which is
// exclusive.
//
// It returns the time zone of each group that exists, as the lock holds
// it: a group deleted (EraseGroup) before the lock was taken is missing,
// and its events must not be written; a group's days are cut in the zone
// read here, which changes only under the lock (Rebuild). On PostgreSQL,
// lock is the row lock taken (forWrite or another); with SKIP LOCKED, the
// groups another transaction holds are left out too, rather than waited
// for.
func (s *Store) lockGroups(ctx context.Context, tx *txn, groupIDs []string, lock string) (map[string]string, error) {
	zones := map[string]string{}
	if len(groupIDs) == 0 {
		return zones, nil
	}
	var rows *sql.Rows
	var err error
	if s.dialect.name == "postgres" {
		rows, err = tx.QueryContext(ctx, `SELECT group_id, time_zone FROM groups WHERE group_id = ANY($1) ORDER BY group_id `+lock, groupIDs)
	} else {
		rows, err = tx.QueryContext(ctx, `SELECT group_id, time_zone FROM groups WHERE group_id IN (SELECT value FROM json_each(?))`, jsonList(groupIDs))
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, zone string
		if err := rows.Scan(&id, &zone); err != nil {
			return nil, err
		}
		zones[id] = zone
	}
	return zones, rows.Err()
}

// lockUsage is lockGroups of one group, which must exist: the lock of a
// write of the group's usage. It returns the group's time zone.
//
// On SQLite it folds the group's rollups behind its events first, so that
// the write starts from rollups that count every stored event.
func (s *Store) lockUsage(ctx context.Context, tx *txn, groupID string) (string, error) {
	zones, err := s.lockGroups(ctx, tx, []string{groupID}, forWrite)
	if _, ok := zones[groupID]; err == nil && !ok {
		return "", analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
	}
	if err == nil {
		err = s.foldBehind(ctx, tx, groupID, nil)
	}
	return zones[groupID], err
}

// forWrite is the row lock of a write of a group's usage: FOR NO KEY
// UPDATE, which lets foreign key checks (FOR KEY SHARE) through.
const forWrite = `FOR NO KEY UPDATE`

func jsonList(values []string) string {
	b, _ := json.Marshal(values)
	return string(b)
}

// copyThreshold is the batch size from which PostgreSQL stages events with
// COPY rather than multi-row INSERTs.
const copyThreshold = 2000

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
// rows, the group rows' counts and student sets (of days, weeks and
// months), merged into the stored rows by the upsert where the database
// can (mergesRollups), or else read under lock and written back. known
// holds ordinals read already in tx (or is nil).
func (s *Store) applyDelta(ctx context.Context, tx *txn, delta *rollup.Delta, known map[[2]string]int) error {
	delta.AddWeeks()
	ordinals, err := s.ordinals(ctx, tx, delta.StudentIDs(), known)
	if err != nil {
		return err
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

// updateGroupRollups applies change to the group rollup rows of keys
// (zeros for those not stored yet): one read and one upsert for all, the
// group's write lock keeping other writers away in between.
func (s *Store) updateGroupRollups(ctx context.Context, tx *txn, keys []rollup.GroupKey, change func(rollup.GroupKey, *analytics.GroupRollup)) error {
	rows := make([][]any, len(keys))
	for i, k := range keys {
		rows[i] = []any{k.GroupID, int(k.Span), int(k.Key)}
	}
	current := map[rollup.GroupKey]analytics.GroupRollup{}
	err := s.selectKeyed(ctx, tx, `SELECT group_id, span, period, `+metricList+`, live_lecture_users, chat_users
		FROM k JOIN group_rollups ON group_id = k.k1 AND span = k.k2 AND period = k.k3`, groupKeyTypes, rows,
		func(rows *sql.Rows) error {
			var k rollup.GroupKey
			var r analytics.GroupRollup
			if err := scanGroupRollup(rows, &r, &k.GroupID, &k.Span, &k.Key); err != nil {
				return err
			}
			current[k] = r
			return nil
		})
	if err != nil {
		return err
	}
	return s.writeGroupRollups(ctx, tx, keys, current, change, replaceGroupRollup)
}

// writeGroupRollups upserts the group rollup rows of keys, each the row of
// current (zeros if absent) with change applied; onConflict says what
// becomes of a row stored already.
func (s *Store) writeGroupRollups(ctx context.Context, tx *txn, keys []rollup.GroupKey, current map[rollup.GroupKey]analytics.GroupRollup,
	change func(rollup.GroupKey, *analytics.GroupRollup), onConflict string) error {
	out := make([][]any, len(keys))
	for i, k := range keys {
		r := current[k]
		r.Key = k.Key
		change(k, &r)
		row := make([]any, 0, len(groupRollupTypes))
		row = append(row, k.GroupID, int(k.Span), int(k.Key))
		for _, v := range r.Counts {
			row = append(row, v)
		}
		out[i] = append(row, rollup.EncodeSet(r.LiveLectureUsers), rollup.EncodeSet(r.ChatUsers))
	}
	return s.insertRows(ctx, tx, "group_rollups (group_id, span, period, "+metricList+", live_lecture_users, chat_users)",
		groupRollupTypes, out, onConflict, nil)
}

// What becomes of a group rollup row stored already: replaced by the row
// written, or (mergesRollups) the row written added to it, its sets
// joined by union_students unless one of them is empty.
var (
	replaceGroupRollup = "ON CONFLICT (group_id, span, period) DO UPDATE SET " +
		rollup.Columns("{c} = excluded.{c}") + ", live_lecture_users = excluded.live_lecture_users, chat_users = excluded.chat_users"
	addToGroupRollup = "ON CONFLICT (group_id, span, period) DO UPDATE SET " +
		rollup.Columns("{c} = group_rollups.{c} + excluded.{c}") + ", " + unionOf("live_lecture_users") + ", " + unionOf("chat_users")
)

func unionOf(column string) string {
	return strings.ReplaceAll(`{c} = CASE WHEN length(excluded.{c}) = 0 THEN group_rollups.{c}
		WHEN length(group_rollups.{c}) = 0 THEN excluded.{c} ELSE union_students(group_rollups.{c}, excluded.{c}) END`, "{c}", column)
}

// groupRollupTypes are the SQL types of a group rollup row's columns.
var groupRollupTypes = []string{"text", "smallint", "integer", "bigint", "bigint", "bigint", "bigint", "bigint", "bigint", "bigint", "bytea", "bytea"}

// groupKeyTypes are the SQL types of a group rollup row's key columns.
var groupKeyTypes = []string{"text", "smallint", "integer"}

// ordinals returns the ordinal of every student named, per group. Those in
// known (read already in tx; may be nil) are not read again. A student
// with usage but no number (none should lack one: ingestion numbers them)
// is enrolled if need be and numbered now.
func (s *Store) ordinals(ctx context.Context, tx *txn, students map[string][]string, known map[[2]string]int) (map[[2]string]int, error) {
	ordinals := map[[2]string]int{}
	var ask [][]any
	for _, g := range slices.Sorted(maps.Keys(students)) {
		for _, id := range students[g] {
			if n, ok := known[[2]string{g, id}]; ok {
				ordinals[[2]string{g, id}] = n
			} else {
				ask = append(ask, []any{g, id})
			}
		}
	}
	err := s.selectKeyed(ctx, tx, `SELECT group_id, student_id, ordinal FROM k
		JOIN students ON group_id = k.k1 AND student_id = k.k2 WHERE ordinal IS NOT NULL`, studentKeyTypes, ask, func(rows *sql.Rows) error {
		return scanOrdinal(rows, ordinals)
	})
	if err != nil {
		return nil, err
	}
	missing := map[string][]analytics.StudentUpdate{}
	for _, k := range ask {
		g, id := k[0].(string), k[1].(string)
		if _, ok := ordinals[[2]string{g, id}]; !ok {
			missing[g] = append(missing[g], analytics.StudentUpdate{ID: id})
		}
	}
	if len(missing) == 0 {
		return ordinals, nil
	}
	return ordinals, s.saveStudents(ctx, tx, missing, ordinals)
}

// scanOrdinal reads a (group_id, student_id, ordinal) row into into.
func scanOrdinal(rows *sql.Rows, into map[[2]string]int) error {
	var k [2]string
	var n int
	err := rows.Scan(&k[0], &k[1], &n)
	into[k] = n
	return err
}

// studentKeyTypes are the SQL types of a (group, student) key.
var studentKeyTypes = []string{"text", "text"}

// GroupRollups returns the group's rollups of seg, ascending by period.
func (s *Store) GroupRollups(ctx context.Context, groupID string, seg analytics.Segment) ([]analytics.GroupRollup, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT period, `+metricList+`, live_lecture_users, chat_users
		FROM group_rollups WHERE group_id = ? AND span = ? AND period BETWEEN ? AND ? ORDER BY period`),
		groupID, int(seg.Span), int(seg.Keys.First), int(seg.Keys.Last))
	if err != nil {
		return nil, s.wrap("GroupRollups", err)
	}
	defer rows.Close()
	var rollups []analytics.GroupRollup
	for rows.Next() {
		var r analytics.GroupRollup
		if err := scanGroupRollup(rows, &r, &r.Key); err != nil {
			return nil, s.wrap("GroupRollups", err)
		}
		rollups = append(rollups, r)
	}
	return rollups, s.wrap("GroupRollups", rows.Err())
}

// scanGroupRollup reads a row of the lead columns, then the counts and
// the two student sets of a group rollup, into lead and r.
func scanGroupRollup(rows *sql.Rows, r *analytics.GroupRollup, lead ...any) error {
	// Decoded at once, so the driver's bytes need not be copied first.
	var ll, chat sql.RawBytes
	if err := rows.Scan(append(rollup.ScanDest(&r.Counts, lead...), &ll, &chat)...); err != nil {
		return err
	}
	r.LiveLectureUsers, r.ChatUsers = rollup.DecodeSet(ll), rollup.DecodeSet(chat)
	return nil
}

// EraseStudent removes the student's enrolment, events and share of every
// rollup in one transaction under the group's write lock.
func (s *Store) EraseStudent(ctx context.Context, groupID, studentID string) ([]analytics.Deleted, error) {
	var deleted []analytics.Deleted
	err := s.transact(ctx, "EraseStudent", func(tx *txn) error {
		if _, err := s.lockUsage(ctx, tx, groupID); err != nil {
			return err
		}
		// The student's number goes with their enrolment: read first.
		var ordinal sql.NullInt64
		err := tx.QueryRowContext(ctx, s.q(`SELECT ordinal FROM students WHERE group_id = ? AND student_id = ?`),
			groupID, studentID).Scan(&ordinal)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if deleted, err = s.deleteStudentFrom(ctx, tx, groupID, studentID, nil, "class_members", "students"); err != nil {
			return err
		}
		if deleted, err = s.eraseUsage(ctx, tx, groupID, studentID, ordinal, deleted); err != nil {
			return err
		}
		if !slices.ContainsFunc(deleted, func(d analytics.Deleted) bool { return d.Table == "students" || d.Table == "events" }) {
			return analytics.Errorf(analytics.NotFound, "Student %q not found in group %q", studentID, groupID)
		}
		return nil
	})
	return deleted, err
}

// deleteStudentFrom deletes the student's rows from each table with tx,
// and adds to deleted what went.
func (s *Store) deleteStudentFrom(ctx context.Context, tx *txn, groupID, studentID string, deleted []analytics.Deleted, tables ...string) ([]analytics.Deleted, error) {
	for _, table := range tables {
		var err error
		if deleted, err = s.execDeleting(ctx, tx, deleted, table, `DELETE FROM `+table+` WHERE group_id = ? AND student_id = ?`,
			groupID, studentID); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// execDeleting runs a deletion with tx and adds to deleted the rows it
// affected, as table's.
func (s *Store) execDeleting(ctx context.Context, tx *txn, deleted []analytics.Deleted, table, query string, args ...any) ([]analytics.Deleted, error) {
	res, err := tx.ExecContext(ctx, s.q(query), args...)
	if err != nil {
		return deleted, err
	}
	n, err := res.RowsAffected()
	return s.deleted(deleted, table, n), err
}

// deleted adds to list that rows of table went, if any did.
func (s *Store) deleted(list []analytics.Deleted, table string, rows int64) []analytics.Deleted {
	if rows == 0 {
		return list
	}
	return append(list, analytics.Deleted{Store: s.dialect.name, Table: table, Rows: rows})
}

// eraseUsage deletes a student's events and counts, and takes their
// share out of the group rollups (if they have an ordinal: they had
// usage), adding what it removed to deleted (the rollup rows rewritten
// without their share too).
func (s *Store) eraseUsage(ctx context.Context, tx *txn, groupID, studentID string, stored sql.NullInt64, deleted []analytics.Deleted) ([]analytics.Deleted, error) {
	if stored.Valid {
		ordinal := int(stored.Int64)
		shares, err := s.eraseCounts(ctx, tx, groupID, ordinal)
		if err != nil {
			return deleted, err
		}
		countRows := len(shares) // the student's rows of counts, one a period
		// The weeks' rows hold the student's days' counts.
		for k, share := range shares {
			if k.Span == analytics.SpanDay {
				week := rollup.GroupKey{GroupID: groupID, Span: analytics.SpanWeek, Key: k.Key.WeekStart()}
				sum := shares[week]
				sum.Add(&share)
				shares[week] = sum
			}
		}
		keys := slices.SortedFunc(maps.Keys(shares), func(a, b rollup.GroupKey) int {
			return cmp.Or(cmp.Compare(a.Span, b.Span), cmp.Compare(a.Key, b.Key))
		})
		deleted = s.deleted(deleted, "student_counts (rewritten)", int64(countRows))
		deleted = s.deleted(deleted, "group_rollups (rewritten)", int64(len(keys)))
		if err := s.updateGroupRollups(ctx, tx, keys, func(k rollup.GroupKey, r *analytics.GroupRollup) {
			share := shares[k]
			for i := range r.Counts {
				r.Counts[i] -= share[i]
			}
			r.LiveLectureUsers.Remove(ordinal)
			r.ChatUsers.Remove(ordinal)
		}); err != nil {
			return deleted, err
		}
	}
	return s.deleteStudentFrom(ctx, tx, groupID, studentID, deleted, "events")
}

// rebuildChunk is how many raw events Rebuild reads and folds in at a time.
const rebuildChunk = 50_000

// Rebuild holds the group's write lock throughout, so the group's
// ingestion waits for it. The students keep their ordinals.
func (s *Store) Rebuild(ctx context.Context, groupID, zone string) error {
	loc, err := analytics.LoadZone(zone)
	if err != nil {
		return s.wrap("Rebuild", err)
	}
	return s.transact(ctx, "Rebuild", func(tx *txn) error {
		current, err := s.lockUsage(ctx, tx, groupID)
		if err != nil {
			return err
		}
		if err := s.setTimeZone(ctx, tx, groupID, current, zone); err != nil {
			return err
		}
		for _, table := range []string{"student_counts", "group_rollups"} {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE group_id = ?`), groupID); err != nil {
				return err
			}
		}
		after := ""
		for {
			events, err := s.eventsAfter(ctx, tx, groupID, after, loc)
			if err != nil || len(events) == 0 {
				return err
			}
			delta := rollup.NewDelta()
			for _, e := range events {
				delta.Add(e)
			}
			if err := s.applyDelta(ctx, tx, delta, nil); err != nil {
				return err
			}
			after = events[len(events)-1].ID
		}
	})
}

// setTimeZone makes zone the group's time zone with tx, where current,
// the zone its lock read, is another.
func (s *Store) setTimeZone(ctx context.Context, tx *txn, groupID, current, zone string) error {
	if zone == current {
		return nil
	}
	_, err := tx.ExecContext(ctx, s.q(`UPDATE groups SET time_zone = ? WHERE group_id = ?`), zone, groupID)
	return err
}

// eventsAfter reads the next chunk of a group's raw events in id order.
func (s *Store) eventsAfter(ctx context.Context, tx *txn, groupID, after string, loc *time.Location) ([]analytics.Event, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT event_id, student_id, occurred_at, metric FROM events
		WHERE group_id = ? AND event_id > ? ORDER BY event_id LIMIT ?`), groupID, after, rebuildChunk)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var events []analytics.Event
	for rows.Next() {
		e := analytics.Event{GroupID: groupID}
		var at int64
		if err := rows.Scan(&e.ID, &e.StudentID, &at, &e.Metric); err != nil {
			return nil, err
		}
		e.OccurredAt = fromMillis(at)
		e.Day = analytics.DayOf(e.OccurredAt, loc)
		events = append(events, e)
	}
	return events, rows.Err()
}

// tablesOfAGroup are the tables holding a group's rows, the groups table
// last: every one that references it comes before it.
var tablesOfAGroup = []string{"events", "usage_groups", "group_rollups", "student_counts",
	"access_log_students", "access_log", "digest_sends", "digest_recipients", "api_key_classes", "api_keys", "plans", "class_members", "classes", "students", "roster_versions", "usage_log", "usage_placements", "groups"}

// EraseGroup deletes the group's rows from every table in one
// transaction, after locking the group's row as a directory change does,
// which waits for the writes of its usage under way and makes those that
// come later find it gone.
func (s *Store) EraseGroup(ctx context.Context, groupID string) ([]analytics.Deleted, error) {
	// The group's entries still in the access journal go with its log,
	// and are counted with it.
	if err := s.foldAccess(ctx); err != nil {
		return nil, err
	}
	var deleted []analytics.Deleted
	err := s.transact(ctx, "EraseGroup", func(tx *txn) (err error) {
		if err := s.lockGroup(ctx, tx, groupID); err != nil {
			return err
		}
		// The group's shares behind its events go with them.
		if err := s.foldBehind(ctx, tx, groupID, nil); err != nil {
			return err
		}
		deleted, err = s.deleteGroupRows(ctx, tx, groupID)
		return err
	})
	return deleted, err
}

// deleteGroupRows deletes the group's rows from every table and returns
// how many went from each.
func (s *Store) deleteGroupRows(ctx context.Context, tx *txn, groupID string) ([]analytics.Deleted, error) {
	var deleted []analytics.Deleted
	for _, table := range tablesOfAGroup {
		var err error
		if deleted, err = s.execDeleting(ctx, tx, deleted, table, `DELETE FROM `+table+` WHERE group_id = ?`, groupID); err != nil {
			return nil, fmt.Errorf("%s: %w", table, err)
		}
	}
	return deleted, nil
}

// StudentEvents returns the student's events in the group, oldest first.
// Events are kept by group and id: the group's are read, the student's
// kept, as erasure does.
func (s *Store) StudentEvents(ctx context.Context, groupID, studentID string) ([]analytics.Event, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT event_id, occurred_at, metric FROM events
		WHERE group_id = ? AND student_id = ? ORDER BY occurred_at, event_id`), groupID, studentID)
	if err != nil {
		return nil, s.wrap("StudentEvents", err)
	}
	defer rows.Close()
	var events []analytics.Event
	for rows.Next() {
		e := analytics.Event{GroupID: groupID, StudentID: studentID}
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Metric); err != nil {
			return nil, s.wrap("StudentEvents", err)
		}
		e.OccurredAt = fromMillis(at)
		events = append(events, e)
	}
	return events, s.wrap("StudentEvents", rows.Err())
}
