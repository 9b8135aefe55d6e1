package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"groupanalytics/internal/analytics"
)

// AddWarehouse adds a school's or a district's warehouse; an id taken is
// a Conflict.
func (s *Store) AddWarehouse(ctx context.Context, w analytics.Warehouse) error {
	return s.transact(ctx, "AddWarehouse", func(tx *txn) error {
		if err := s.lockOwner(ctx, tx, w.GroupID, w.DistrictID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO warehouses (warehouse_id, group_id, district_id, format, endpoint, region, bucket,
				prefix, access_key, secret_key, folder, created_at, from_day)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (warehouse_id) DO NOTHING`),
			w.ID, nullable(w.GroupID), nullable(w.DistrictID), w.Format, w.Endpoint, w.Region, w.Bucket, w.Prefix, w.AccessKey,
			w.SecretKey, w.Folder, millis(w.Created), int64(w.From))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "Warehouse %q already exists", w.ID)
		}
		return nil
	})
}

// warehouseColumns are a warehouse's columns, as scanWarehouse reads them.
const warehouseColumns = `warehouse_id, COALESCE(group_id, ''), COALESCE(district_id, ''), format, endpoint, region, bucket, prefix,
	access_key, secret_key, folder, created_at, from_day`

func scanWarehouse(row interface{ Scan(...any) error }) (analytics.Warehouse, error) {
	var w analytics.Warehouse
	var created, from int64
	err := row.Scan(&w.ID, &w.GroupID, &w.DistrictID, &w.Format, &w.Endpoint, &w.Region, &w.Bucket, &w.Prefix, &w.AccessKey,
		&w.SecretKey, &w.Folder, &created, &from)
	w.Created, w.From = fromMillis(created), analytics.Day(from)
	return w, err
}

// WarehousesOf returns a school's warehouses (groupID), a district's
// (districtID), or every one, by id.
func (s *Store) WarehousesOf(ctx context.Context, groupID, districtID string) ([]analytics.Warehouse, error) {
	query, args := `SELECT `+warehouseColumns+` FROM warehouses ORDER BY warehouse_id`, []any{}
	if groupID != "" || districtID != "" {
		column, owner := ownerColumn(groupID, districtID)
		query, args = `SELECT `+warehouseColumns+` FROM warehouses WHERE `+column+` = ? ORDER BY warehouse_id`, []any{owner}
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, s.wrap("WarehousesOf", err)
	}
	defer rows.Close()
	var out []analytics.Warehouse
	for rows.Next() {
		w, err := scanWarehouse(rows)
		if err != nil {
			return nil, s.wrap("WarehousesOf", err)
		}
		out = append(out, w)
	}
	return out, s.wrap("WarehousesOf", rows.Err())
}

// Warehouse returns one warehouse, or answers NotFound.
func (s *Store) Warehouse(ctx context.Context, warehouseID string) (analytics.Warehouse, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	w, err := scanWarehouse(s.read.QueryRowContext(ctx, s.q(`SELECT `+warehouseColumns+` FROM warehouses WHERE warehouse_id = ?`), warehouseID))
	if errors.Is(err, sql.ErrNoRows) {
		return w, warehouseNotFound(warehouseID)
	}
	return w, s.wrap("Warehouse", err)
}

func warehouseNotFound(id string) error {
	return analytics.Errorf(analytics.NotFound, "Warehouse %q not found", id)
}

// RemoveWarehouse takes a warehouse away with its days, or answers
// NotFound.
func (s *Store) RemoveWarehouse(ctx context.Context, warehouseID string) error {
	return s.transact(ctx, "RemoveWarehouse", func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM warehouse_days WHERE warehouse_id = ?`), warehouseID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM warehouses WHERE warehouse_id = ?`), warehouseID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return warehouseNotFound(warehouseID)
		}
		return nil
	})
}

// QueueWarehouseDays makes the days due for their reasons, at at, in as
// few statements as the database allows (a district's backfill queues
// hundreds of thousands).
func (s *Store) QueueWarehouseDays(ctx context.Context, warehouseID string, days []analytics.WarehouseDay, at time.Time) error {
	rows := make([][]any, len(days))
	for i, d := range days {
		rows[i] = []any{warehouseID, d.GroupID, int64(d.Day), d.Reason, millis(at)}
	}
	return s.transact(ctx, "QueueWarehouseDays", func(tx *txn) error {
		return s.insertRows(ctx, tx, "warehouse_days (warehouse_id, group_id, day, reason, queued_at)",
			[]string{"text", "text", "bigint", "text", "bigint"}, rows,
			"ON CONFLICT (warehouse_id, group_id, day) DO UPDATE SET reason = excluded.reason, queued_at = excluded.queued_at", nil)
	})
}

// DeliveredWarehouseDays returns, by warehouse, the group's days among
// days that a warehouse delivered before.
func (s *Store) DeliveredWarehouseDays(ctx context.Context, groupID string, days []analytics.Day) (map[string][]analytics.Day, error) {
	out := map[string][]analytics.Day{}
	if len(days) == 0 {
		return out, nil
	}
	first, last := days[0], days[0]
	for _, d := range days {
		first, last = min(first, d), max(last, d)
	}
	wanted := map[analytics.Day]bool{}
	for _, d := range days {
		wanted[d] = true
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT warehouse_id, day FROM warehouse_days
		WHERE group_id = ? AND day BETWEEN ? AND ? AND delivered_at IS NOT NULL ORDER BY warehouse_id, day`), groupID, int64(first), int64(last))
	if err != nil {
		return nil, s.wrap("DeliveredWarehouseDays", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var day int64
		if err := rows.Scan(&id, &day); err != nil {
			return nil, s.wrap("DeliveredWarehouseDays", err)
		}
		if wanted[analytics.Day(day)] {
			out[id] = append(out[id], analytics.Day(day))
		}
	}
	return out, s.wrap("DeliveredWarehouseDays", rows.Err())
}

// ClaimWarehouse takes the warehouse's next run until lease, when no
// other claim is current and its retry time has passed.
func (s *Store) ClaimWarehouse(ctx context.Context, warehouseID string, now, lease time.Time) (bool, error) {
	return s.claim(ctx, "ClaimWarehouse", `UPDATE warehouses SET claimed_until = ?
		WHERE warehouse_id = ? AND claimed_until <= ? AND retry_at <= ?`, millis(lease), warehouseID, millis(now), millis(now))
}

// WarehouseState reads the first limit of the warehouse's days queued and
// how many there are, its schools' last days the schedule delivered, and
// how its last run ended.
func (s *Store) WarehouseState(ctx context.Context, warehouseID string, limit int) (analytics.WarehouseState, error) {
	st := analytics.WarehouseState{Scheduled: map[string]analytics.Day{}}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var lastRun, retryAt int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT last_run, last_error, failures, retry_at,
			(SELECT count(*) FROM warehouse_days d WHERE d.warehouse_id = w.warehouse_id AND d.reason IS NOT NULL)
		FROM warehouses w WHERE warehouse_id = ?`), warehouseID).Scan(&lastRun, &st.LastError, &st.Failures, &retryAt, &st.Queued)
	if errors.Is(err, sql.ErrNoRows) {
		return st, warehouseNotFound(warehouseID)
	}
	if err != nil {
		return st, s.wrap("WarehouseState", err)
	}
	if lastRun != 0 {
		st.LastRun = fromMillis(lastRun)
	}
	if retryAt != 0 {
		st.RetryAt = fromMillis(retryAt)
	}
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT group_id, day, reason, COALESCE(delivered_at, 0) FROM warehouse_days
		WHERE warehouse_id = ? AND reason IS NOT NULL ORDER BY group_id, day LIMIT ?`), warehouseID, limit)
	if err != nil {
		return st, s.wrap("WarehouseState", err)
	}
	for rows.Next() {
		var d analytics.WarehouseDay
		var day, delivered int64
		if err := rows.Scan(&d.GroupID, &day, &d.Reason, &delivered); err != nil {
			rows.Close()
			return st, s.wrap("WarehouseState", err)
		}
		d.Day = analytics.Day(day)
		if delivered != 0 {
			d.Delivered = fromMillis(delivered)
		}
		st.Pending = append(st.Pending, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, s.wrap("WarehouseState", err)
	}
	rows, err = s.read.QueryContext(ctx, s.q(`SELECT group_id, MAX(day) FROM warehouse_days
		WHERE warehouse_id = ? AND scheduled = 1 GROUP BY group_id`), warehouseID)
	if err != nil {
		return st, s.wrap("WarehouseState", err)
	}
	defer rows.Close()
	for rows.Next() {
		var group string
		var day int64
		if err := rows.Scan(&group, &day); err != nil {
			return st, s.wrap("WarehouseState", err)
		}
		st.Scheduled[group] = analytics.Day(day)
	}
	return st, s.wrap("WarehouseState", rows.Err())
}

