package sqlstore

import (
	"context"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// Rebuild holds the group's write lock throughout, so the group's
// ingestion waits for it. The students keep their ordinals.
func (s *Store) Rebuild(ctx context.Context, groupID, zone string) error {
	loc, err := analytics.LoadZone(zone)
	if err != nil {
		return s.wrap("Rebuild", err)
	}
	return s.transact(ctx, "Rebuild", func(tx *txn) error {
		current, err := s.lockUsage(ctx, tx, groupID)
		if err != nil {
			return err
		}
		if err := s.setTimeZone(ctx, tx, groupID, current, zone); err != nil {
			return err
		}
		for _, table := range []string{"student_counts", "group_rollups"} {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE group_id = ?`), groupID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE students SET last_days = NULL WHERE group_id = ? AND last_days IS NOT NULL`), groupID); err != nil {
			return err
		}
		after := ""
		for {
			events, err := s.eventsAfter(ctx, tx, groupID, after, loc)
			if err != nil || len(events) == 0 {
				return err
			}
			delta := rollup.NewDelta()
			for _, e := range events {
				delta.Add(e)
			}
			if err := s.applyDelta(ctx, tx, delta, nil); err != nil {
				return err
			}
			after = events[len(events)-1].ID
		}
	})
}

// setTimeZone makes zone the group's time zone with tx, where current,
// the zone its lock read, is another.
func (s *Store) setTimeZone(ctx context.Context, tx *txn, groupID, current, zone string) error {
	if zone == current {
		return nil
	}
	_, err := tx.ExecContext(ctx, s.q(`UPDATE groups SET time_zone = ? WHERE group_id = ?`), zone, groupID)
	return err
}

// eventsAfter reads the next chunk of a group's raw events in id order.
func (s *Store) eventsAfter(ctx context.Context, tx *txn, groupID, after string, loc *time.Location) ([]analytics.Event, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT event_id, student_id, occurred_at, metric FROM events
		WHERE group_id = ? AND event_id > ? ORDER BY event_id LIMIT ?`), groupID, after, rebuildChunk)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var events []analytics.Event
	for rows.Next() {
		e := analytics.Event{GroupID: groupID}
		var at int64
		if err := rows.Scan(&e.ID, &e.StudentID, &at, &e.Metric); err != nil {
			return nil, err
		}
		e.OccurredAt = fromMillis(at)
		e.Day = analytics.DayOf(e.OccurredAt, loc)
		events = append(events, e)
	}
	return events, rows.Err()
}

// rebuildChunk is how many raw events Rebuild reads and folds in at a time.
const rebuildChunk = 50_000
