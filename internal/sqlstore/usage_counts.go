package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// The students' counts live in student_counts: per group, span and
// period, one row per chunk of student ordinals, its students' counts
// encoded by rollup.AppendCounts. A write adds its counts to the rows it
// changes under the group's write lock: in the upsert on SQLite, or by
// reading them and writing the sums back (addCounts).

// addCounts adds the delta's student counts to their rows: merged into
// them by the upsert where the database can (mergesRollups), or else read
// first and written back.
func (s *Store) addCounts(ctx context.Context, tx *txn, delta *rollup.Delta, ordinals map[[2]string]int) error {
	keys, add := delta.CountsRows(func(groupID, studentID string) int { return ordinals[[2]string{groupID, studentID}] })
	if len(keys) == 0 {
		return nil
	}
	var current map[rollup.CountsKey][]byte
	if !s.dialect.mergesRollups {
		var err error
		if current, err = s.countsRows(ctx, tx, keys); err != nil {
			return err
		}
	}
	rows := make([][]any, 0, len(keys))
	for _, k := range keys {
		b, err := rollup.AddToRow(current[k], add[k])
		if err != nil {
			return fmt.Errorf("student counts of %s %d %d: %w", k.GroupID, k.Key, k.Chunk, err)
		}
		rows = append(rows, []any{k.GroupID, int(k.Span), int(k.Key), k.Chunk, b})
	}
	conflict := replaceCounts
	if s.dialect.mergesRollups {
		conflict = addToCounts
	}
	return s.insertRows(ctx, tx, "student_counts (group_id, span, period, chunk, counts)",
		countsRowTypes, rows, conflict, nil)
}

// What becomes of a row of students' counts stored already: replaced by
// the row written, or (mergesRollups) the row written added to it.
const (
	replaceCounts = "ON CONFLICT (group_id, span, period, chunk) DO UPDATE SET counts = excluded.counts"
	addToCounts   = "ON CONFLICT (group_id, span, period, chunk) DO UPDATE SET counts = add_student_counts(student_counts.counts, excluded.counts)"
)

// countsRows reads the stored rows of keys (sorted); those not stored yet
// are absent. A write reads the chunks it changes, not every chunk of its
// periods.
func (s *Store) countsRows(ctx context.Context, tx *txn, keys []rollup.CountsKey) (map[rollup.CountsKey][]byte, error) {
	rows := make([][]any, len(keys))
	for i, k := range keys {
		rows[i] = []any{k.GroupID, int(k.Span), int(k.Key), k.Chunk}
	}
	current := map[rollup.CountsKey][]byte{}
	err := s.selectKeyed(ctx, tx, `SELECT group_id, span, period, chunk, counts FROM k
		JOIN student_counts ON group_id = k.k1 AND span = k.k2 AND period = k.k3 AND chunk = k.k4`,
		countsKeyTypes, rows, func(rows *sql.Rows) error {
			var k rollup.CountsKey
			var b []byte
			err := rows.Scan(&k.GroupID, &k.Span, &k.Key, &k.Chunk, &b)
			current[k] = b
			return err
		})
	return current, err
}

// countsKeyTypes are the SQL types of a student_counts row's key columns;
// countsRowTypes those of the whole row, the key and its counts.
var (
	countsKeyTypes = []string{"text", "smallint", "integer", "integer"}
	countsRowTypes = append(slices.Clip(countsKeyTypes), "bytea")
)

