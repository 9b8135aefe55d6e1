package chstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// Erasure: a student's events and their share of every rollup deleted
// from the group's shard, under the group's lock and an intent, so that
// an erasure cut short is finished by the group's next write or read.

func (s *Store) EraseStudent(ctx context.Context, groupID, studentID string) ([]analytics.Deleted, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var deleted []analytics.Deleted
	began := time.Now()
	err := s.locked(ctx, groupID, func(tx writebehind.GroupLock) error {
		_, placed, err := tx.Placement(ctx)
		if err != nil {
			return err
		}
		// A write cut short is finished first: an erasure of this student
		// among them, which writes its receipt, so that this call finds
		// the student gone, as a retry of a finished erasure does.
		var sh *shard
		var p writebehind.Placement
		if placed {
			if sh, p, err = s.placeForWrite(ctx, tx); err != nil {
				return err
			}
		}
		enrolled, err := tx.DeleteStudent(ctx, studentID)
		if err != nil {
			return err
		}
		deleted = enrolled
		if placed {
			usage, err := s.eraseUsage(ctx, tx, sh, p, studentID, began)
			if err != nil {
				return err
			}
			deleted = append(deleted, usage...)
		}
		return nil // committed even when nothing was here: a repair may have written
	})
	if err == nil && len(deleted) == 0 {
		err = analytics.Errorf(analytics.NotFound, "Student %q not found in group %q", studentID, groupID)
	}
	return deleted, s.wrap("EraseStudent", err)
}

