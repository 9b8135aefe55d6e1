package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"groupanalytics/internal/analytics"
)

// CreateGroup adds a group; a group id already taken is a Conflict.
func (s *Store) CreateGroup(ctx context.Context, g analytics.Group) error {
	return s.transact(ctx, "CreateGroup", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO groups (group_id, name, time_zone, created_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (group_id) DO NOTHING`), g.ID, g.Name, g.TimeZone, millis(g.Created))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "Group %q already exists", g.ID)
		}
		return nil
	})
}

const groupColumns = `group_id, name, time_zone, created_at, min_cell_size, retention_days, COALESCE(district_id, ''), inactive_after`

func scanGroup(row interface{ Scan(...any) error }) (analytics.Group, error) {
	var g analytics.Group
	var created int64
	err := row.Scan(&g.ID, &g.Name, &g.TimeZone, &created, &g.MinCellSize, &g.Retention, &g.DistrictID, &g.InactiveAfter)
	g.Created = fromMillis(created)
	return g, err
}

// Group returns the group with this id, or NotFound.
func (s *Store) Group(ctx context.Context, groupID string) (analytics.Group, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	g, err := scanGroup(s.read.QueryRowContext(ctx, s.q(`SELECT `+groupColumns+` FROM groups WHERE group_id = ?`), groupID))
	if errors.Is(err, sql.ErrNoRows) {
		return g, analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
	}
	return g, s.wrap("Group", err)
}

// Groups returns every group, by id.
func (s *Store) Groups(ctx context.Context) ([]analytics.Group, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT `+groupColumns+` FROM groups ORDER BY group_id`)
	if err != nil {
		return nil, s.wrap("Groups", err)
	}
	defer rows.Close()
	var groups []analytics.Group
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, s.wrap("Groups", err)
		}
		groups = append(groups, g)
	}
	return groups, s.wrap("Groups", rows.Err())
}

// RenameGroup changes a group's display name, or answers NotFound.
func (s *Store) RenameGroup(ctx context.Context, groupID, name string) error {
	return s.updateGroup(ctx, "RenameGroup", `name`, groupID, name)
}

// SetMinCellSize sets a group's minCellSize (0: off), or answers NotFound.
func (s *Store) SetMinCellSize(ctx context.Context, groupID string, size int) error {
	return s.updateGroup(ctx, "SetMinCellSize", `min_cell_size`, groupID, size)
}

// SetInactiveAfter sets a group's inactiveAfter, or answers NotFound.
func (s *Store) SetInactiveAfter(ctx context.Context, groupID string, days int) error {
	return s.updateGroup(ctx, "SetInactiveAfter", `inactive_after`, groupID, days)
}

// SetRetention sets how many days of usage a group keeps (0: all), or
// answers NotFound.
func (s *Store) SetRetention(ctx context.Context, groupID string, days analytics.Days) error {
	return s.updateGroup(ctx, "SetRetention", `retention_days`, groupID, int(days))
}

// updateGroup sets one column of a group's row, or answers NotFound.
func (s *Store) updateGroup(ctx context.Context, op, column, groupID string, value any) error {
	return s.transact(ctx, op, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE groups SET `+column+` = ? WHERE group_id = ?`), value, groupID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
		}
		return nil
	})
}

// lockGroup checks that the group exists and, on PostgreSQL, holds its row
// until the transaction ends, so that per-group numbering does not race.
func (s *Store) lockGroup(ctx context.Context, tx *txn, groupID string) error {
	var id string
	err := tx.QueryRowContext(ctx, s.q(`SELECT group_id FROM groups WHERE group_id = ?`+s.dialect.forUpdate), groupID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
	}
	return err
}

// AddPlan adds a plan to its group and returns it with its id.
func (s *Store) AddPlan(ctx context.Context, p analytics.Plan) (analytics.Plan, error) {
	err := s.transact(ctx, "AddPlan", func(tx *txn) error {
		if err := s.lockGroup(ctx, tx, p.GroupID); err != nil {
			return err
		}
		var seats *int
		if p.Seats > 0 {
			seats = &p.Seats
		}
		return tx.QueryRowContext(ctx, s.q(`INSERT INTO plans (group_id, plan_id, starts_at, ends_at, cancelled_at, seats)
			SELECT CAST(? AS TEXT), COALESCE(MAX(plan_id), 0) + 1, CAST(? AS BIGINT), CAST(? AS BIGINT), NULL, CAST(? AS INTEGER) FROM plans WHERE group_id = ?
			RETURNING plan_id`), p.GroupID, millis(p.Starts), nullMillis(p.Ends), seats, p.GroupID).Scan(&p.ID)
	})
	return p, err
}

const planColumns = `group_id, plan_id, starts_at, ends_at, cancelled_at, COALESCE(seats, 0)`

func scanPlan(row interface{ Scan(...any) error }) (analytics.Plan, error) {
	var p analytics.Plan
	var starts int64
	var ends, cancelled sql.NullInt64
	err := row.Scan(&p.GroupID, &p.ID, &starts, &ends, &cancelled, &p.Seats)
	p.Starts, p.Ends, p.Cancelled = fromMillis(starts), fromNullMillis(ends), fromNullMillis(cancelled)
	return p, err
}

// CancelPlan cancels the group's plan from at on and returns it.
func (s *Store) CancelPlan(ctx context.Context, groupID string, planID int64, at time.Time) (analytics.Plan, error) {
	var p analytics.Plan
	err := s.transact(ctx, "CancelPlan", func(tx *txn) error {
		var err error
		p, err = scanPlan(tx.QueryRowContext(ctx, s.q(`UPDATE plans SET cancelled_at = COALESCE(cancelled_at, ?)
			WHERE group_id = ? AND plan_id = ? RETURNING `+planColumns), millis(at), groupID, planID))
		if errors.Is(err, sql.ErrNoRows) {
			return analytics.Errorf(analytics.NotFound, "Plan %d of group %q not found", planID, groupID)
		}
		return err
	})
	return p, err
}

// Plans returns the group's plans, in the order they were added.
func (s *Store) Plans(ctx context.Context, groupID string) ([]analytics.Plan, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.Group(ctx, groupID); err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT `+planColumns+` FROM plans WHERE group_id = ? ORDER BY plan_id`), groupID)
	if err != nil {
		return nil, s.wrap("Plans", err)
	}
	defer rows.Close()
	var plans []analytics.Plan
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, s.wrap("Plans", err)
		}
		plans = append(plans, p)
	}
	return plans, s.wrap("Plans", rows.Err())
}
