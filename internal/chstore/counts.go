package chstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// countsRow is the new state of one row of student counts.
type countsRow struct {
	key    rollup.CountsKey
	counts []byte
}

// newCountsRows returns the new state of the rows of student counts that
// delta changes, st holding their state before.
func newCountsRows(st *state, delta *rollup.Delta, ordinals map[string]int) ([]countsRow, error) {
	keys, add := delta.CountsRows(func(_, studentID string) int { return ordinals[studentID] })
	rows := make([]countsRow, 0, len(keys))
	for _, k := range keys {
		old := st.chunk(k.Span, k.Key, k.Chunk)
		b, err := rollup.MergeToRow(k.Span, old, add[k])
		if err != nil {
			return nil, fmt.Errorf("student counts of %s %s: %w", k.GroupID, k.Key, err)
		}
		if k.Span == analytics.SpanLast && bytes.Equal(b, old) {
			continue // no later day: most of a day's events after the first
		}
		rows = append(rows, countsRow{k, b})
	}
	return rows, nil
}

// groupRow returns the group row of a period (zeros when it has none),
// its sets copied: the state's own are shared by its readers.
func (st *state) groupRow(span analytics.Span, key analytics.Day) analytics.GroupRollup {
	r := st.groups[periodOf(span, key)]
	r.LiveLectureUsers, r.ChatUsers = slices.Clone(r.LiveLectureUsers), slices.Clone(r.ChatUsers)
	return r
}

// chunk returns the row of counts of a chunk, or nil.
func (st *state) chunk(span analytics.Span, key analytics.Day, chunk int) []byte {
	if chunks := st.counts[periodOf(span, key)]; chunk < len(chunks) {
		return chunks[chunk]
	}
	return nil
}

func (s *Store) insertCountsRows(ctx context.Context, sh *shard, ws ...written) error {
	if !slices.ContainsFunc(ws, func(w written) bool { return len(w.counts) > 0 }) {
		return nil
	}
	return sh.insert(ctx, `INSERT INTO `+s.table("student_counts")+` (group_id, span, period, chunk, counts, version)`, func(b driver.Batch) error {
		for _, w := range ws {
			for _, r := range w.counts {
				if err := b.Append(r.key.GroupID, uint8(r.key.Span), int32(r.key.Key), uint32(r.key.Chunk), string(r.counts), uint64(w.seq)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// convertStudentRollups is the Go step of migration 2: it turns the
// student_rollups of earlier releases (a row per student per period, as
// deltas) into rows of student counts of version 0, older than any write,
// and drops the table. Cut short, it runs again: the rows it makes are the
// same each time.
func (s *Store) convertStudentRollups(ctx context.Context, sh *shard) error {
	var exists uint8
	if err := sh.queryRow(ctx, `EXISTS TABLE `+s.table("student_rollups")).Scan(&exists); err != nil {
		return err
	}
	if exists == 0 {
		return nil
	}
	rows, err := sh.query(ctx, `SELECT DISTINCT group_id FROM `+s.table("student_rollups"))
	if err != nil {
		return err
	}
	var groups []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			rows.Close()
			return err
		}
		groups = append(groups, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, g := range groups {
		if err := s.convertGroup(ctx, sh, g); err != nil {
			return fmt.Errorf("group %s: %w", g, err)
		}
	}
	return sh.exec(ctx, `DROP TABLE IF EXISTS `+s.table("student_rollups"))
}

func (s *Store) convertGroup(ctx context.Context, sh *shard, groupID string) error {
	ordinals, err := s.readOrdinals(ctx, sh, groupID)
	if err != nil {
		return err
	}
	rows, err := sh.query(ctx, `SELECT span, period, student_id, `+studentSums+` FROM `+s.table("student_rollups")+`
		WHERE group_id = ? GROUP BY span, period, student_id`, groupID)
	if err != nil {
		return err
	}
	delta := rollup.NewDelta()
	var unnumbered []string
	for rows.Next() {
		k := rollup.StudentKey{GroupID: groupID}
		var span uint8
		var key int32
		c := new(analytics.Counts)
		if err := rows.Scan(rollup.ScanDest(c, &span, &key, &k.StudentID)...); err != nil {
			rows.Close()
			return err
		}
		if *c == (analytics.Counts{}) {
			continue // what an erasure left
		}
		k.Span, k.Key = analytics.Span(span), analytics.Day(key)
		delta.Students[k] = c
		if _, ok := ordinals[k.StudentID]; !ok && !strings.HasPrefix(k.StudentID, erasedMark) {
			unnumbered = append(unnumbered, k.StudentID)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(unnumbered) > 0 {
		// Writes number every student of their events; should one lack a
		// number all the same, it is numbered now.
		more, err := s.ordinals(ctx, sh, groupID, unnumbered)
		if err != nil {
			return err
		}
		for id, n := range more {
			ordinals[id] = n
		}
	}
	counts, err := newCountsRows(&state{}, delta, ordinals)
	if err != nil {
		return err
	}
	return s.insertCountsRows(ctx, sh, written{counts: counts})
}
