package chstore

import (
	"context"
	"errors"

	"groupanalytics/internal/analytics"
)

// InsertRawEvents stores events on the group's shard and nothing else, as
// a write that dies half way does.
func (s *Store) InsertRawEvents(ctx context.Context, p analytics.Placement, events []analytics.Event) error {
	sh, err := s.shardOf(p)
	if err != nil {
		return err
	}
	return s.insertEvents(ctx, sh, events, p.Seq)
}

// errDied stops a write as if its process died.
var errDied = errors.New("died")

// MoveHalfway does what a move does up to its copy (and, when flip is set,
// its change of placement), then stops as if its process died there.
func (s *Store) MoveHalfway(ctx context.Context, groupID, to string, flip bool) error {
	err := s.locked(ctx, groupID, func(tx analytics.GroupLock) error {
		p, _, err := tx.Placement(ctx)
		if err != nil {
			return err
		}
		if _, err := markIntent(ctx, tx, intent{Move: &move{From: p.Shard, To: to}}); err != nil {
			return err
		}
		if _, err := s.copyGroup(ctx, s.byName[p.Shard], s.byName[to], groupID); err != nil {
			return err
		}
		if flip {
			if _, err := tx.Place(ctx, to); err != nil {
				return err
			}
		}
		return errDied
	})
	if errors.Is(err, errDied) {
		return nil
	}
	return err
}

// GroupEventsOn counts the group's events on one shard.
func (s *Store) GroupEventsOn(ctx context.Context, shard, groupID string) (uint64, error) {
	return s.groupRowCount(ctx, s.byName[shard], "events", groupID)
}

// NumberStudents gives the students ordinals on the group's shard, as a
// write that died after its lookups leaves them.
func (s *Store) NumberStudents(ctx context.Context, p analytics.Placement, ids []string) error {
	sh, err := s.shardOf(p)
	if err != nil {
		return err
	}
	_, err = s.ordinals(ctx, sh, p.GroupID, ids)
	return err
}