// Ordinals returns the group's numbered students: kept in the process
// under the group's roster version, which every change of its ordinals
// changes, so that a report of 10,000 students does not read them all
// again. The map is shared by its readers.
func (s *Store) Ordinals(ctx context.Context, groupID string) (map[string]int, error) {
	version, err := s.RosterVersion(ctx, groupID)
	switch {
	case analytics.ErrorCode(err) == analytics.NotFound:
		return map[string]int{}, nil
	case err != nil:
		return nil, err
	}
	if ordinals, ok := s.keptOrdinals.Get(groupID, version); ok {
		return ordinals, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT student_id, ordinal FROM students WHERE group_id = ? AND ordinal IS NOT NULL`), groupID)
	if err != nil {
		return nil, s.wrap("Ordinals", err)
	}
	ordinals, err := scanMap[int](rows)
	if err != nil {
		return nil, s.wrap("Ordinals", err)
	}
	cost := 0
	for id := range ordinals {
		cost += len(id) + ordinalCost
	}
	s.keptOrdinals.Put(groupID, version, ordinals, cost)
	return ordinals, nil
}

// ordinalCost is about what a map entry costs beside its key's bytes.
const ordinalCost = 40

// maxKeptOrdinals bounds the bytes of the ordinals a store keeps: a group of
// 10,000 students takes about 0.6 MB.
const maxKeptOrdinals = 32 << 20

// StudentTotals reads each run of neighbouring segments in one query, the
// runs at once.
func (s *Store) StudentTotals(ctx context.Context, groupID string, segs []analytics.Segment, totals [][]analytics.Counts) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	runs := analytics.Runs(segs)
	// Each run adds into segments of its own: no two share a buffer.
	var reads errgroup.Group
	for _, run := range runs {
		reads.Go(func() error {
			if run.Span == analytics.SpanLast {
				i := analytics.SegmentOf(segs, run.Span, 0)
				var err error
				totals[i], err = s.lastDays(ctx, groupID, totals[i])
				return err
			}
			rows, err := s.read.QueryContext(ctx, s.q(`SELECT period, counts FROM student_counts
				WHERE group_id = ? AND span = ? AND period BETWEEN ? AND ?`),
				groupID, int(run.Span), int(run.Keys.First), int(run.Keys.Last))
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var period analytics.Day
				var b sql.RawBytes
				if err := rows.Scan(&period, &b); err != nil {
					return err
				}
				i := analytics.SegmentOf(segs, run.Span, period)
				if i < 0 {
					continue
				}
				if totals[i], err = rollup.AddCounts(totals[i], b); err != nil {
					return fmt.Errorf("student counts of %s %s: %w", groupID, period, err)
				}
			}
			return rows.Err()
		})
	}
	return s.wrap("StudentTotals", reads.Wait())
}

// lastDays adds the group's students' last days to totals, by ordinal,
// growing it as needed, and returns it. They are kept in the process
// under the group's creation and usage version, which every write of its
// last days moves (with the rollups it writes, or their fold, which a
// read settles first), so that a list of 10,000 students does not read
// them all again.
func (s *Store) lastDays(ctx context.Context, groupID string, totals []analytics.Counts) ([]analytics.Counts, error) {
	var created, version int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT g.created_at, COALESCE(v.version, 0) FROM groups g
		LEFT JOIN usage_versions v ON v.group_id = g.group_id WHERE g.group_id = ?`), groupID).Scan(&created, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return totals, nil
	} else if err != nil {
		return totals, err
	}
	key := strconv.FormatInt(created, 10) + "." + strconv.FormatInt(version, 10)
	last, ok := s.keptLastDays.Get(groupID, key)
	if !ok {
		if last, err = s.readLastDays(ctx, groupID); err != nil {
			return totals, err
		}
		s.keptLastDays.Put(groupID, key, last, len(last)*int(unsafe.Sizeof(analytics.Counts{})))
	}
	if n := len(totals); len(last) > n {
		totals = slices.Grow(totals, len(last)-n)[:len(last)]
		clear(totals[n:])
	}
	for i := range last {
		totals[i].Add(&last[i])
	}
	return totals, nil
}

// readLastDays reads the group's students' last days, by ordinal.
func (s *Store) readLastDays(ctx context.Context, groupID string) ([]analytics.Counts, error) {
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT ordinal, last_days FROM students
		WHERE group_id = ? AND last_days IS NOT NULL AND ordinal IS NOT NULL`), groupID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var last []analytics.Counts
	for rows.Next() {
		var ordinal int
		var b sql.RawBytes
		if err := rows.Scan(&ordinal, &b); err != nil {
			return nil, err
		}
		if n := len(last); ordinal >= n {
			last = slices.Grow(last, ordinal+1-n)[:ordinal+1]
			clear(last[n:])
		}
		if last[ordinal], err = rollup.DecodeLastDays(b); err != nil {
			return nil, fmt.Errorf("last days of %s: %w", groupID, err)
		}
	}
	return last, rows.Err()
}

// maxKeptLastDays bounds the bytes of the last days a store keeps: a group
// of 10,000 students takes about 0.6 MB.
const maxKeptLastDays = 64 << 20

// eraseCounts takes the student of ordinal out of the group's rows of
// counts, and returns their counts in each period.
func (s *Store) eraseCounts(ctx context.Context, tx *txn, groupID string, ordinal int) (map[rollup.GroupKey]analytics.Counts, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT span, period, counts FROM student_counts
		WHERE group_id = ? AND chunk = ?`), groupID, rollup.ChunkOf(ordinal))
	if err != nil {
		return nil, err
	}
	shares := map[rollup.GroupKey]analytics.Counts{}
	var updates [][]any
	var emptied []rollup.GroupKey
	for rows.Next() {
		k := rollup.GroupKey{GroupID: groupID}
		var b []byte
		if err := rows.Scan(&k.Span, &k.Key, &b); err != nil {
			rows.Close()
			return nil, err
		}
		students, err := rollup.DecodeCounts(b)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("student counts of %s %s: %w", groupID, k.Key, err)
		}
		i := slices.IndexFunc(students, func(sc rollup.StudentCounts) bool { return sc.Ordinal == ordinal })
		if i < 0 {
			continue
		}
		shares[k] = students[i].Counts
		if students = slices.Delete(students, i, i+1); len(students) == 0 {
			emptied = append(emptied, k)
		} else {
			updates = append(updates, []any{groupID, int(k.Span), int(k.Key), rollup.ChunkOf(ordinal), rollup.AppendCounts(nil, students)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, k := range emptied {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM student_counts WHERE group_id = ? AND span = ? AND period = ? AND chunk = ?`),
			groupID, int(k.Span), int(k.Key), rollup.ChunkOf(ordinal)); err != nil {
			return nil, err
		}
	}
	return shares, s.insertRows(ctx, tx, "student_counts (group_id, span, period, chunk, counts)",
		countsRowTypes, updates, replaceCounts, nil)
}
