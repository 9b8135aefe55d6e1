package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/writebehind"
)

// The PostgreSQL directory is a usage store on ClickHouse's coordinator.
var _ writebehind.Coordinator = (*Store)(nil)

// WithGroupLock runs fn once in a transaction holding the group's write
// lock, committed when fn returns nil. It does not retry: fn writes to
// another database, which a retry would write to twice.
func (s *Store) WithGroupLock(ctx context.Context, groupID string, fn func(tx writebehind.GroupLock) error) error {
	if s.marks == nil {
		return fmt.Errorf("WithGroupLock: a sharded usage store needs a PostgreSQL directory, not %s", s.dialect.name)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.wrap("WithGroupLock", s.transactOnce(ctx, txDefault, func(tx *txn) error {
		if err := holdUsageWrites(ctx, tx); err != nil {
			return err
		}
		// FOR NO KEY UPDATE, which lets Place's foreign key check through.
		zone, err := s.lockUsage(ctx, tx, groupID)
		if err != nil {
			return err
		}
		if _, err := advisoryLocks(ctx, tx, []string{groupID}, usageLockSpace, false, true); err != nil {
			return err
		}
		return fn(&GroupTx{s: s, tx: tx, groupID: groupID, zone: zone})
	}))
}

// The locks of a usage store on ClickHouse, per group, are advisory locks
// of the directory's database (in memory: taking one writes nothing),
// keyed by a space and a hash of the group's id (two groups may share a
// key, which only makes them wait for each other):
const (
	// usageLockSpace: held shared by the log's writers and appliers, and
	// alone by a write of the group's usage (WithGroupLock: an erasure, a
	// move, a change of zone), which also locks the group's row.
	usageLockSpace = 0x67616c75
	// applyLockSpace: held by one applier of the group at a time.
	applyLockSpace = 0x67616c67
)

// advisoryLocks takes the advisory locks of space of the groups (shared or
// alone; waiting for each, or only trying) in the order given, and returns
// the groups whose lock it holds.
func advisoryLocks(ctx context.Context, tx *txn, groupIDs []string, space int, shared, wait bool) ([]string, error) {
	fn := "advisory_xact_lock"
	if shared {
		fn += "_shared"
	}
	query := `SELECT g FROM unnest($1::text[]) AS g WHERE pg_try_` + fn + `($2, hashtext(g))`
	if wait {
		query = `SELECT g FROM unnest($1::text[]) AS g, pg_` + fn + `($2, hashtext(g))`
	}
	rows, err := tx.QueryContext(ctx, query, groupIDs, space)
	if err != nil {
		return nil, err
	}
	return scanStrings(rows)
}

// logLocks is how WithGroupsLogging locks groups: their usage locks
// shared, without waiting. It is not a mode of the contract's, which
// numbers its modes from 0.
const logLocks writebehind.LockMode = -1

// WithGroupsLock runs fn once in a transaction holding locks of the
// groups, as mode says, committed when fn returns nil. A group's apply
// lock is its usage lock shared, which its write lock excludes and the
// log's writers (WithGroupsLogging) share, and its apply lock, which one
// transaction holds at a time.
func (s *Store) WithGroupsLock(ctx context.Context, groupIDs []string, mode writebehind.LockMode, fn func(tx writebehind.GroupsLock) error) error {
	if s.marks == nil {
		return fmt.Errorf("WithGroupsLock: a sharded usage store needs a PostgreSQL directory, not %s", s.dialect.name)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.wrap("WithGroupsLock", s.transactOnce(ctx, txDefault, func(tx *txn) error {
		if err := holdUsageWrites(ctx, tx); err != nil {
			return err
		}
		zones, gone, err := s.lockUsages(ctx, tx, groupIDs, mode)
		if err != nil {
			return err
		}
		var locked []*GroupTx
		for _, id := range slices.Sorted(maps.Keys(zones)) {
			locked = append(locked, &GroupTx{s: s, tx: tx, groupID: id, zone: zones[id]})
		}
		return fn(&GroupsTx{s: s, tx: tx, locked: locked, gone: gone})
	}))
}

// lockUsages takes the groups' locks as mode says (in id order) and
// returns the zones of the groups it locked, read under the locks (a zone
// changes under the write lock only), and the groups asked for that do
// not exist.
func (s *Store) lockUsages(ctx context.Context, tx *txn, groupIDs []string, mode writebehind.LockMode) (zones map[string]string, gone []string, err error) {
	ids := slices.Sorted(slices.Values(groupIDs))
	var held []string
	switch mode {
	case writebehind.WaitWrite:
		if zones, err = s.lockGroups(ctx, tx, ids, forWrite); err == nil {
			held, err = advisoryLocks(ctx, tx, ids, usageLockSpace, false, true)
		}
	case logLocks:
		held, err = advisoryLocks(ctx, tx, ids, usageLockSpace, true, false)
	default:
		wait := mode == writebehind.WaitApply
		if held, err = advisoryLocks(ctx, tx, ids, usageLockSpace, true, wait); err == nil {
			held, err = advisoryLocks(ctx, tx, held, applyLockSpace, false, wait)
		}
	}
	if err == nil && zones == nil {
		zones, err = s.lockGroups(ctx, tx, ids, "")
	}
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if _, ok := zones[id]; !ok {
			gone = append(gone, id)
		}
	}
	maps.DeleteFunc(zones, func(id, _ string) bool { return !slices.Contains(held, id) })
	return zones, gone, nil
}

// GroupsTx is a transaction holding the write locks of several groups.
type GroupsTx struct {
	s      *Store
	tx     *txn
	locked []*GroupTx         // one each, in id order, sharing the transaction
	gone   []string           // the groups asked for that do not exist
	logged map[string][]int64 // the log's rows Logged read, by group
}

// Locked are the groups locked, in id order, sharing the transaction.
func (g *GroupsTx) Locked() []writebehind.GroupLock {
	locks := make([]writebehind.GroupLock, len(g.locked))
	for i, tx := range g.locked {
		locks[i] = tx
	}
	return locks
}

// Gone are the groups asked for that do not exist.
func (g *GroupsTx) Gone() []string { return g.gone }

// lockedIDs are the ids of the locked groups, in order.
func (g *GroupsTx) lockedIDs() []string {
	ids := make([]string, len(g.locked))
	for i, l := range g.locked {
		ids[i] = l.groupID
	}
	return ids
}

// MarkIntents is MarkIntent of several of the locked groups, in one
// statement committed at once.
func (g *GroupsTx) MarkIntents(ctx context.Context, intents map[string][]byte) (map[string]int64, error) {
	return g.s.markIntents(ctx, intents)
}

// Placements reads the locked groups' placements: those that have one.
func (g *GroupsTx) Placements(ctx context.Context) (map[string]writebehind.Placement, error) {
	return placementsOf(ctx, g.tx, g.lockedIDs())
}

// placementsOf reads the placements of those of the groups that have one,
// by group.
func placementsOf(ctx context.Context, tx *txn, groupIDs []string) (map[string]writebehind.Placement, error) {
	rows, err := tx.QueryContext(ctx, `SELECT group_id, shard, seq, intent, epoch FROM usage_placements WHERE group_id = ANY($1)`, groupIDs)
	if err != nil {
		return nil, err
	}
	return byGroup(scanPlacements(rows))
}

// byGroup is the placements of list, by group.
func byGroup(list []writebehind.Placement, err error) (map[string]writebehind.Placement, error) {
	placements := make(map[string]writebehind.Placement, len(list))
	for _, p := range list {
		placements[p.GroupID] = p
	}
	return placements, err
}

// Place is Place of several of the locked groups, each on its shard, in
// one statement committed at once.
func (g *GroupsTx) Place(ctx context.Context, shards map[string]string) (map[string]writebehind.Placement, error) {
	return byGroup(g.s.place(ctx, shards))
}

// SaveStudents is SaveStudents of several of the locked groups (updates
// by group), with the transaction: the same few statements for any number
// of groups.
func (g *GroupsTx) SaveStudents(ctx context.Context, updates map[string][]analytics.StudentUpdate) error {
	return g.s.saveStudents(ctx, g.tx, updates, nil, nil)
}

// ClearIntents is ClearIntent of several of the locked groups, in one
// statement.
func (g *GroupsTx) ClearIntents(ctx context.Context, groupIDs []string) error {
	return clearIntents(ctx, g.tx, groupIDs)
}

// place records each group on its shard, placing or moving it, committed
// at once, and returns their placements.
//
// place and markIntents write outside the transaction that holds the
// groups' locks, on connections of their own, so that what they record is
// committed at once. The rows they write are the placements', not the
// groups', so the locks do not stand in their way.
func (s *Store) place(ctx context.Context, shards map[string]string) ([]writebehind.Placement, error) {
	var ids, names []string
	var epochs []int64
	for id, shard := range shards {
		ids, names, epochs = append(ids, id), append(names, shard), append(epochs, rand.Int64())
	}
	rows, err := s.marks.QueryContext(ctx, `INSERT INTO usage_placements (group_id, shard, epoch)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
		ON CONFLICT (group_id) DO UPDATE SET shard = excluded.shard RETURNING group_id, shard, seq, intent, epoch`, ids, names, epochs)
	if err != nil {
		return nil, err
	}
	return scanPlacements(rows)
}

// markIntents records each group's intent and takes its next write number,
// committed at once.
func (s *Store) markIntents(ctx context.Context, intents map[string][]byte) (map[string]int64, error) {
	ids, texts := make([]string, 0, len(intents)), make([]string, 0, len(intents))
	for id, in := range intents {
		ids, texts = append(ids, id), append(texts, string(in))
	}
	rows, err := s.marks.QueryContext(ctx, `UPDATE usage_placements AS p SET seq = p.seq + 1, intent = v.intent
		FROM unnest($1::text[], $2::text[]) AS v(group_id, intent) WHERE p.group_id = v.group_id RETURNING p.group_id, p.seq`, ids, texts)
	if err != nil {
		return nil, err
	}
	seqs, err := scanMap[int64](rows)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, ok := seqs[id]; !ok {
			return nil, analytics.Errorf(analytics.NotFound, "Group %q has no placement", id)
		}
	}
	return seqs, nil
}

