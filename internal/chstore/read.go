package chstore

import (
	"context"

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

func (s *Store) StudentTotals(ctx context.Context, groupID string, seg analytics.Segment, totals map[string]*analytics.Counts) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	sh, err := s.shardFor(ctx, groupID)
	if err != nil || sh == nil {
		return s.wrap("StudentTotals", err)
	}
	rows, err := sh.conn.Query(ctx, `SELECT student_id, `+studentSums+` FROM `+s.table("student_rollups")+`
		WHERE group_id = ? AND span = ? AND period BETWEEN ? AND ? GROUP BY student_id`,
		groupID, uint8(seg.Span), int32(seg.Keys.First), int32(seg.Keys.Last))
	if err != nil {
		return s.wrap("StudentTotals", err)
	}
	defer rows.Close()
	return s.wrap("StudentTotals", rollup.ScanTotals(rows, totals))
}
