package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"hash/maphash"
	"maps"
	"slices"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// metricList is the count columns, in analytics.Metric order.
var metricList = rollup.Columns("{c}")

// writerSeed hashes a group to its writer.
var writerSeed = maphash.MakeSeed()

// lockGroups takes the write locks of the groups (sorted ids), which every
// writer of a group's usage and students holds until its transaction
// ends: on PostgreSQL the groups' rows, locked in id order so that writers
// cannot deadlock; on SQLite the write transaction itself, which is
// exclusive.
//
// It returns the time zone of each group that exists, as the lock holds
// it: a group deleted (EraseGroup) before the lock was taken is missing,
// and its events must not be written; a group's days are cut in the zone
// read here, which changes only under the lock (Rebuild). On PostgreSQL,
// lock is the row lock taken (forWrite or another); with SKIP LOCKED, the
// groups another transaction holds are left out too, rather than waited
// for.
func (s *Store) lockGroups(ctx context.Context, tx *txn, groupIDs []string, lock string) (map[string]string, error) {
	zones := map[string]string{}
	if len(groupIDs) == 0 {
		return zones, nil
	}
	var rows *sql.Rows
	var err error
	if s.dialect.name == "postgres" {
		rows, err = tx.QueryContext(ctx, `SELECT group_id, time_zone FROM groups WHERE group_id = ANY($1) ORDER BY group_id `+lock, groupIDs)
	} else {
		rows, err = tx.QueryContext(ctx, `SELECT group_id, time_zone FROM groups WHERE group_id IN (SELECT value FROM json_each(?))`, jsonList(groupIDs))
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, zone string
		if err := rows.Scan(&id, &zone); err != nil {
			return nil, err
		}
		zones[id] = zone
	}
	return zones, rows.Err()
}

// lockUsage is lockGroups of one group, which must exist: the lock of a
// write of the group's usage. It returns the group's time zone.
//
// On SQLite it folds the group's rollups behind its events first, so that
// the write starts from rollups that count every stored event.
func (s *Store) lockUsage(ctx context.Context, tx *txn, groupID string) (string, error) {
	zones, err := s.lockGroups(ctx, tx, []string{groupID}, forWrite)
	if _, ok := zones[groupID]; err == nil && !ok {
		return "", analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
	}
	if err == nil {
		err = s.foldBehind(ctx, tx, groupID, nil)
	}
	return zones[groupID], err
}

// forWrite is the row lock of a write of a group's usage: FOR NO KEY
// UPDATE, which lets foreign key checks (FOR KEY SHARE) through.
const forWrite = `FOR NO KEY UPDATE`

func jsonList(values []string) string {
	b, _ := json.Marshal(values)
	return string(b)
}

// updateGroupRollups applies change to the group rollup rows of keys
// (zeros for those not stored yet): one read and one upsert for all, the
// group's write lock keeping other writers away in between.
func (s *Store) updateGroupRollups(ctx context.Context, tx *txn, keys []rollup.GroupKey, change func(rollup.GroupKey, *analytics.GroupRollup)) error {
	rows := make([][]any, len(keys))
	for i, k := range keys {
		rows[i] = []any{k.GroupID, int(k.Span), int(k.Key)}
	}
	current := map[rollup.GroupKey]analytics.GroupRollup{}
	err := s.selectKeyed(ctx, tx, `SELECT group_id, span, period, `+metricList+`, live_lecture_users, chat_users
		FROM k JOIN group_rollups ON group_id = k.k1 AND span = k.k2 AND period = k.k3`, groupKeyTypes, rows,
		func(rows *sql.Rows) error {
			var k rollup.GroupKey
			var r analytics.GroupRollup
			if err := scanGroupRollup(rows, &r, &k.GroupID, &k.Span, &k.Key); err != nil {
				return err
			}
			current[k] = r
			return nil
		})
	if err != nil {
		return err
	}
	return s.writeGroupRollups(ctx, tx, keys, current, change, replaceGroupRollup)
}

