package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// ExpireDays deletes the group's usage of the days before first in one
// transaction under the group's write lock: its events, the rollup rows of
// days, weeks and months before first, and the rows of the week and month
// that first cuts, rewritten from their days that stay.
func (s *Store) ExpireDays(ctx context.Context, groupID string, first analytics.Day) ([]analytics.Deleted, bool, error) {
	var deleted []analytics.Deleted
	var ran bool
	err := s.transact(ctx, "ExpireDays", func(tx *txn) error {
		deleted = nil
		zone, err := s.lockUsage(ctx, tx, groupID)
		if err != nil {
			return err
		}
		if ran, err = s.claimCut(ctx, tx, groupID, first); err != nil || !ran {
			return err
		}
		loc, err := analytics.LoadZone(zone)
		if err != nil {
			return err
		}
		deleted, err = s.expireUsage(ctx, tx, groupID, first, first.Start(loc))
		return err
	})
	return deleted, ran, err
}

// claimCut records first as the group's cut with tx, and reports whether
// it is new: false when a cut at first or later was recorded already.
func (s *Store) claimCut(ctx context.Context, tx *txn, groupID string, first analytics.Day) (bool, error) {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE groups SET kept_from = ? WHERE group_id = ? AND (kept_from IS NULL OR kept_from < ?)`),
		int(first), groupID, int(first))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// expireUsage deletes the group's events before the instant before (the
// start of day first) and every rollup row of the days before first, and
// rewrites the rows of the week and month that first cuts from their
// days from first on.
func (s *Store) expireUsage(ctx context.Context, tx *txn, groupID string, first analytics.Day, before time.Time) ([]analytics.Deleted, error) {
	month, week := first.MonthStart(), first.WeekStart()
	deleted, err := s.execDeleting(ctx, tx, nil, "events", `DELETE FROM events WHERE group_id = ? AND occurred_at < ?`,
		groupID, millis(before))
	if err != nil {
		return deleted, err
	}
	if deleted, err = s.execDeleting(ctx, tx, deleted, "group_rollups", `DELETE FROM group_rollups WHERE group_id = ?
		AND (span = 0 AND period < ? OR span = 2 AND period < ? OR span = 1 AND period < ?)`,
		groupID, int(first), int(week), int(month)); err != nil {
		return deleted, err
	}
	if deleted, err = s.execDeleting(ctx, tx, deleted, "student_counts", `DELETE FROM student_counts WHERE group_id = ?
		AND (span = 0 AND period < ? OR span = 1 AND period < ?)`, groupID, int(first), int(month)); err != nil {
		return deleted, err
	}
	if deleted, err = s.forgetLastDays(ctx, tx, deleted, groupID, first); err != nil {
		return deleted, err
	}
	// The week and month that first cuts: their rows become the sums of
	// their days that stay.
	cut := map[rollup.GroupKey]analytics.Day{} // the row, and its last day
	if week < first {
		cut[rollup.GroupKey{GroupID: groupID, Span: analytics.SpanWeek, Key: week}] = week + 6
	}
	if month < first {
		cut[rollup.GroupKey{GroupID: groupID, Span: analytics.SpanMonth, Key: month}] = month.NextMonthStart() - 1
	}
	if len(cut) == 0 {
		return deleted, nil
	}
	if deleted, err = s.rewriteCutGroupRows(ctx, tx, deleted, first, cut); err != nil || month == first {
		return deleted, err
	}
	return s.rewriteCutMonthCounts(ctx, tx, deleted, groupID, first, month)
}

// rewriteCutGroupRows sets each group row of cut to the sum of its days
// from first to its last, deleting it when none has usage.
func (s *Store) rewriteCutGroupRows(ctx context.Context, tx *txn, deleted []analytics.Deleted, first analytics.Day, cut map[rollup.GroupKey]analytics.Day) ([]analytics.Deleted, error) {
	var groupID string
	last := first
	for k, through := range cut {
		groupID, last = k.GroupID, max(last, through)
	}
	sums := map[rollup.GroupKey]*analytics.GroupRollup{}
	err := s.query(ctx, tx, `SELECT period, `+metricList+`, live_lecture_users, chat_users FROM group_rollups
		WHERE group_id = ? AND span = 0 AND period BETWEEN ? AND ?`, []any{groupID, int(first), int(last)},
		func(rows *sql.Rows) error {
			var day analytics.GroupRollup
			if err := scanGroupRollup(rows, &day, &day.Key); err != nil {
				return err
			}
			for k, through := range cut {
				if day.Key <= through {
					if sums[k] == nil {
						sums[k] = &analytics.GroupRollup{Key: k.Key}
					}
					sums[k].Add(&day)
				}
			}
			return nil
		})
	if err != nil {
		return deleted, err
	}
	var kept []rollup.GroupKey
	for k := range cut {
		if sums[k] != nil {
			kept = append(kept, k)
			continue
		}
		if deleted, err = s.execDeleting(ctx, tx, deleted, "group_rollups", `DELETE FROM group_rollups
			WHERE group_id = ? AND span = ? AND period = ?`, k.GroupID, int(k.Span), int(k.Key)); err != nil {
			return deleted, err
		}
	}
	deleted = s.deleted(deleted, "group_rollups (rewritten)", int64(len(kept)))
	return deleted, s.updateGroupRollups(ctx, tx, kept, func(k rollup.GroupKey, r *analytics.GroupRollup) { *r = *sums[k] })
}

// rewriteCutMonthCounts sets the students' counts of month, which first
// cuts, to the sums of its days from first on, chunk by chunk.
func (s *Store) rewriteCutMonthCounts(ctx context.Context, tx *txn, deleted []analytics.Deleted, groupID string, first, month analytics.Day) ([]analytics.Deleted, error) {
	chunks := map[int][]byte{}
	err := s.query(ctx, tx, `SELECT chunk, counts FROM student_counts WHERE group_id = ? AND span = 0 AND period BETWEEN ? AND ?`,
		[]any{groupID, int(first), int(month.NextMonthStart() - 1)}, func(rows *sql.Rows) error {
			var chunk int
			var b []byte
			if err := rows.Scan(&chunk, &b); err != nil {
				return err
			}
			students, err := rollup.DecodeCounts(b)
			if err == nil {
				chunks[chunk], err = rollup.AddToRow(chunks[chunk], students)
			}
			return err
		})
	if err != nil {
		return deleted, err
	}
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM student_counts WHERE group_id = ? AND span = 1 AND period = ?`), groupID, int(month))
	if err != nil {
		return deleted, err
	}
	rewritten, err := res.RowsAffected()
	if err != nil {
		return deleted, err
	}
	rows := make([][]any, 0, len(chunks))
	for chunk, b := range chunks {
		if len(b) > 1 { // more than the format byte: some student
			rows = append(rows, []any{groupID, int(analytics.SpanMonth), int(month), chunk, b})
		}
	}
	deleted = s.deleted(deleted, "student_counts", max(0, rewritten-int64(len(rows))))
	deleted = s.deleted(deleted, "student_counts (rewritten)", int64(len(rows)))
	return deleted, s.insertRows(ctx, tx, "student_counts (group_id, span, period, chunk, counts)",
		countsRowTypes, rows, "", nil)
}

