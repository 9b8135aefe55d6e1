package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"maps"
	"slices"

	"github.com/pressly/goose/v3"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// weekRollupsVersion is the migration that gives every group rollup rows
// of ISO weeks (analytics.SpanWeek), folded from its day rows. It is Go,
// not SQL, since it unions the encoded student sets.
const weekRollupsVersion = 5

func (s *Store) weekRollupsMigration() *goose.Migration {
	return goose.NewGoMigration(weekRollupsVersion,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return s.addWeekRollups(ctx, &txn{Tx: tx}) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return s.dropWeekRollups(ctx, &txn{Tx: tx}) }})
}

// addWeekRollups writes the week rows of every group, a group at a time.
func (s *Store) addWeekRollups(ctx context.Context, tx *txn) error {
	return eachGroupIn(ctx, tx, "group_rollups", func(g string) error { return s.addGroupWeekRollups(ctx, tx, g) })
}

// dropWeekRollups undoes addWeekRollups.
func (s *Store) dropWeekRollups(ctx context.Context, tx *txn) error {
	return eachGroupIn(ctx, tx, "group_rollups", func(g string) error {
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM group_rollups WHERE group_id = ? AND span = ?`), g, int(analytics.SpanWeek))
		return err
	})
}

func (s *Store) addGroupWeekRollups(ctx context.Context, tx *txn, groupID string) error {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT period, `+metricList+`, live_lecture_users, chat_users
		FROM group_rollups WHERE group_id = ? AND span = ?`), groupID, int(analytics.SpanDay))
	if err != nil {
		return err
	}
	weeks := map[rollup.GroupKey]*analytics.GroupRollup{}
	for rows.Next() {
		var day analytics.GroupRollup
		if err := scanGroupRollup(rows, &day, &day.Key); err != nil {
			rows.Close()
			return err
		}
		k := rollup.GroupKey{GroupID: groupID, Span: analytics.SpanWeek, Key: day.Key.WeekStart()}
		w := weeks[k]
		if w == nil {
			w = &analytics.GroupRollup{Key: k.Key}
			weeks[k] = w
		}
		w.Add(&day)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	keys := slices.SortedFunc(maps.Keys(weeks), func(a, b rollup.GroupKey) int { return cmp.Compare(a.Key, b.Key) })
	// A few hundred weeks per statement, within every dialect's limits.
	for chunk := range slices.Chunk(keys, 256) {
		if err := s.updateGroupRollups(ctx, tx, chunk, func(k rollup.GroupKey, r *analytics.GroupRollup) {
			*r = *weeks[k]
		}); err != nil {
			return err
		}
	}
	return nil
}
