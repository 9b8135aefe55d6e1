package chstore

import (
	"context"
	"strings"

	"golang.org/x/sync/errgroup"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// shardFor returns the shard holding the group's usage, or nil when it
// holds none yet. A group that an unfinished write left half written is
// repaired first (waiting for the write, if it is still going). A move
// does not stand in the way: the shard the placement names holds the whole
// group throughout.
func (s *Store) shardFor(ctx context.Context, groupID string) (*shard, error) {
	p, ok, err := s.dir.Placement(ctx, groupID)
	if err != nil || !ok {
		return nil, err
	}
	if p.Intent != nil && !isMove(p.Intent) {
		err := s.locked(ctx, groupID, func(tx GroupLock) error {
			_, err := s.placeForWrite(ctx, tx)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return s.shardOf(p)
}

func (s *Store) GroupRollups(ctx context.Context, groupID string, seg analytics.Segment) ([]analytics.GroupRollup, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	sh, err := s.shardFor(ctx, groupID)
	if err != nil || sh == nil {
		return nil, s.wrap("GroupRollups", err)
	}
	rows, err := sh.conn.Query(ctx, `SELECT period, `+groupColumns+` FROM `+s.table("group_rollups")+`
		WHERE group_id = ? AND span = ? AND period BETWEEN ? AND ? GROUP BY period ORDER BY period`,
		groupID, uint8(seg.Span), int32(seg.Keys.First), int32(seg.Keys.Last))
	if err != nil {
		return nil, s.wrap("GroupRollups", err)
	}
	defer rows.Close()
	var rollups []analytics.GroupRollup
	for rows.Next() {
		var period int32
		r, err := scanGroupRow(rows, &period)
		if err != nil {
			return nil, s.wrap("GroupRollups", err)
		}
		// A period whose usage was all erased keeps a row of zeros.
		if r.Counts != (analytics.Counts{}) {
			r.Key = analytics.Day(period)
			rollups = append(rollups, r)
		}
	}
	return rollups, s.wrap("GroupRollups", rows.Err())
}

// Ordinals leaves out the marks of erased students' ordinals.
func (s *Store) Ordinals(ctx context.Context, groupID string) (map[string]int, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ordinals := map[string]int{}
	sh, err := s.shardFor(ctx, groupID)
	if err != nil || sh == nil {
		return ordinals, s.wrap("Ordinals", err)
	}
	rows, err := sh.conn.Query(ctx, `SELECT student_id, min(ordinal) FROM `+s.table("students")+`
		WHERE group_id = ? GROUP BY student_id`, groupID)
	if err != nil {
		return nil, s.wrap("Ordinals", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n uint32
		if err := rows.Scan(&id, &n); err != nil {
			return nil, s.wrap("Ordinals", err)
		}
		if !strings.HasPrefix(id, erasedMark) {
			ordinals[id] = int(n)
		}
	}
	return ordinals, s.wrap("Ordinals", rows.Err())
}

// StudentTotals reads each run of neighbouring segments in one query, the
// runs at once, and places each student's counts by their ordinal.
func (s *Store) StudentTotals(ctx context.Context, groupID string, segs []analytics.Segment, totals [][]analytics.Counts) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	sh, err := s.shardFor(ctx, groupID)
	if err != nil || sh == nil {
		return s.wrap("StudentTotals", err)
	}
	ordinals, err := s.Ordinals(ctx, groupID)
	if err != nil {
		return err
	}
	var reads errgroup.Group
	for _, run := range analytics.Runs(segs) {
		reads.Go(func() error {
			rows, err := sh.conn.Query(ctx, `SELECT period, student_id, `+studentSums+` FROM `+s.table("student_rollups")+`
				WHERE group_id = ? AND span = ? AND period BETWEEN ? AND ? GROUP BY period, student_id`,
				groupID, uint8(run.Span), int32(run.Keys.First), int32(run.Keys.Last))
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var period int32
				var id string
				var c analytics.Counts
				if err := rows.Scan(rollup.ScanDest(&c, &period, &id)...); err != nil {
					return err
				}
				n, ok := ordinals[id]
				i := analytics.SegmentOf(segs, run.Span, analytics.Day(period))
				if !ok || i < 0 {
					continue
				}
				if len(totals[i]) <= n {
					totals[i] = append(totals[i], make([]analytics.Counts, n+1-len(totals[i]))...)
				}
				totals[i][n].Add(&c)
			}
			return rows.Err()
		})
	}
	return s.wrap("StudentTotals", reads.Wait())
}
