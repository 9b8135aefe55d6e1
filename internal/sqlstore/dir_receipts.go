package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"

	"groupanalytics/internal/analytics"
)

// deletedJSON is a receipt's count of one table, as stored.
type deletedJSON struct {
	Store string `json:"store"`
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// AddReceipt records a deletion's receipt.
func (s *Store) AddReceipt(ctx context.Context, r analytics.Receipt) error {
	return s.transact(ctx, "AddReceipt", func(tx *txn) error { return s.insertReceipt(ctx, tx, r) })
}

// insertReceipt writes a receipt with tx.
func (s *Store) insertReceipt(ctx context.Context, tx *txn, r analytics.Receipt) error {
	deleted := make([]deletedJSON, len(r.Deleted))
	for i, d := range r.Deleted {
		deleted[i] = deletedJSON(d)
	}
	b, err := json.Marshal(deleted)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO deletion_receipts (group_id, student_id, action, requested_by, began_at, finished_at, deleted, kept_from)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), r.GroupID, r.StudentID, r.Action, r.RequestedBy, millis(r.Began), millis(r.Finished), string(b),
		sql.NullInt64{Int64: int64(r.KeptFrom), Valid: r.Action == analytics.ActionUsageExpired})
	return err
}

// Receipts lists the receipts of a group, or of every group, newest first.
func (s *Store) Receipts(ctx context.Context, groupID string) ([]analytics.Receipt, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT receipt_id, group_id, student_id, action, requested_by, began_at, finished_at, deleted, kept_from
		FROM deletion_receipts WHERE group_id = ? OR ? = '' ORDER BY receipt_id DESC`), groupID, groupID)
	if err != nil {
		return nil, s.wrap("Receipts", err)
	}
	defer rows.Close()
	var receipts []analytics.Receipt
	for rows.Next() {
		var r analytics.Receipt
		var began, finished int64
		var deleted string
		var keptFrom sql.NullInt64
		if err := rows.Scan(&r.ID, &r.GroupID, &r.StudentID, &r.Action, &r.RequestedBy, &began, &finished, &deleted, &keptFrom); err != nil {
			return nil, s.wrap("Receipts", err)
		}
		var counts []deletedJSON
		if err := json.Unmarshal([]byte(deleted), &counts); err != nil {
			return nil, s.wrap("Receipts", err)
		}
		for _, d := range counts {
			r.Deleted = append(r.Deleted, analytics.Deleted(d))
		}
		r.Began, r.Finished, r.KeptFrom = fromMillis(began), fromMillis(finished), analytics.Day(keptFrom.Int64)
		receipts = append(receipts, r)
	}
	return receipts, s.wrap("Receipts", rows.Err())
}
