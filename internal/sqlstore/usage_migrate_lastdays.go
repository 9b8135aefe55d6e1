package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// lastDaysVersion is the migration that gives every group its students'
// last days of use (rows of span analytics.SpanLast), read off their
// counts of each day. It is Go, not SQL, since it decodes the counts.
const lastDaysVersion = 33

func (s *Store) lastDaysMigration() *goose.Migration {
	return goose.NewGoMigration(lastDaysVersion,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return s.addLastDays(ctx, &txn{Tx: tx}) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return s.dropLastDays(ctx, &txn{Tx: tx}) }})
}

// dropLastDays undoes addLastDays.
func (s *Store) dropLastDays(ctx context.Context, tx *txn) error {
	groups, err := groupsIn(ctx, tx, "student_counts")
	if err != nil {
		return err
	}
	for _, g := range groups {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM student_counts WHERE group_id = ? AND span = ?`), g, int(analytics.SpanLast)); err != nil {
			return err
		}
	}
	return nil
}

// addLastDays writes the rows of last days of every group, a group at a
// time.
func (s *Store) addLastDays(ctx context.Context, tx *txn) error {
	groups, err := groupsIn(ctx, tx, "student_counts")
	if err != nil {
		return err
	}
	for _, g := range groups {
		if err := s.addGroupLastDays(ctx, tx, g); err != nil {
			return fmt.Errorf("group %s: %w", g, err)
		}
	}
	return nil
}

func (s *Store) addGroupLastDays(ctx context.Context, tx *txn, groupID string) error {
	var last rollup.LastDays
	err := s.query(ctx, tx, `SELECT period, chunk, counts FROM student_counts WHERE group_id = ? AND span = ?`,
		[]any{groupID, int(analytics.SpanDay)}, func(rows *sql.Rows) error {
			var day analytics.Day
			var chunk int
			var b []byte
			if err := rows.Scan(&day, &chunk, &b); err != nil {
				return err
			}
			return last.AddDay(day, chunk, b)
		})
	if err != nil {
		return err
	}
	var rows [][]any
	for chunk, b := range last.Rows() {
		rows = append(rows, []any{groupID, int(analytics.SpanLast), 0, chunk, b})
	}
	return s.insertRows(ctx, tx, "student_counts (group_id, span, period, chunk, counts)", countsRowTypes, rows, replaceCounts, nil)
}
