package stores

import (
	"context"
	"time"

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

func (c coordinator) WithGroupsLock(ctx context.Context, groupIDs []string, mode chstore.LockMode, fn func(tx chstore.GroupsLock) error) error {
	return c.dir.WithGroupsLock(ctx, groupIDs, sqlstore.LockMode(mode), func(tx *sqlstore.GroupsTx) error { return fn(groupsLock{tx}) })
}

func (c coordinator) WithGroupsLogging(ctx context.Context, groupIDs []string, fn func(tx chstore.LogLock) error) error {
	return c.dir.WithGroupsLogging(ctx, groupIDs, func(tx *sqlstore.LogTx) error { return fn(logLock{tx}) })
}

func (c coordinator) LoggedGroups(ctx context.Context, limit int) ([]string, error) {
	return c.dir.LoggedGroups(ctx, limit)
}

func (c coordinator) LoggedPlacement(ctx context.Context, groupID string) (bool, chstore.Placement, bool, error) {
	logged, p, placed, err := c.dir.LoggedPlacement(ctx, groupID)
	return logged, chstore.Placement(p), placed, err
}

func (c coordinator) LoggedPlacements(ctx context.Context, groupIDs []string) ([]string, []chstore.Placement, error) {
	logged, list, err := c.dir.LoggedPlacements(ctx, groupIDs)
	return logged, placementList(list), err
}

func (c coordinator) LeadApplier(ctx context.Context) (bool, error) {
	return c.dir.LeadApplier(ctx)
}

func (c coordinator) LogStats(ctx context.Context) (int, time.Time, error) {
	return c.dir.LogStats(ctx)
}

func (c coordinator) VacuumLog(ctx context.Context) error { return c.dir.VacuumLog(ctx) }

func (c coordinator) Placement(ctx context.Context, groupID string) (chstore.Placement, bool, error) {
	p, ok, err := c.dir.Placement(ctx, groupID)
	return chstore.Placement(p), ok, err
}

func (c coordinator) Placements(ctx context.Context) ([]chstore.Placement, error) {
	list, err := c.dir.Placements(ctx)
	return placementList(list), err
}

// groupsLock is a sqlstore.GroupsTx as a chstore.GroupsLock.
type groupsLock struct{ *sqlstore.GroupsTx }

func (g groupsLock) Locked() []chstore.GroupLock {
	locks := make([]chstore.GroupLock, len(g.GroupsTx.Locked))
	for i, tx := range g.GroupsTx.Locked {
		locks[i] = groupLock{tx}
	}
	return locks
}

func (g groupsLock) Gone() []string { return g.GroupsTx.Gone }

func (g groupsLock) Placements(ctx context.Context) (map[string]chstore.Placement, error) {
	return convertPlacements(g.GroupsTx.Placements(ctx))
}

func (g groupsLock) Place(ctx context.Context, shards map[string]string) (map[string]chstore.Placement, error) {
	return convertPlacements(g.GroupsTx.Place(ctx, shards))
}

// convertPlacements is the placements of list, by group.
func convertPlacements(list []sqlstore.Placement, err error) (map[string]chstore.Placement, error) {
	placements := make(map[string]chstore.Placement, len(list))
	for _, p := range list {
		placements[p.GroupID] = chstore.Placement(p)
	}
	return placements, err
}

func (g groupsLock) MarkIntents(ctx context.Context, intents map[string][]byte) (map[string]int64, error) {
	texts := make(map[string]string, len(intents))
	for id, in := range intents {
		texts[id] = string(in)
	}
	return g.GroupsTx.MarkIntents(ctx, texts)
}

// logLock is a sqlstore.LogTx as a chstore.LogLock.
type logLock struct{ *sqlstore.LogTx }

func (l logLock) Locked() []string { return l.LogTx.Locked }

func (l logLock) Gone() []string { return l.LogTx.Gone }

func (l logLock) Placements(ctx context.Context) (map[string]chstore.Placement, error) {
	return convertPlacements(l.LogTx.Placements(ctx))
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

// placementList is the placements of list, in its order.
func placementList(list []sqlstore.Placement) []chstore.Placement {
	placements := make([]chstore.Placement, len(list))
	for i, p := range list {
		placements[i] = chstore.Placement(p)
	}
	return placements
}