// WarehouseRan records the end of a run begun at started: the days
// delivered at at, those dropped, and its failure with when to try again.
func (s *Store) WarehouseRan(ctx context.Context, warehouseID string, delivered, dropped []analytics.WarehouseDay, started, at time.Time,
	failure string, retryAt time.Time) error {
	rows := make([][]any, len(delivered))
	for i, d := range delivered {
		scheduled := 0
		if d.Reason == analytics.ReasonSchedule {
			scheduled = 1
		}
		rows[i] = []any{warehouseID, d.GroupID, int64(d.Day), millis(at), scheduled}
	}
	return s.transact(ctx, "WarehouseRan", func(tx *txn) error {
		// A day queued again since the run began stays due.
		err := s.insertRows(ctx, tx, "warehouse_days (warehouse_id, group_id, day, delivered_at, scheduled)",
			[]string{"text", "text", "bigint", "bigint", "bigint"}, rows,
			`ON CONFLICT (warehouse_id, group_id, day) DO UPDATE SET delivered_at = excluded.delivered_at,
			scheduled = CASE WHEN excluded.scheduled = 1 THEN 1 ELSE warehouse_days.scheduled END,
			reason = CASE WHEN warehouse_days.queued_at <= `+strconv.FormatInt(millis(started), 10)+` THEN NULL ELSE warehouse_days.reason END`, nil)
		if err != nil {
			return err
		}
		keys := make([][]any, len(dropped))
		for i, d := range dropped {
			keys[i] = []any{warehouseID, d.GroupID, int64(d.Day)}
		}
		err = s.selectKeyed(ctx, tx, `UPDATE warehouse_days SET reason = NULL FROM k WHERE warehouse_days.warehouse_id = k.k1
			AND warehouse_days.group_id = k.k2 AND warehouse_days.day = k.k3 AND warehouse_days.queued_at <= `+strconv.FormatInt(millis(started), 10),
			[]string{"text", "text", "bigint"}, keys, nil)
		if err != nil {
			return err
		}
		retry := int64(0)
		if !retryAt.IsZero() {
			retry = millis(retryAt)
		}
		failures := `0`
		if failure != "" {
			failures = `failures + 1`
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE warehouses SET claimed_until = 0, last_run = ?, last_error = ?, failures = `+failures+`,
			retry_at = ? WHERE warehouse_id = ?`), millis(at), failure, retry, warehouseID)
		return err
	})
}
