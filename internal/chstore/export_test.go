package chstore

import (
	"context"

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
