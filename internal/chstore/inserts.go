package chstore

import (
	"context"
	"slices"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// The inserts: the rows of any number of groups' writes, each labelled
// with its write's number, sent to a shard in one INSERT per table
// (through its replicas, replicas.go).

// written is what one write of a group inserts, every row labelled with
// the write's number. The inserts take the rows of any number of writes,
// so that a flush of many groups is one INSERT per table.
type written struct {
	seq    int64
	events []analytics.Event
	counts []countsRow
	gkeys  []rollup.GroupKey       // the group rows' keys,
	grows  []analytics.GroupRollup // and their new state
}

func (s *Store) insertEvents(ctx context.Context, sh *shard, ws ...written) error {
	return sh.insert(ctx, `INSERT INTO `+s.table("events")+` (group_id, event_id, student_id, occurred_at, metric, seq)`, func(b driver.Batch) error {
		for _, w := range ws {
			for _, e := range w.events {
				if err := b.Append(e.GroupID, e.ID, e.StudentID, e.OccurredAt.UnixMilli(), uint8(e.Metric), uint64(w.seq)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// newGroupRows returns the new state of the group rows that delta
// changes, st holding their state before.
func newGroupRows(delta *rollup.Delta, st *state, ordinals map[string]int) ([]rollup.GroupKey, []analytics.GroupRollup) {
	keys := delta.GroupKeys()
	rows := make([]analytics.GroupRollup, len(keys))
	for i, k := range keys {
		r := st.groupRow(k.Span, k.Key)
		r.Key = k.Key
		d := delta.Groups[k]
		r.Counts.Add(&d.Counts)
		for id := range d.LiveLectureUsers {
			r.LiveLectureUsers.Add(ordinals[id])
		}
		for id := range d.ChatUsers {
			r.ChatUsers.Add(ordinals[id])
		}
		rows[i] = r
	}
	return keys, rows
}

// insertGroupRows writes the writes' group rows as the new state of their
// keys.
func (s *Store) insertGroupRows(ctx context.Context, sh *shard, ws ...written) error {
	if !slices.ContainsFunc(ws, func(w written) bool { return len(w.gkeys) > 0 }) {
		return nil
	}
	return sh.insert(ctx, `INSERT INTO `+s.table("group_rollups")+` (group_id, span, period, `+metricList+`, live_lecture_users, chat_users, version)`, func(b driver.Batch) error {
		for _, w := range ws {
			for i, k := range w.gkeys {
				c := &w.grows[i].Counts
				if err := b.Append(k.GroupID, uint8(k.Span), int32(k.Key), c[0], c[1], c[2], c[3], c[4], c[5], c[6],
					string(rollup.EncodeSet(w.grows[i].LiveLectureUsers)), string(rollup.EncodeSet(w.grows[i].ChatUsers)), uint64(w.seq)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

var (
	// metricList is the count columns, in analytics.Metric order.
	metricList = rollup.Columns("{c}")
	// studentSums is the columns of a student's counts, summed.
	studentSums = rollup.Columns("sum({c})")
	// groupColumns reads a group rollup's current state: the row of the
	// highest version.
	groupColumns = rollup.Columns("argMax({c}, version)") + ", argMax(live_lecture_users, version), argMax(chat_users, version)"
)

// scanner is a row of a query's result.
type scanner interface{ Scan(dest ...any) error }

// scanGroupRow reads the leading columns into lead, then groupColumns.
func scanGroupRow(row scanner, lead ...any) (analytics.GroupRollup, error) {
	var r analytics.GroupRollup
	var ll, chat string
	if err := row.Scan(append(rollup.ScanDest(&r.Counts, lead...), &ll, &chat)...); err != nil {
		return r, err
	}
	r.LiveLectureUsers, r.ChatUsers = rollup.DecodeSet([]byte(ll)), rollup.DecodeSet([]byte(chat))
	return r, nil
}
