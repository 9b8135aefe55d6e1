package stores

import (
	"context"

	"groupanalytics/internal/chstore"
	"groupanalytics/internal/sqlstore"
)

// Coordinator is the PostgreSQL directory serving a usage store on
// ClickHouse as its coordinator: chstore declares what it needs, sqlstore
// has it, and neither knows the other.
func Coordinator(dir *sqlstore.Store) chstore.Coordinator { return coordinator{dir} }

type coordinator struct{ dir *sqlstore.Store }

func (c coordinator) WithGroupLock(ctx context.Context, groupID string, fn func(tx chstore.GroupLock) error) error {
	return c.dir.WithGroupLock(ctx, groupID, func(tx *sqlstore.GroupTx) error { return fn(groupLock{tx}) })
}

func (c coordinator) Placement(ctx context.Context, groupID string) (chstore.Placement, bool, error) {
	p, ok, err := c.dir.Placement(ctx, groupID)
	return chstore.Placement(p), ok, err
}

func (c coordinator) Placements(ctx context.Context) ([]chstore.Placement, error) {
	list, err := c.dir.Placements(ctx)
	placements := make([]chstore.Placement, len(list))
	for i, p := range list {
		placements[i] = chstore.Placement(p)
	}
	return placements, err
}

// groupLock is a sqlstore.GroupTx as a chstore.GroupLock.
type groupLock struct{ *sqlstore.GroupTx }

func (g groupLock) Placement(ctx context.Context) (chstore.Placement, bool, error) {
	p, ok, err := g.GroupTx.Placement(ctx)
	return chstore.Placement(p), ok, err
}

func (g groupLock) Place(ctx context.Context, shard string) (chstore.Placement, error) {
	p, err := g.GroupTx.Place(ctx, shard)
	return chstore.Placement(p), err
}