// ExpireBefore records first as the group's cut and takes the logged
// events from before the instant before out of the write-behind log, with
// the transaction; claimed is false, and nothing is done, when a cut at
// first or later was recorded already.
func (g *GroupTx) ExpireBefore(ctx context.Context, first analytics.Day, before time.Time) (claimed bool, deleted []analytics.Deleted, err error) {
	if claimed, err = g.s.claimCut(ctx, g.tx, g.groupID, first); err != nil || !claimed {
		return claimed, nil, err
	}
	deleted, err = g.s.execDeleting(ctx, g.tx, nil, "usage_log", `DELETE FROM usage_log WHERE group_id = ? AND occurred_at < ?`,
		g.groupID, millis(before))
	return true, deleted, err
}

// forgetLastDays forgets in the group's students' last days every day
// before first.
func (s *Store) forgetLastDays(ctx context.Context, tx *txn, deleted []analytics.Deleted, groupID string, first analytics.Day) ([]analytics.Deleted, error) {
	var rows [][]any
	err := s.query(ctx, tx, `SELECT student_id, name, last_days FROM students WHERE group_id = ? AND last_days IS NOT NULL`,
		[]any{groupID}, func(r *sql.Rows) error {
			var id, name string
			var b []byte
			if err := r.Scan(&id, &name, &b); err != nil {
				return err
			}
			c, err := rollup.DecodeLastDays(b)
			if err != nil {
				return fmt.Errorf("last days of %s: %w", groupID, err)
			}
			if kept := rollup.EncodeLastDays(rollup.ForgetBefore(c, first)); !bytes.Equal(kept, b) {
				rows = append(rows, []any{groupID, id, name, kept})
			}
			return nil
		})
	if err != nil {
		return deleted, err
	}
	deleted = s.deleted(deleted, "students (last days rewritten)", int64(len(rows)))
	return deleted, s.setLastDays(ctx, tx, rows)
}
