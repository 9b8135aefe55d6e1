package chstore

import (
	"context"
	"fmt"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// The students' last days of use are rows of student_counts of span
// analytics.SpanLast: every append merges its events' days into them
// (newCountsRows); an erasure takes the student out of them as out of
// every row; the writes that recompute rows from the raw events (a
// repair, a rebuild, a retention cut) make them anew from the days.

// recomputeLastDays sets the group's rows of last days to what its rows of
// each day say as of write seq, which wrote them last: a month recomputed
// from its events, or days cut by retention, may have taken a student's
// last day. They are the only rows of last days the write makes.
func (s *Store) recomputeLastDays(ctx context.Context, sh *shard, p writebehind.Placement, seq int64) error {
	groupID := p.GroupID
	st, err := s.stateAt(ctx, sh, writebehind.Placement{GroupID: groupID, Shard: sh.name, Seq: seq, Epoch: p.Epoch}, true)
	if err != nil {
		return err
	}
	var last rollup.LastDays
	for per, chunks := range st.counts {
		if per.span() != analytics.SpanDay {
			continue
		}
		for chunk, b := range chunks {
			if b != nil {
				if err := last.AddDay(per.key(), chunk, b); err != nil {
					return fmt.Errorf("student counts of %s %s: %w", groupID, per.key(), err)
				}
			}
		}
	}
	rows := last.Rows()
	var counts []countsRow
	for chunk, b := range st.counts[periodOf(analytics.SpanLast, 0)] {
		if _, kept := rows[chunk]; !kept && len(b) > 1 {
			rows[chunk] = rollup.AppendCounts(nil, nil) // emptied
		}
	}
	for chunk, b := range rows {
		counts = append(counts, countsRow{rollup.CountsKey{GroupID: groupID, Span: analytics.SpanLast, Chunk: chunk}, b})
	}
	w := written{seq: seq, counts: counts}
	if err := s.insertCountsRows(ctx, sh, w); err != nil {
		return err
	}
	// The state kept at seq was read before these rows.
	s.states.replace(groupID, st.after(w))
	return nil
}

// addLastDays is the Go step of migration 3: it makes the rows of last
// days of the groups of earlier releases from their current rows of each
// day, as version 0, older than any write. Cut short, it runs again: a
// group that has them already is left as it is.
func (s *Store) addLastDays(ctx context.Context, sh *shard) error {
	groups, err := s.distinctGroups(ctx, sh, `span = 0`)
	if err != nil {
		return err
	}
	done, err := s.distinctGroups(ctx, sh, `span = 3`)
	if err != nil {
		return err
	}
	for g := range groups {
		if done[g] {
			continue
		}
		if err := s.addGroupLastDays(ctx, sh, g); err != nil {
			return fmt.Errorf("group %s: %w", g, err)
		}
	}
	return nil
}

// distinctGroups returns the groups of the rows of student_counts where
// holds.
func (s *Store) distinctGroups(ctx context.Context, sh *shard, where string) (map[string]bool, error) {
	rows, err := sh.query(ctx, `SELECT DISTINCT group_id FROM `+s.table("student_counts")+` WHERE `+where)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	groups := map[string]bool{}
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, err
		}
		groups[g] = true
	}
	return groups, rows.Err()
}

func (s *Store) addGroupLastDays(ctx context.Context, sh *shard, groupID string) error {
	rows, err := sh.query(ctx, `SELECT period, chunk, argMax(counts, version) FROM `+s.table("student_counts")+`
		WHERE group_id = ? AND span = 0 GROUP BY period, chunk`, groupID)
	if err != nil {
		return err
	}
	var last rollup.LastDays
	for rows.Next() {
		var day int32
		var chunk uint32
		var b string
		if err := rows.Scan(&day, &chunk, &b); err != nil {
			rows.Close()
			return err
		}
		if err := last.AddDay(analytics.Day(day), int(chunk), []byte(b)); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var counts []countsRow
	for chunk, b := range last.Rows() {
		counts = append(counts, countsRow{rollup.CountsKey{GroupID: groupID, Span: analytics.SpanLast, Chunk: chunk}, b})
	}
	return s.insertCountsRows(ctx, sh, written{counts: counts})
}
