package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/pressly/goose/v3"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// studentCountsVersion is the migration that moves the students' counts
// from a row per student per period (student_rollups) to rows of counts
// by chunk of ordinals (student_counts). It is Go, not SQL, since it
// encodes the rows.
const studentCountsVersion = 4

func (s *Store) studentCountsMigration() *goose.Migration {
	return goose.NewGoMigration(studentCountsVersion,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return s.toStudentCounts(ctx, &txn{Tx: tx}) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return s.toStudentRollups(ctx, &txn{Tx: tx}) }})
}

// toStudentCounts makes student_counts from student_rollups, a period at
// a time, and drops student_rollups.
func (s *Store) toStudentCounts(ctx context.Context, tx *txn) error {
	create := `CREATE TABLE student_counts (
		group_id TEXT NOT NULL,
		span     INTEGER NOT NULL,
		period   INTEGER NOT NULL,
		chunk    INTEGER NOT NULL,
		counts   BLOB NOT NULL,
		PRIMARY KEY (group_id, span, period, chunk))`
	if s.dialect.numbered {
		// Kept in the row (compressed only when too large), not in the
		// TOAST table: a write of one event rewrites two rows of about
		// 2 KB, and out of line each would cost a second table's writes.
		create = strings.Replace(create, "BLOB", "BYTEA", 1) + `;
			ALTER TABLE student_counts ALTER COLUMN counts SET STORAGE MAIN`
	}
	for stmt := range strings.SplitSeq(create, ";") {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if err := eachGroupIn(ctx, tx, "student_rollups", func(g string) error { return s.groupToStudentCounts(ctx, tx, g) }); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DROP TABLE student_rollups`)
	return err
}

// eachGroupIn runs f for each group that has rows in a table, in order,
// for the migrations that rewrite it a group at a time; an error names
// its group.
func eachGroupIn(ctx context.Context, tx *txn, table string, f func(groupID string) error) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT group_id FROM `+table+` ORDER BY group_id`)
	if err != nil {
		return err
	}
	groups, err := scanStrings(rows)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if err := f(g); err != nil {
			return fmt.Errorf("group %s: %w", g, err)
		}
	}
	return nil
}