// eraseUsage takes the student out of the group rows and the rows of
// counts (one insert each of their new state), then deletes the
// student's events and ordinal and waits for ClickHouse to have deleted
// them. It returns what it removed, and rewrote without the student.
func (s *Store) eraseUsage(ctx context.Context, tx writebehind.GroupLock, sh *shard, p writebehind.Placement, studentID string, began time.Time) ([]analytics.Deleted, error) {
	groupID := p.GroupID
	// A quorum insert cut short (a replica died under it) may still
	// settle and show the student's rows after the erasure read around
	// them: it waits for such inserts first, as a repair does.
	if err := s.settleQuorums(ctx, sh); err != nil {
		return nil, err
	}
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
	shares, counts, err := studentShares(st, groupID, ordinals)
	if err != nil {
		return nil, err
	}
	keys, in := sharedRows(groupID, shares)
	in.Erase, in.ErasedBy, in.EraseBegan = studentID, analytics.RequesterOf(ctx), began.UnixMilli()
	seq, err := markIntent(ctx, tx, in, p.Seq)
	if err != nil {
		return nil, err
	}
	rows := rowsWithout(st, keys, shares, ordinals)
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

// finishErasure finishes the erasure an unfinished write's intent names:
// the student's rows deleted and their enrolment, with its receipt, for
// the caller that asked for it saw the erasure fail and wrote none. The
// rollups are recomputed after it, from the events left.
func (s *Store) finishErasure(ctx context.Context, tx writebehind.GroupLock, sh *shard, groupID string, in intent) error {
	var events uint64
	if err := sh.queryRow(ctx, `SELECT count() FROM `+s.table("events")+` WHERE group_id = ? AND student_id = ?`,
		groupID, in.Erase).Scan(&events); err != nil {
		return err
	}
	if err := s.deleteStudentRows(ctx, sh, groupID, in.Erase); err != nil {
		return err
	}
	deleted, err := tx.DeleteStudent(ctx, in.Erase)
	if err != nil {
		return err
	}
	deleted = append(deleted, analytics.Deleted{Store: "clickhouse", Table: "events", Rows: int64(events)},
		analytics.Deleted{Store: "clickhouse", Table: "rollup months (recomputed)", Rows: int64(len(in.Months))})
	finished := time.Now().UTC()
	began := finished // an intent of a release that did not record it
	if in.EraseBegan > 0 {
		began = time.UnixMilli(in.EraseBegan).UTC()
	}
	return tx.AddReceipt(ctx, analytics.Receipt{GroupID: groupID, StudentID: in.Erase, Action: analytics.ActionStudentErased,
		RequestedBy: cmp.Or(in.ErasedBy, "unknown"), Began: began, Finished: finished, Deleted: nonZero(deleted)})
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

// awaitMutations waits until the shard's replicas that answer have done
// every deletion of the store's tables: ClickHouse runs them in the
// background, on each replica by itself. On a replicated shard at least
// a quorum of replicas must answer (fewer fail the wait), so that a
// deletion is done on as many servers as a write is on; a replica that
// was down does it when it is back, and reads pass it by until then
// (shard.read).
func (s *Store) awaitMutations(ctx context.Context, sh *shard) error {
	var done int
	var errs []error
	for _, r := range sh.replicas {
		err := s.awaitReplicaMutations(ctx, r)
		if err == nil {
			done++
			continue
		}
		if !sh.replicated() || !unreachable(err) || ctx.Err() != nil {
			return err
		}
		errs = append(errs, fmt.Errorf("replica %s: %w", r.addr, err))
	}
	if sh.replicated() && done < insertQuorum {
		return errors.Join(errs...)
	}
	return nil
}

// awaitReplicaMutations waits until the replica has done every deletion
// of the store's tables.
func (s *Store) awaitReplicaMutations(ctx context.Context, r *replica) error {
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
}

// studentShares is the student's share of each period of the group's
// state (the student numbered ordinals), and the rows of students' counts
// without them.
func studentShares(st *state, groupID string, ordinals []uint32) (map[period]analytics.Counts, []countsRow, error) {
	shares := map[period]analytics.Counts{}
	var counts []countsRow
	for _, n := range ordinals {
		for p := range st.counts {
			b := st.chunk(p.span(), p.key(), rollup.ChunkOf(int(n)))
			if b == nil {
				continue
			}
			students, err := rollup.DecodeCounts(b)
			if err != nil {
				return nil, nil, fmt.Errorf("student counts of %s %s: %w", groupID, p.key(), err)
			}
			i := slices.IndexFunc(students, func(sc rollup.StudentCounts) bool { return sc.Ordinal == int(n) })
			if i < 0 {
				continue
			}
			if p.span() != analytics.SpanLast { // last days are no share of a group row
				share := shares[p]
				share.Add(&students[i].Counts)
				shares[p] = share
			}
			counts = append(counts, countsRow{rollup.CountsKey{GroupID: groupID, Span: p.span(), Key: p.key(), Chunk: rollup.ChunkOf(int(n))},
				rollup.AppendCounts(nil, slices.Delete(students, i, i+1))})
		}
	}
	return shares, counts, nil
}

// sharedRows is the keys of the group rows the shares are in, in order,
// and an intent naming their months.
func sharedRows(groupID string, shares map[period]analytics.Counts) ([]rollup.GroupKey, intent) {
	var in intent
	keys := make([]rollup.GroupKey, 0, len(shares))
	for p := range shares {
		keys = append(keys, rollup.GroupKey{GroupID: groupID, Span: p.span(), Key: p.key()})
		if m := p.key().MonthStart(); !slices.Contains(in.Months, m) {
			in.Months = append(in.Months, m)
		}
	}
	slices.SortFunc(keys, func(a, b rollup.GroupKey) int {
		return cmp.Or(cmp.Compare(a.Span, b.Span), cmp.Compare(a.Key, b.Key))
	})
	return keys, in
}

// rowsWithout is the group rows of keys less the student's shares, and
// out of their sets.
func rowsWithout(st *state, keys []rollup.GroupKey, shares map[period]analytics.Counts, ordinals []uint32) []analytics.GroupRollup {
	rows := make([]analytics.GroupRollup, len(keys))
	for i, k := range keys {
		r := st.groupRow(k.Span, k.Key)
		share := shares[periodOf(k.Span, k.Key)]
		for m := range r.Counts {
			r.Counts[m] -= share[m]
		}
		for _, n := range ordinals {
			r.LiveLectureUsers.Remove(int(n))
			r.ChatUsers.Remove(int(n))
		}
		rows[i] = r
	}
	return rows
}
