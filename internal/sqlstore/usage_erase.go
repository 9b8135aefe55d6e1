package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

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

// tablesOfAGroup are the tables holding a group's rows, the groups table
// last: every one that references it comes before it, and usage_versions
// after group_rollups, whose deletion counts there.
var tablesOfAGroup = []string{"events", "usage_groups", "group_rollups", "student_counts",
	"access_log_students", "access_log", "digest_sends", "digest_recipients", "staff_classes", "staff", "sign_in_providers", "lti_platforms", "lti_registrations", "warehouse_days", "warehouses", "api_key_classes", "api_keys", "plans", "stop_alerts", "class_members", "classes", "students", "roster_versions", "usage_versions", "usage_log", "usage_placements", "groups"}