// clearIntents ends the groups' intents when the transaction commits.
func clearIntents(ctx context.Context, tx *txn, groupIDs []string) error {
	_, err := tx.ExecContext(ctx, `UPDATE usage_placements SET intent = NULL WHERE group_id = ANY($1) AND intent IS NOT NULL`, groupIDs)
	return err
}

// scanPlacements reads rows of (group_id, shard, seq, intent, epoch).
func scanPlacements(rows *sql.Rows) ([]writebehind.Placement, error) {
	defer rows.Close()
	var list []writebehind.Placement
	for rows.Next() {
		var p writebehind.Placement
		var intent sql.NullString
		if err := rows.Scan(&p.GroupID, &p.Shard, &p.Seq, &intent, &p.Epoch); err != nil {
			return nil, err
		}
		if intent.Valid {
			p.Intent = []byte(intent.String)
		}
		list = append(list, p)
	}
	return list, rows.Err()
}

// GroupTx is a transaction holding one group's write lock: what the usage
// store on ClickHouse reads and writes of the directory under it.
type GroupTx struct {
	s       *Store
	tx      *txn
	groupID string
	zone    string // the group's time zone, as the lock read it
}

// GroupID is the group whose lock the transaction holds.
func (g *GroupTx) GroupID() string { return g.groupID }

