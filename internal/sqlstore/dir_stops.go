package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"groupanalytics/internal/analytics"
)

// ClaimStops claims each stop in one transaction: a row made, or one not
// told whose claim has expired taken over.
func (s *Store) ClaimStops(ctx context.Context, a analytics.StopAlert, stops []analytics.Stop, now, lease time.Time) ([]analytics.Stop, error) {
	var claimed []analytics.Stop
	err := s.transact(ctx, "ClaimStops", func(tx *txn) error {
		claimed = claimed[:0]
		for _, st := range stops {
			err := s.query(ctx, tx, `INSERT INTO stop_alerts (group_id, class_id, address, student_id, last_day, claimed_until)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (group_id, class_id, address, student_id, last_day) DO UPDATE SET claimed_until = excluded.claimed_until
				WHERE stop_alerts.told_at IS NULL AND stop_alerts.claimed_until <= ?
				RETURNING student_id`, []any{a.GroupID, a.ClassID, a.Address, st.StudentID, int(st.LastDay), millis(lease), millis(now)},
				func(*sql.Rows) error {
					claimed = append(claimed, st)
					return nil
				})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return claimed, err
}

// StopsTold records the stops as told at at (failure "") or given up.
func (s *Store) StopsTold(ctx context.Context, a analytics.StopAlert, stops []analytics.Stop, at time.Time, failure string) error {
	return s.updateStops(ctx, "StopsTold", `told_at = ?, failure = ?`, []any{millis(at), failure}, a, stops)
}

// ReleaseStops lets the stops be claimed again from retryAt.
func (s *Store) ReleaseStops(ctx context.Context, a analytics.StopAlert, stops []analytics.Stop, retryAt time.Time) error {
	return s.updateStops(ctx, "ReleaseStops", `claimed_until = ?`, []any{millis(retryAt)}, a, stops)
}

// updateStops sets columns (set, with its arguments) of the rows of stops.
func (s *Store) updateStops(ctx context.Context, op, set string, args []any, a analytics.StopAlert, stops []analytics.Stop) error {
	return s.transact(ctx, op, func(tx *txn) error {
		for _, st := range stops {
			_, err := tx.ExecContext(ctx, s.q(`UPDATE stop_alerts SET `+set+`
				WHERE group_id = ? AND class_id = ? AND address = ? AND student_id = ? AND last_day = ?`),
				append(args, a.GroupID, a.ClassID, a.Address, st.StudentID, int(st.LastDay))...)
			if err != nil {
				return err
			}
		}
		return nil
	})
}
