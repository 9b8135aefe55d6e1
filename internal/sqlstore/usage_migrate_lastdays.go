package sqlstore

import (
	"context"
	"database/sql"

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
	return eachGroupIn(ctx, tx, "student_counts", func(g string) error {
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM student_counts WHERE group_id = ? AND span = ?`), g, int(analytics.SpanLast))
		return err
	})
}

// addLastDays writes the rows of last days of every group, a group at a
// time.
func (s *Store) addLastDays(ctx context.Context, tx *txn) error {
	return eachGroupIn(ctx, tx, "student_counts", func(g string) error { return s.addGroupLastDays(ctx, tx, g) })
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

// lastDaysOnStudentsVersion is the migration that moves the students' last
// days from the rows of span SpanLast to their enrolments (students.
// last_days, added by migration 35).
const lastDaysOnStudentsVersion = 36

func (s *Store) lastDaysOnStudentsMigration() *goose.Migration {
	return goose.NewGoMigration(lastDaysOnStudentsVersion,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return s.moveLastDaysToStudents(ctx, &txn{Tx: tx}) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE students SET last_days = NULL`); err != nil {
				return err
			}
			return s.addLastDays(ctx, &txn{Tx: tx})
		}})
}

// moveLastDaysToStudents writes each group's rows of last days on its
// students, and deletes the rows, a group at a time.
func (s *Store) moveLastDaysToStudents(ctx context.Context, tx *txn) error {
	if err := eachGroupIn(ctx, tx, "student_counts", func(g string) error { return s.moveGroupLastDays(ctx, tx, g) }); err != nil {
		return err
	}
	return s.lastDaysBehind(ctx, tx)
}

// lastDaysBehind keeps on the enrolments the last days of the shares
// that wait for a fold (SQLite): their appends, by a release before, kept
// none there, and a fold now leaves the last days to the appends.
func (s *Store) lastDaysBehind(ctx context.Context, tx *txn) error {
	if !s.dialect.rollupsBehind {
		return nil
	}
	var events []analytics.Event
	err := s.query(ctx, tx, `SELECT b.group_id, b.student_id, b.day, b.metric FROM rollups_behind b JOIN groups g ON g.group_id = b.group_id`, nil, func(r *sql.Rows) error {
		var e analytics.Event
		err := r.Scan(&e.GroupID, &e.StudentID, &e.Day, &e.Metric)
		events = append(events, e)
		return err
	})
	if err != nil || len(events) == 0 {
		return err
	}
	return s.saveLastDays(ctx, tx, rollup.LastDaysOf(events))
}

func (s *Store) moveGroupLastDays(ctx context.Context, tx *txn, groupID string) error {
	byOrdinal := map[int][2]string{} // id and name
	err := s.query(ctx, tx, `SELECT student_id, name, ordinal FROM students WHERE group_id = ? AND ordinal IS NOT NULL`,
		[]any{groupID}, func(r *sql.Rows) error {
			var id, name string
			var ordinal int
			err := r.Scan(&id, &name, &ordinal)
			byOrdinal[ordinal] = [2]string{id, name}
			return err
		})
	if err != nil {
		return err
	}
	var students [][]any
	err = s.query(ctx, tx, `SELECT counts FROM student_counts WHERE group_id = ? AND span = ?`,
		[]any{groupID, int(analytics.SpanLast)}, func(r *sql.Rows) error {
			var b []byte
			if err := r.Scan(&b); err != nil {
				return err
			}
			last, err := rollup.DecodeCounts(b)
			if err != nil {
				return err
			}
			for _, sc := range last {
				// A student without an enrolment was erased: their days go.
				if st, ok := byOrdinal[sc.Ordinal]; ok {
					students = append(students, []any{groupID, st[0], st[1], rollup.EncodeLastDays(sc.Counts)})
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	if err := s.setLastDays(ctx, tx, students); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.q(`DELETE FROM student_counts WHERE group_id = ? AND span = ?`), groupID, int(analytics.SpanLast))
	return err
}