// writeGroupRollups upserts the group rollup rows of keys, each the row of
// current (zeros if absent) with change applied; onConflict says what
// becomes of a row stored already.
func (s *Store) writeGroupRollups(ctx context.Context, tx *txn, keys []rollup.GroupKey, current map[rollup.GroupKey]analytics.GroupRollup,
	change func(rollup.GroupKey, *analytics.GroupRollup), onConflict string) error {
	out := make([][]any, len(keys))
	for i, k := range keys {
		r := current[k]
		r.Key = k.Key
		change(k, &r)
		row := make([]any, 0, len(groupRollupTypes))
		row = append(row, k.GroupID, int(k.Span), int(k.Key))
		for _, v := range r.Counts {
			row = append(row, v)
		}
		out[i] = append(row, rollup.EncodeSet(r.LiveLectureUsers), rollup.EncodeSet(r.ChatUsers))
	}
	return s.insertRows(ctx, tx, "group_rollups (group_id, span, period, "+metricList+", live_lecture_users, chat_users)",
		groupRollupTypes, out, onConflict, nil)
}

// What becomes of a group rollup row stored already: replaced by the row
// written, or (mergesRollups) the row written added to it, its sets
// joined by union_students unless one of them is empty.
var (
	replaceGroupRollup = "ON CONFLICT (group_id, span, period) DO UPDATE SET " +
		rollup.Columns("{c} = excluded.{c}") + ", live_lecture_users = excluded.live_lecture_users, chat_users = excluded.chat_users"
	addToGroupRollup = "ON CONFLICT (group_id, span, period) DO UPDATE SET " +
		rollup.Columns("{c} = group_rollups.{c} + excluded.{c}") + ", " + unionOf("live_lecture_users") + ", " + unionOf("chat_users")
)

func unionOf(column string) string {
	return strings.ReplaceAll(`{c} = CASE WHEN length(excluded.{c}) = 0 THEN group_rollups.{c}
		WHEN length(group_rollups.{c}) = 0 THEN excluded.{c} ELSE union_students(group_rollups.{c}, excluded.{c}) END`, "{c}", column)
}

// groupRollupTypes are the SQL types of a group rollup row's columns.
var groupRollupTypes = []string{"text", "smallint", "integer", "bigint", "bigint", "bigint", "bigint", "bigint", "bigint", "bigint", "bytea", "bytea"}

// groupKeyTypes are the SQL types of a group rollup row's key columns.
var groupKeyTypes = []string{"text", "smallint", "integer"}

// ordinals returns the ordinal of every student named, per group. Those in
// known (read already in tx; may be nil) are not read again. A student
// with usage but no number (none should lack one: ingestion numbers them)
// is enrolled if need be and numbered now.
func (s *Store) ordinals(ctx context.Context, tx *txn, students map[string][]string, known map[[2]string]int) (map[[2]string]int, error) {
	ordinals := map[[2]string]int{}
	var ask [][]any
	for _, g := range slices.Sorted(maps.Keys(students)) {
		for _, id := range students[g] {
			if n, ok := known[[2]string{g, id}]; ok {
				ordinals[[2]string{g, id}] = n
			} else {
				ask = append(ask, []any{g, id})
			}
		}
	}
	err := s.selectKeyed(ctx, tx, `SELECT group_id, student_id, ordinal FROM k
		JOIN students ON group_id = k.k1 AND student_id = k.k2 WHERE ordinal IS NOT NULL`, studentKeyTypes, ask, func(rows *sql.Rows) error {
		return scanOrdinal(rows, ordinals)
	})
	if err != nil {
		return nil, err
	}
	missing := map[string][]analytics.StudentUpdate{}
	for _, k := range ask {
		g, id := k[0].(string), k[1].(string)
		if _, ok := ordinals[[2]string{g, id}]; !ok {
			missing[g] = append(missing[g], analytics.StudentUpdate{ID: id})
		}
	}
	if len(missing) == 0 {
		return ordinals, nil
	}
	return ordinals, s.saveStudents(ctx, tx, missing, ordinals, nil)
}

// scanOrdinal reads a (group_id, student_id, ordinal) row into into.
func scanOrdinal(rows *sql.Rows, into map[[2]string]int) error {
	var k [2]string
	var n int
	err := rows.Scan(&k[0], &k[1], &n)
	into[k] = n
	return err
}

// studentKeyTypes are the SQL types of a (group, student) key.
var studentKeyTypes = []string{"text", "text"}
