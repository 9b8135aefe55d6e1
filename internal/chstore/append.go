package chstore

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"golang.org/x/sync/errgroup"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// intent is what a write of a group's usage means to do, recorded in the
// directory before it writes a row: should it die half way, the next
// write (or read) of the group repairs what it left from the raw events.
type intent struct {
	// Months are the first days of the months whose rollups it changes.
	Months []analytics.Day `json:"months,omitempty"`
	// Students are the enrolments and names of its new events.
	Students []analytics.StudentUpdate `json:"students,omitempty"`
	// Erase is the student it erases.
	Erase string `json:"erase,omitempty"`
	// All: it recomputes every rollup of the group (a rebuild).
	All bool `json:"all,omitempty"`
	// Move: it moves the group to another shard.
	Move *move `json:"move,omitempty"`
}

// AppendEvents writes each group's events in a write of its own, under the
// group's lock. A group whose shard is down fails the call, but the groups
// written before it stay written: sent again, their events count once.
func (s *Store) AppendEvents(ctx context.Context, events []analytics.Event) (analytics.AppendResult, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	byGroup := map[string][]analytics.Event{}
	var groups []string
	for _, e := range events {
		if _, ok := byGroup[e.GroupID]; !ok {
			groups = append(groups, e.GroupID)
		}
		byGroup[e.GroupID] = append(byGroup[e.GroupID], e)
	}
	slices.Sort(groups)
	var res analytics.AppendResult
	for _, g := range groups {
		accepted, err := s.appendGroup(ctx, g, byGroup[g])
		if analytics.ErrorCode(err) == analytics.NotFound {
			// Deleted since the caller checked it: the lock found no group.
			res.Gone = append(res.Gone, g)
			continue
		}
		if err != nil {
			return analytics.AppendResult{}, s.wrap("AppendEvents", err)
		}
		res.Accepted += accepted
		res.Duplicates += len(byGroup[g]) - accepted
	}
	return res, nil
}

// appendGroup stores the events of one group whose ids are new, and
// returns how many there were. The calls of a group waiting in this
// process are merged: whoever has the group's turn writes every call
// waiting at that moment in one write (one lock, one lookup, one insert
// per table), and each caller returns once the write holding its events
// is done.
func (s *Store) appendGroup(ctx context.Context, groupID string, events []analytics.Event) (int, error) {
	call := rollup.NewCall(ctx, events)
	s.pendingMu.Lock()
	s.pending[groupID] = append(s.pending[groupID], call)
	s.pendingMu.Unlock()
	turn := s.turnstile(groupID)
	select {
	case turn <- struct{}{}:
		defer func() { <-turn }()
	case d := <-call.Done:
		return d.Result.Accepted, d.Err
	case <-ctx.Done():
		// Still queued, the call is dropped by the next writer.
		return 0, fmt.Errorf("waiting for the group's turn: %w", ctx.Err())
	}
	for {
		select {
		case d := <-call.Done:
			return d.Result.Accepted, d.Err
		default:
		}
		calls := s.takePending(groupID)
		if s.observer != nil && len(calls) > 0 {
			events := 0
			for _, c := range calls {
				events += len(c.Events)
			}
			s.observer.Merged(len(calls), events)
		}
		accepted, err := s.writeCalls(ctx, groupID, calls)
		for i, c := range calls {
			c.Done <- rollup.Done{Result: analytics.AppendResult{Accepted: accepted[i], Duplicates: len(c.Events) - accepted[i]}, Err: err}
		}
	}
}

// QueueDepth is how many AppendEvents calls of the process wait for
// their group's turn.
func (s *Store) QueueDepth() int {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	n := 0
	for _, calls := range s.pending {
		n += len(calls)
	}
	return n
}

// takePending takes the group's waiting calls, up to maxMergedEvents
// events (and at least one call), dropping those whose callers are gone.
func (s *Store) takePending(groupID string) []*rollup.Call {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	queue := s.pending[groupID]
	n, events := 0, 0
	for n < len(queue) && (n == 0 || events+len(queue[n].Events) <= rollup.MaxMergedEvents) {
		events += len(queue[n].Events)
		n++
	}
	if n == len(queue) {
		delete(s.pending, groupID)
	} else {
		s.pending[groupID] = queue[n:]
	}
	return slices.DeleteFunc(queue[:n:n], func(c *rollup.Call) bool { return c.Ctx.Err() != nil })
}