func (s *Store) groupToStudentCounts(ctx context.Context, tx *txn, groupID string) error {
	// Every student with usage has an ordinal; should one lack it, it is
	// numbered now.
	rows, err := tx.QueryContext(ctx, s.q(`SELECT DISTINCT student_id FROM student_rollups WHERE group_id = ?`), groupID)
	if err != nil {
		return err
	}
	ids, err := scanStrings(rows)
	if err != nil {
		return err
	}
	ordinals, err := s.ordinalsBeforeV19(ctx, tx, groupID, ids)
	if err != nil {
		return err
	}
	// A month's worth of periods at a time, each batch read whole before
	// it is written: a connection to PostgreSQL runs one query at a time.
	periods, err := s.rollupPeriods(ctx, tx, groupID)
	if err != nil {
		return err
	}
	for batch := range slices.Chunk(periods, 32) {
		delta := rollup.NewDelta()
		for _, sp := range []analytics.Span{analytics.SpanDay, analytics.SpanMonth} {
			var keys []analytics.Day
			for _, p := range batch {
				if p.Span == sp {
					keys = append(keys, p.Key)
				}
			}
			if len(keys) == 0 {
				continue
			}
			rows, err := tx.QueryContext(ctx, s.q(`SELECT period, student_id, `+metricList+` FROM student_rollups
				WHERE group_id = ? AND span = ? AND period BETWEEN ? AND ?`), groupID, int(sp), int(keys[0]), int(keys[len(keys)-1]))
			if err != nil {
				return err
			}
			for rows.Next() {
				k := rollup.StudentKey{GroupID: groupID, Span: sp}
				c := new(analytics.Counts)
				if err := rows.Scan(rollup.ScanDest(c, &k.Key, &k.StudentID)...); err != nil {
					rows.Close()
					return err
				}
				delta.Students[k] = c
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		if err := s.addCounts(ctx, tx, delta, ordinals); err != nil {
			return err
		}
	}
	return nil
}

// ordinalsBeforeV19 returns the ordinals of the group's students ids as
// the stores kept them before migration 19, in usage_students, numbering
// those without one.
func (s *Store) ordinalsBeforeV19(ctx context.Context, tx *txn, groupID string, ids []string) (map[[2]string]int, error) {
	ordinals := map[[2]string]int{}
	err := s.query(ctx, tx, `SELECT group_id, student_id, ordinal FROM usage_students WHERE group_id = ?`, []any{groupID},
		func(rows *sql.Rows) error { return scanOrdinal(rows, ordinals) })
	if err != nil {
		return nil, err
	}
	var missing [][]any
	for _, id := range ids {
		if _, ok := ordinals[[2]string{groupID, id}]; !ok {
			missing = append(missing, []any{groupID, id, id})
		}
	}
	if err := s.number(ctx, tx, ordinals, missing); err != nil {
		return nil, err
	}
	numbered := make([][]any, len(missing))
	for i, r := range missing {
		ordinals[[2]string{groupID, r[1].(string)}] = r[3].(int)
		numbered[i] = []any{groupID, r[1], r[3]}
	}
	return ordinals, s.insertRows(ctx, tx, "usage_students (group_id, student_id, ordinal)", []string{"text", "text", "integer"}, numbered, "", nil)
}

// rollupPeriods returns the spans and periods of the group's
// student_rollups, in order.
func (s *Store) rollupPeriods(ctx context.Context, tx *txn, groupID string) ([]rollup.GroupKey, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT DISTINCT span, period FROM student_rollups WHERE group_id = ? ORDER BY span, period`), groupID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var periods []rollup.GroupKey
	for rows.Next() {
		k := rollup.GroupKey{GroupID: groupID}
		if err := rows.Scan(&k.Span, &k.Key); err != nil {
			return nil, err
		}
		periods = append(periods, k)
	}
	return periods, rows.Err()
}

// toStudentRollups undoes toStudentCounts.
func (s *Store) toStudentRollups(ctx context.Context, tx *txn) error {
	bigint := "INTEGER"
	if s.dialect.numbered {
		bigint = "BIGINT"
	}
	cols := rollup.Columns("{c} " + bigint + " NOT NULL")
	table := `CREATE TABLE student_rollups (group_id TEXT NOT NULL, span INTEGER NOT NULL, period INTEGER NOT NULL,
		student_id TEXT NOT NULL, ` + cols + `, PRIMARY KEY (group_id, span, period, student_id))`
	if !s.dialect.numbered {
		table += " WITHOUT ROWID"
	}
	if _, err := tx.ExecContext(ctx, table); err != nil {
		return err
	}
	ids := map[string]map[int]string{} // by group, then ordinal
	rows, err := tx.QueryContext(ctx, `SELECT group_id, student_id, ordinal FROM usage_students`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var g, id string
		var n int
		if err := rows.Scan(&g, &id, &n); err != nil {
			rows.Close()
			return err
		}
		if ids[g] == nil {
			ids[g] = map[int]string{}
		}
		ids[g][n] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = tx.QueryContext(ctx, `SELECT group_id, span, period, counts FROM student_counts`)
	if err != nil {
		return err
	}
	var out [][]any
	for rows.Next() {
		var g string
		var span, period int
		var b []byte
		if err := rows.Scan(&g, &span, &period, &b); err != nil {
			rows.Close()
			return err
		}
		students, err := rollup.DecodeCounts(b)
		if err != nil {
			rows.Close()
			return err
		}
		for _, sc := range students {
			row := []any{g, span, period, ids[g][sc.Ordinal]}
			for _, v := range sc.Counts {
				row = append(row, v)
			}
			out = append(out, row)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	types := []string{"text", "smallint", "integer", "text"}
	for range analytics.NumMetrics {
		types = append(types, "bigint")
	}
	if err := s.insertRows(ctx, tx, "student_rollups (group_id, span, period, student_id, "+metricList+")", types, out, "", nil); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DROP TABLE student_counts`)
	return err
}
