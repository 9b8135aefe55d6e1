package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"groupanalytics/internal/analytics"
)

// Placement says which shard of a usage store on ClickHouse holds a
// group's usage: the shard's name, the number of the group's last write,
// and the intent of a write in progress (nil when none is unfinished).
// The directory keeps placements for that store (package chstore), which
// gives them their meaning.
type Placement struct {
	GroupID string
	Shard   string
	Seq     int64
	Intent  []byte
	// Epoch is drawn at random when the group is first placed: a group
	// deleted and created again under its id is another group, whose
	// writes are numbered anew.
	Epoch int64
}

// WithGroupLock runs fn once in a transaction holding the group's write
// lock, committed when fn returns nil. It does not retry: fn writes to
// another database, which a retry would write to twice.
func (s *Store) WithGroupLock(ctx context.Context, groupID string, fn func(tx *GroupTx) error) error {
	if s.marks == nil {
		return fmt.Errorf("WithGroupLock: a sharded usage store needs a PostgreSQL directory, not %s", s.dialect.name)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.wrap("WithGroupLock", s.transactOnce(ctx, func(tx *txn) error {
		// FOR NO KEY UPDATE, which lets Place's foreign key check through.
		zone, err := s.lockUsage(ctx, tx, groupID)
		if err != nil {
			return err
		}
		return fn(&GroupTx{s: s, tx: tx, groupID: groupID, zone: zone})
	}))
}

// GroupTx is a transaction holding one group's write lock: what the usage
// store on ClickHouse reads and writes of the directory under it.
type GroupTx struct {
	s       *Store
	tx      *txn
	groupID string
	zone    string // the group's time zone, as the lock read it
}

// Placement reads the group's placement; ok is false when it has none.
func (g *GroupTx) Placement(ctx context.Context) (Placement, bool, error) {
	return g.s.placement(ctx, g.tx, g.groupID)
}

// GroupsPerShard counts the groups placed on each shard.
func (g *GroupTx) GroupsPerShard(ctx context.Context) (map[string]int, error) {
	rows, err := g.tx.QueryContext(ctx, `SELECT shard, COUNT(*) FROM usage_placements GROUP BY shard`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	groups := map[string]int{}
	for rows.Next() {
		var shard string
		var n int
		if err := rows.Scan(&shard, &n); err != nil {
			return nil, err
		}
		groups[shard] = n
	}
	return groups, rows.Err()
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

// Place records the group on shard, placing or moving it, and returns the
// placement.
//
// Place and MarkIntent write outside the transaction, on connections of
// their own, so that what they record is committed at once. The row they
// write is the placement's, not the group's, so the lock the transaction
// holds does not stand in their way.
func (g *GroupTx) Place(ctx context.Context, shard string) (Placement, error) {
	if _, err := g.s.marks.ExecContext(ctx, g.s.q(`INSERT INTO usage_placements (group_id, shard, epoch) VALUES (?, ?, ?)
		ON CONFLICT (group_id) DO UPDATE SET shard = excluded.shard`), g.groupID, shard, rand.Int64()); err != nil {
		return Placement{}, err
	}
	p, _, err := g.s.placement(ctx, g.s.marks, g.groupID)
	return p, err
}

// MarkIntent records intent and takes the group's next write number,
// committed at once.
func (g *GroupTx) MarkIntent(ctx context.Context, intent []byte) (int64, error) {
	var seq int64
	err := g.s.marks.QueryRowContext(ctx, g.s.q(`UPDATE usage_placements SET seq = seq + 1, intent = ?
		WHERE group_id = ? RETURNING seq`), string(intent), g.groupID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, analytics.Errorf(analytics.NotFound, "Group %q has no placement", g.groupID)
	}
	return seq, err
}

// ClearIntent ends the group's intent when the transaction commits.
func (g *GroupTx) ClearIntent(ctx context.Context) error {
	_, err := g.tx.ExecContext(ctx, g.s.q(`UPDATE usage_placements SET intent = NULL WHERE group_id = ? AND intent IS NOT NULL`), g.groupID)
	return err
}

// SaveStudents enrols and names students with the transaction.
func (g *GroupTx) SaveStudents(ctx context.Context, updates []analytics.StudentUpdate) error {
	return g.s.saveStudents(ctx, g.tx, g.groupID, updates, nil)
}

// DeleteGroup deletes the group and everything the directory holds of it
// with the transaction.
func (g *GroupTx) DeleteGroup(ctx context.Context) error {
	return g.s.deleteGroupRows(ctx, g.tx, g.groupID)
}

// DeleteStudent removes a student's enrolment with the transaction and
// reports whether they were enrolled.
func (g *GroupTx) DeleteStudent(ctx context.Context, studentID string) (bool, error) {
	res, err := g.tx.ExecContext(ctx, g.s.q(`DELETE FROM students WHERE group_id = ? AND student_id = ?`), g.groupID, studentID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// querier is what placement reads through: the pool or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) placement(ctx context.Context, q querier, groupID string) (Placement, bool, error) {
	p := Placement{GroupID: groupID}
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
func (s *Store) Placement(ctx context.Context, groupID string) (Placement, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	p, ok, err := s.placement(ctx, s.read, groupID)
	return p, ok, s.wrap("Placement", err)
}

// Placements returns every group's placement.
func (s *Store) Placements(ctx context.Context) ([]Placement, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT group_id, shard, seq, intent, epoch FROM usage_placements ORDER BY group_id`)
	if err != nil {
		return nil, s.wrap("Placements", err)
	}
	defer rows.Close()
	var list []Placement
	for rows.Next() {
		var p Placement
		var intent sql.NullString
		if err := rows.Scan(&p.GroupID, &p.Shard, &p.Seq, &intent, &p.Epoch); err != nil {
			return nil, s.wrap("Placements", err)
		}
		if intent.Valid {
			p.Intent = []byte(intent.String)
		}
		list = append(list, p)
	}
	return list, s.wrap("Placements", rows.Err())
}