// Placement reads the group's placement; ok is false when it has none.
func (g *GroupTx) Placement(ctx context.Context) (writebehind.Placement, bool, error) {
	return g.s.placement(ctx, g.tx, g.groupID)
}

// GroupsPerShard counts the groups placed on each shard.
func (g *GroupTx) GroupsPerShard(ctx context.Context) (map[string]int, error) {
	rows, err := g.tx.QueryContext(ctx, `SELECT shard, COUNT(*) FROM usage_placements GROUP BY shard`)
	if err != nil {
		return nil, err
	}
	return scanMap[int](rows)
}

// Location returns the group's time zone.
func (g *GroupTx) Location(context.Context) (*time.Location, error) {
	return analytics.LoadZone(g.zone)
}

// SetTimeZone makes zone the group's time zone, with the transaction.
func (g *GroupTx) SetTimeZone(ctx context.Context, zone string) error {
	if err := g.s.setTimeZone(ctx, g.tx, g.groupID, g.zone, zone); err != nil {
		return err
	}
	g.zone = zone
	return nil
}

// Place records the group on shard, placing or moving it, committed at
// once (see place), and returns the placement.
func (g *GroupTx) Place(ctx context.Context, shard string) (writebehind.Placement, error) {
	list, err := g.s.place(ctx, map[string]string{g.groupID: shard})
	if err != nil || len(list) != 1 {
		return writebehind.Placement{}, cmp.Or(err, fmt.Errorf("Place: %d placements of group %s", len(list), g.groupID))
	}
	return list[0], nil
}