// writeCalls writes the calls' events of one group in one write and
// returns how many of each call's events were new. The first copy of an
// id, in the order of the calls, is the one that counts.
func (s *Store) writeCalls(ctx context.Context, groupID string, calls []*rollup.Call) ([]int, error) {
	accepted := make([]int, len(calls))
	if len(calls) == 0 {
		return accepted, nil
	}
	err := s.withLock(ctx, groupID, func(tx GroupLock) error {
		// Days are cut in the zone the lock holds, which a change of zone
		// (Rebuild) may have changed since the caller cut them.
		loc, err := tx.Location(ctx)
		if err != nil {
			return err
		}
		clear(accepted)
		sh, p, err := s.placeForWrite(ctx, tx)
		if err != nil {
			return err
		}
		var ids, students []string
		seenID, seenStudent := map[string]bool{}, map[string]bool{}
		for _, c := range calls {
			for _, e := range c.Events {
				if !seenID[e.ID] {
					seenID[e.ID] = true
					ids = append(ids, e.ID)
				}
				if !seenStudent[e.StudentID] {
					seenStudent[e.StudentID] = true
					students = append(students, e.StudentID)
				}
			}
		}
		// What the write needs to know, asked at once: which ids are
		// stored, the students' ordinals (numbering the new ones; a number
		// given to a student whose events all turn out to be duplicates
		// is merely unused) and the group's current rows.
		var stored map[string]bool
		var ords map[string]int
		var st *state
		var lookups errgroup.Group
		lookups.Go(func() (err error) { stored, err = s.storedIDs(ctx, sh, groupID, ids); return err })
		lookups.Go(func() (err error) { ords, err = s.ordinals(ctx, sh, groupID, students); return err })
		lookups.Go(func() (err error) { st, err = s.stateAt(ctx, sh, p); return err })
		if err := lookups.Wait(); err != nil {
			return err
		}
		var fresh []analytics.Event
		var in intent
		delta := rollup.NewDelta()
		for i, c := range calls {
			for _, e := range c.Events {
				if stored[e.ID] {
					continue
				}
				e.Day = analytics.DayOf(e.OccurredAt, loc)
				stored[e.ID] = true
				accepted[i]++
				fresh = append(fresh, e)
				delta.Add(e)
				in.Students = append(in.Students, analytics.StudentUpdate{ID: e.StudentID, Name: e.StudentName})
				if m := e.Day.MonthStart(); !slices.Contains(in.Months, m) {
					in.Months = append(in.Months, m)
				}
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		seq, err := markIntent(ctx, tx, in)
		if err != nil {
			return err
		}
		gkeys, rows := newGroupRows(delta, st, ords)
		counts, err := newCountsRows(st, delta, ords)
		if err != nil {
			return err
		}
		var inserts errgroup.Group
		inserts.Go(func() error { return s.insertEvents(ctx, sh, fresh, seq) })
		inserts.Go(func() error { return s.insertCountsRows(ctx, sh, counts, seq) })
		inserts.Go(func() error { return s.insertGroupRows(ctx, sh, gkeys, rows, seq) })
		if err := inserts.Wait(); err != nil {
			return err
		}
		// Every student of the new events, though most are enrolled
		// already: an ordinal does not tell, since a write that died may
		// have numbered a student whose events never landed.
		return tx.SaveStudents(ctx, in.Students)
	})
	return accepted, err
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
func (s *Store) locked(ctx context.Context, groupID string, fn func(tx GroupLock) error) error {
	turn := s.turnstile(groupID)
	select {
	case turn <- struct{}{}:
		defer func() { <-turn }()
	case <-ctx.Done():
		return fmt.Errorf("waiting for the group's turn: %w", ctx.Err())
	}
	return s.withLock(ctx, groupID, fn)
}

// withLock is locked for a writer that has the group's turn.
func (s *Store) withLock(ctx context.Context, groupID string, fn func(tx GroupLock) error) error {
	return s.dir.WithGroupLock(ctx, groupID, func(tx GroupLock) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.ClearIntent(ctx)
	})
}

func markIntent(ctx context.Context, tx GroupLock, in intent) (int64, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	return tx.MarkIntent(ctx, b)
}

// placeForWrite returns the group's shard, placing a new group on the
// least loaded one, after repairing what an unfinished write left, and
// its placement, whose Seq is the write as of which its rows are whole.
func (s *Store) placeForWrite(ctx context.Context, tx GroupLock) (*shard, Placement, error) {
	p, ok, err := tx.Placement(ctx)
	if err != nil {
		return nil, p, err
	}
	if !ok {
		name, err := s.leastLoaded(ctx, tx)
		if err != nil {
			return nil, p, err
		}
		if p, err = tx.Place(ctx, name); err != nil {
			return nil, p, err
		}
	}
	sh, err := s.shardOf(p)
	if err != nil {
		return nil, p, err
	}
	if p.Intent != nil {
		if err := s.repair(ctx, tx, sh, p); err != nil {
			return nil, p, fmt.Errorf("repair: %w", err)
		}
		if p, _, err = tx.Placement(ctx); err != nil {
			return nil, p, err
		}
	}
	return sh, p, nil
}

func (s *Store) shardOf(p Placement) (*shard, error) {
	sh := s.shardNamed(p.Shard)
	if sh == nil {
		return nil, fmt.Errorf("group %s is placed on shard %s, which the usage URL does not name: %w",
			p.GroupID, p.Shard, analytics.ErrUnavailable)
	}
	return sh, nil
}

// leastLoaded returns the shard holding the fewest events, among those that
// answer; the fewest groups breaks ties (and decides between empty shards).
func (s *Store) leastLoaded(ctx context.Context, tx GroupLock) (string, error) {
	groups, err := tx.GroupsPerShard(ctx)
	if err != nil {
		return "", err
	}
	best, bestEvents := "", uint64(0)
	var errs []string
	for _, sh := range s.shards {
		events, err := s.eventCount(ctx, sh)
		if err != nil {
			errs = append(errs, sh.name)
			continue
		}
		if best == "" || events < bestEvents || events == bestEvents && groups[sh.name] < groups[best] {
			best, bestEvents = sh.name, events
		}
	}
	if best == "" {
		return "", fmt.Errorf("no shard answers (%s): %w", strings.Join(errs, ", "), analytics.ErrUnavailable)
	}
	return best, nil
}

// storedIDs returns which of ids the group already holds.
func (s *Store) storedIDs(ctx context.Context, sh *shard, groupID string, ids []string) (map[string]bool, error) {
	return s.eventsHaving(ctx, sh, groupID, "event_id", ids)
}

// withLookup attaches values to ctx as the external table "lookup", a
// block of data sent beside the query rather than in its text, so that
// the query can ask `x IN lookup` of any number of values.
func withLookup(ctx context.Context, values []string) (context.Context, error) {
	lookup, err := ext.NewTable("lookup", ext.Column("v", "String"))
	if err != nil {
		return nil, err
	}
	for _, v := range values {
		if err := lookup.Append(v); err != nil {
			return nil, err
		}
	}
	return clickhouse.Context(ctx, clickhouse.WithExternalTable(lookup)), nil
}

// eventsHaving returns which of values col (event_id or student_id) takes
// in the group's events.
func (s *Store) eventsHaving(ctx context.Context, sh *shard, groupID, col string, values []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(values) == 0 {
		return found, nil
	}
	ctx, err := withLookup(ctx, values)
	if err != nil {
		return nil, err
	}
	rows, err := sh.query(ctx, `SELECT DISTINCT `+col+` FROM `+s.table("events")+`
		WHERE group_id = ? AND `+col+` IN lookup`, groupID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		found[v] = true
	}
	return found, rows.Err()
}

func (s *Store) insertEvents(ctx context.Context, sh *shard, events []analytics.Event, seq int64) error {
	return sh.insert(ctx, `INSERT INTO `+s.table("events")+` (group_id, event_id, student_id, occurred_at, metric, seq)`, func(b driver.Batch) error {
		for _, e := range events {
			if err := b.Append(e.GroupID, e.ID, e.StudentID, e.OccurredAt.UnixMilli(), uint8(e.Metric), uint64(seq)); err != nil {
				return err
			}
		}
		return nil
	})
}

// newGroupRows returns the new state of the group rows that delta
// changes, st holding their state before.
func newGroupRows(delta *rollup.Delta, st *state, ordinals map[string]int) ([]rollup.GroupKey, []analytics.GroupRollup) {
	keys := delta.GroupKeys()
	rows := make([]analytics.GroupRollup, len(keys))
	for i, k := range keys {
		r := st.groupRow(k.Span, k.Key)
		r.Key = k.Key
		d := delta.Groups[k]
		r.Counts.Add(&d.Counts)
		for id := range d.LiveLectureUsers {
			r.LiveLectureUsers.Add(ordinals[id])
		}
		for id := range d.ChatUsers {
			r.ChatUsers.Add(ordinals[id])
		}
		rows[i] = r
	}
	return keys, rows
}

// insertGroupRows writes rows as the new state of keys (same order).
func (s *Store) insertGroupRows(ctx context.Context, sh *shard, keys []rollup.GroupKey, rows []analytics.GroupRollup, seq int64) error {
	if len(keys) == 0 {
		return nil
	}
	return sh.insert(ctx, `INSERT INTO `+s.table("group_rollups")+` (group_id, span, period, `+metricList+`, live_lecture_users, chat_users, version)`, func(b driver.Batch) error {
		for i, k := range keys {
			c := &rows[i].Counts
			if err := b.Append(k.GroupID, uint8(k.Span), int32(k.Key), c[0], c[1], c[2], c[3], c[4], c[5], c[6],
				string(rollup.EncodeSet(rows[i].LiveLectureUsers)), string(rollup.EncodeSet(rows[i].ChatUsers)), uint64(seq)); err != nil {
				return err
			}
		}
		return nil
	})
}

var (
	// metricList is the count columns, in analytics.Metric order.
	metricList = rollup.Columns("{c}")
	// studentSums is the columns of a student's counts, summed.
	studentSums = rollup.Columns("sum({c})")
	// groupColumns reads a group rollup's current state: the row of the
	// highest version.
	groupColumns = rollup.Columns("argMax({c}, version)") + ", argMax(live_lecture_users, version), argMax(chat_users, version)"
)

// scanner is a row of a query's result.
type scanner interface{ Scan(dest ...any) error }

// scanGroupRow reads the leading columns into lead, then groupColumns.
func scanGroupRow(row scanner, lead ...any) (analytics.GroupRollup, error) {
	var r analytics.GroupRollup
	var ll, chat string
	if err := row.Scan(append(rollup.ScanDest(&r.Counts, lead...), &ll, &chat)...); err != nil {
		return r, err
	}
	r.LiveLectureUsers, r.ChatUsers = rollup.DecodeSet([]byte(ll)), rollup.DecodeSet([]byte(chat))
	return r, nil
}

// ordinals returns the ordinals of the students, numbering those the group
// has not numbered yet after its highest.
func (s *Store) ordinals(ctx context.Context, sh *shard, groupID string, studentIDs []string) (map[string]int, error) {
	ordinals, err := s.storedOrdinals(ctx, sh, groupID, studentIDs)
	if err != nil {
		return nil, err
	}
	missing := slices.DeleteFunc(slices.Clone(studentIDs), func(id string) bool { _, ok := ordinals[id]; return ok })
	if len(missing) == 0 {
		return ordinals, nil
	}
	// A write that was told it failed may yet have numbered some of them:
	// once its insert has settled, look again.
	if sh.replicated() {
		if err := s.settleQuorums(ctx, sh); err != nil {
			return nil, err
		}
		settled, err := s.storedOrdinals(ctx, sh, groupID, missing)
		if err != nil {
			return nil, err
		}
		maps.Copy(ordinals, settled)
		missing = slices.DeleteFunc(missing, func(id string) bool { _, ok := settled[id]; return ok })
		if len(missing) == 0 {
			return ordinals, nil
		}
	}
	var next uint32
	if err := sh.queryRow(ctx, `SELECT toUInt32(if(count() = 0, 0, max(ordinal) + 1)) FROM `+s.table("students")+` WHERE group_id = ?`,
		groupID).Scan(&next); err != nil {
		return nil, err
	}
	for i, id := range missing {
		ordinals[id] = int(next) + i
	}
	return ordinals, sh.insert(ctx, `INSERT INTO `+s.table("students")+` (group_id, student_id, ordinal)`, func(b driver.Batch) error {
		for _, id := range missing {
			if err := b.Append(groupID, id, uint32(ordinals[id])); err != nil {
				return err
			}
		}
		return nil
	})
}

// storedOrdinals returns the ordinals the group has given the students.
func (s *Store) storedOrdinals(ctx context.Context, sh *shard, groupID string, studentIDs []string) (map[string]int, error) {
	ordinals := map[string]int{}
	if len(studentIDs) == 0 {
		return ordinals, nil
	}
	ctx, err := withLookup(ctx, studentIDs)
	if err != nil {
		return nil, err
	}
	rows, err := sh.query(ctx, `SELECT student_id, min(ordinal) FROM `+s.table("students")+`
		WHERE group_id = ? AND student_id IN lookup GROUP BY student_id`, groupID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n uint32
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		ordinals[id] = int(n)
	}
	return ordinals, rows.Err()
}
