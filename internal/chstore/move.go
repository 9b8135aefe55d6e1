package chstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/writebehind"
)

// move is the intent of a group's move between shards. Until the
// placement names To, From holds the whole group and To may hold part of
// a copy; after, To holds it all and From may still hold the old rows.
// Either way the repair deletes the group from the shard not named.
type move struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// isMove reports whether a recorded intent is a move's.
func isMove(recorded []byte) bool {
	var in intent
	return json.Unmarshal(recorded, &in) == nil && in.Move != nil
}

// MoveResult tells what a move did.
type MoveResult struct {
	From, To string
	Events   uint64 // events copied
	Took     time.Duration
}

// movedTables are the tables that hold a group's rows.
var movedTables = []string{"events", "student_counts", "group_rollups", "students"}

// copyBatch bounds the rows a move holds in memory at once.
const copyBatch = 100_000

// readDrain is how long a move waits, after the placement names the new
// shard, before it deletes the old copy: reads that looked up the
// placement just before it changed read the old shard meanwhile.
var readDrain = time.Second

// MoveGroup moves the group's usage to the shard named to, under the
// group's write lock: its writers wait until the move is done, its reads
// go on (from the old shard, then from the new one). The move copies the
// group's rows, checks that every event arrived, points the placement at
// the new shard and then deletes the old rows. A move that dies half way
// is finished or undone by the group's next write; moving again also does.
// A group without usage is just placed on to.
func (s *Store) MoveGroup(ctx context.Context, groupID, to string) (MoveResult, error) {
	start := time.Now()
	res := MoveResult{To: to}
	target := s.shardNamed(to)
	if target == nil {
		return res, analytics.Errorf(analytics.Invalid, "Shard %q is not one of the usage URL's: %s",
			to, strings.Join(s.Shards(), ", "))
	}
	to = target.name
	res.To = to
	err := s.locked(ctx, groupID, func(tx writebehind.GroupLock) error {
		_, ok, err := tx.Placement(ctx)
		if err != nil {
			return err
		}
		if !ok {
			_, err := tx.Place(ctx, to)
			return err
		}
		source, p, err := s.placeForWrite(ctx, tx)
		if err != nil {
			return err
		}
		res.From = source.name
		if source == target {
			return nil
		}
		if _, err := markIntent(ctx, tx, intent{Move: &move{From: source.name, To: to}}, p.Seq); err != nil {
			return err
		}
		if _, err := s.dropGroup(ctx, target, groupID); err != nil {
			return fmt.Errorf("clearing shard %s: %w", to, err)
		}
		if res.Events, err = s.copyGroup(ctx, source, target, groupID); err != nil {
			return err
		}
		if _, err := tx.Place(ctx, to); err != nil {
			return err
		}
		select {
		case <-time.After(readDrain):
		case <-ctx.Done():
			return ctx.Err()
		}
		_, err = s.dropGroup(ctx, source, groupID)
		return err
	})
	res.Took = time.Since(start)
	return res, s.wrap("MoveGroup", err)
}

// settleMove finishes or undoes a move that died: the shard the placement
// does not name loses the group's rows (if the usage URL still names it).
func (s *Store) settleMove(ctx context.Context, p writebehind.Placement, m *move) error {
	stale := m.To
	if p.Shard == m.To {
		stale = m.From
	}
	if sh := s.shardNamed(stale); sh != nil {
		_, err := s.dropGroup(ctx, sh, p.GroupID)
		return err
	}
	return nil
}

// copyGroup copies every row of the group from one shard to another and
// returns how many events it copied, after checking that the target holds
// as many as the source.
func (s *Store) copyGroup(ctx context.Context, from, to *shard, groupID string) (uint64, error) {
	var events uint64
	for _, t := range movedTables {
		n, err := s.copyRows(ctx, from, to, t, groupID)
		if err != nil {
			return 0, fmt.Errorf("copying %s from %s to %s: %w", t, from.name, to.name, err)
		}
		if t == "events" {
			events = n
		}
	}
	// Merges change the rollups' row counts, never the events'.
	for _, sh := range []*shard{from, to} {
		n, err := s.groupRowCount(ctx, sh, "events", groupID)
		if err != nil {
			return 0, err
		}
		if n != events {
			return 0, fmt.Errorf("shard %s holds %d events of group %s after copying %d", sh.name, n, groupID, events)
		}
	}
	return events, nil
}