// MarkIntent records intent and takes the group's next write number,
// committed at once.
func (g *GroupTx) MarkIntent(ctx context.Context, intent []byte) (int64, error) {
	seqs, err := g.s.markIntents(ctx, map[string][]byte{g.groupID: intent})
	return seqs[g.groupID], err
}

// ClearIntent ends the group's intent when the transaction commits.
func (g *GroupTx) ClearIntent(ctx context.Context) error {
	return clearIntents(ctx, g.tx, []string{g.groupID})
}

// SaveStudents enrols and names students with the transaction.
func (g *GroupTx) SaveStudents(ctx context.Context, updates []analytics.StudentUpdate) error {
	return g.s.saveStudents(ctx, g.tx, map[string][]analytics.StudentUpdate{g.groupID: updates}, nil, nil)
}

// DeleteGroup deletes the group and everything the directory holds of it
// with the transaction, and returns what it removed. As EraseGroup does,
// it folds the access log's pending entries first, so that the group's go
// with its log, and then locks the group's row for the deletion: the lock
// of a usage write lets foreign keys through, and a fold (or a warehouse's
// record) that named the group between the deletion of its rows and of
// the group failed the deletion with a 500.
func (g *GroupTx) DeleteGroup(ctx context.Context) ([]analytics.Deleted, error) {
	if err := g.s.foldAccess(ctx); err != nil {
		return nil, err
	}
	if err := g.s.lockGroup(ctx, g.tx, g.groupID); err != nil {
		return nil, err
	}
	return g.s.deleteGroupRows(ctx, g.tx, g.groupID)
}

// DeleteStudent removes a student's enrolment (and with it their class
// memberships) and logged events with the transaction, and returns what
// it removed: nothing when it found neither.
func (g *GroupTx) DeleteStudent(ctx context.Context, studentID string) ([]analytics.Deleted, error) {
	return g.s.deleteStudentFrom(ctx, g.tx, g.groupID, studentID, nil, "class_members", "students", "usage_log")
}

// AddReceipt writes a deletion receipt with the transaction: that of an
// erasure a repair finished, committed with it.
func (g *GroupTx) AddReceipt(ctx context.Context, r analytics.Receipt) error {
	return g.s.insertReceipt(ctx, g.tx, r)
}

// querier is what placement reads through: the pool or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) placement(ctx context.Context, q querier, groupID string) (writebehind.Placement, bool, error) {
	p := writebehind.Placement{GroupID: groupID}
	var intent sql.NullString
	err := q.QueryRowContext(ctx, s.q(`SELECT shard, seq, intent, epoch FROM usage_placements WHERE group_id = ?`), groupID).
		Scan(&p.Shard, &p.Seq, &intent, &p.Epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if intent.Valid {
		p.Intent = []byte(intent.String)
	}
	return p, err == nil, err
}

// Placement returns the group's placement; ok is false when it has none.
func (s *Store) Placement(ctx context.Context, groupID string) (writebehind.Placement, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	p, ok, err := s.placement(ctx, s.read, groupID)
	return p, ok, s.wrap("Placement", err)
}

// Placements returns every group's placement.
func (s *Store) Placements(ctx context.Context) ([]writebehind.Placement, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT group_id, shard, seq, intent, epoch FROM usage_placements ORDER BY group_id`)
	if err != nil {
		return nil, s.wrap("Placements", err)
	}
	list, err := scanPlacements(rows)
	return list, s.wrap("Placements", err)
}