// copyRows copies the group's rows of one table as they are stored
// (merged or not: the engines merge them alike on the target), in batches.
func (s *Store) copyRows(ctx context.Context, from, to *shard, table, groupID string) (uint64, error) {
	rows, err := from.query(ctx, `SELECT * FROM `+s.table(table)+` WHERE group_id = ?`, groupID)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	columns := rows.Columns()
	types := rows.ColumnTypes()
	dest := make([]any, len(types))
	for i, ct := range types {
		dest[i] = reflect.New(ct.ScanType()).Interface()
	}
	insert := `INSERT INTO ` + s.table(table) + ` (` + strings.Join(columns, ", ") + `)`
	var copied uint64
	// A batch is held whole, so that an insert refused for its turn
	// (see shard.insert) can be sent again.
	var batch [][]any
	send := func() error {
		err := to.insert(undeduplicated(ctx), insert, func(b driver.Batch) error {
			for _, values := range batch {
				if err := b.Append(values...); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			copied += uint64(len(batch))
		}
		batch = batch[:0]
		return err
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return copied, err
		}
		values := make([]any, len(dest))
		for i, d := range dest {
			values[i] = reflect.ValueOf(d).Elem().Interface()
		}
		if batch = append(batch, values); len(batch) == copyBatch {
			if err := send(); err != nil {
				return copied, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return copied, err
	}
	if len(batch) > 0 {
		return copied, send()
	}
	return copied, nil
}

func (s *Store) groupRowCount(ctx context.Context, sh *shard, table, groupID string) (uint64, error) {
	var n uint64
	err := sh.queryRow(ctx, `SELECT count() FROM `+s.table(table)+` WHERE group_id = ?`, groupID).Scan(&n)
	return n, err
}

// dropGroup deletes every row of the group from the shard and waits until
// the deletions are done; it returns how many rows went from each table.
// Tables without its rows are left alone: a deletion rewrites every part
// it may touch.
func (s *Store) dropGroup(ctx context.Context, sh *shard, groupID string) ([]analytics.Deleted, error) {
	var deleted []analytics.Deleted
	for _, t := range movedTables {
		n, err := s.groupRowCount(ctx, sh, t, groupID)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		if err := s.deleteRows(ctx, sh, t, `group_id = ?`, groupID); err != nil {
			return nil, err
		}
		deleted = append(deleted, analytics.Deleted{Store: "clickhouse", Table: t, Rows: int64(n)})
	}
	if len(deleted) == 0 {
		return nil, nil
	}
	return deleted, s.awaitMutations(ctx, sh)
}

// EraseGroup deletes the group's rows on its shard, waiting for every
// replica, then the group from the directory, under the group's lock. If
// it stops part-way, the group stays, marked for a rebuild: its next
// write recomputes its rollups from the events left.
func (s *Store) EraseGroup(ctx context.Context, groupID string) ([]analytics.Deleted, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var deleted []analytics.Deleted
	err := s.locked(ctx, groupID, func(tx writebehind.GroupLock) error {
		_, placed, err := tx.Placement(ctx)
		if err != nil {
			return err
		}
		if placed {
			// Settle what an unfinished write (or move) left first.
			sh, p, err := s.placeForWrite(ctx, tx)
			if err != nil {
				return err
			}
			if _, err := markIntent(ctx, tx, intent{All: true}, p.Seq); err != nil {
				return err
			}
			if deleted, err = s.dropGroup(ctx, sh, groupID); err != nil {
				return err
			}
		}
		directory, err := tx.DeleteGroup(ctx)
		deleted = append(deleted, directory...)
		return err
	})
	return deleted, s.wrap("EraseGroup", err)
}

// ShardLoad is what one shard holds.
type ShardLoad struct {
	Shard  string
	Groups []string // ids of the groups placed on it, sorted
	Events uint64   // events stored on it
	Err    error    // why it did not answer
	// Down are the replicas of a replicated shard that do not answer,
	// each with why, while another does.
	Down []string
}

// Loads tells, shard by shard, which groups the directory places on it
// and how many events it holds.
func (s *Store) Loads(ctx context.Context) ([]ShardLoad, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	placements, err := s.dir.Placements(ctx)
	if err != nil {
		return nil, s.wrap("Loads", err)
	}
	groups := map[string][]string{}
	for _, p := range placements {
		groups[p.Shard] = append(groups[p.Shard], p.GroupID)
	}
	loads := make([]ShardLoad, len(s.shards))
	for i, sh := range s.shards {
		loads[i] = ShardLoad{Shard: sh.name, Groups: groups[sh.name]}
		loads[i].Events, loads[i].Err = s.eventCount(ctx, sh)
		if sh.replicated() && loads[i].Err == nil {
			loads[i].Down = downReplicas(ctx, sh)
		}
		delete(groups, sh.name)
	}
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		loads = append(loads, ShardLoad{Shard: name, Groups: groups[name], Err: errors.New("not in the usage URL")})
	}
	for i := range loads {
		slices.Sort(loads[i].Groups)
	}
	return loads, nil
}

// downReplicas returns the replicas of sh that do not answer, each as
// "address (why)".
func downReplicas(ctx context.Context, sh *shard) []string {
	var down []string
	for _, r := range sh.replicas {
		if err := r.conn.Ping(ctx); err != nil {
			down = append(down, fmt.Sprintf("%s (%v)", r.addr, err))
		}
	}
	return down
}

// UnplacedEvents counts the events the shards hold of groups that the
// directory does not place on them: a usage store that another directory
// fills, which the demo must leave alone.
func (s *Store) UnplacedEvents(ctx context.Context) (uint64, error) {
	loads, err := s.Loads(ctx)
	if err != nil {
		return 0, err
	}
	var unplaced uint64
	for _, l := range loads {
		sh := s.shardNamed(l.Shard)
		if l.Err != nil || sh == nil {
			return 0, s.wrap("UnplacedEvents", cmp.Or(l.Err, errors.New("no such shard")))
		}
		placed := uint64(0)
		for _, g := range l.Groups {
			n, err := s.groupRowCount(ctx, sh, "events", g)
			if err != nil {
				return 0, s.wrap("UnplacedEvents", err)
			}
			placed += n
		}
		unplaced += l.Events - min(placed, l.Events)
	}
	return unplaced, nil
}

// eventCount returns how many events the shard holds, of every group
// (the parts' row counts, less a replicated shard's fence).
func (s *Store) eventCount(ctx context.Context, sh *shard) (uint64, error) {
	var events, fences uint64
	err := sh.queryRow(ctx, `SELECT toUInt64(sum(rows)) FROM system.parts WHERE active AND database = ? AND table = 'events'`,
		s.database).Scan(&events)
	if err == nil && sh.replicated() {
		fences, err = s.groupRowCount(ctx, sh, "events", fence)
	}
	return events - min(fences, events), s.wrap("eventCount", err)
}
