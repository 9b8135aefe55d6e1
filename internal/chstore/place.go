package chstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/writebehind"
)

// Placement: which shard a group's writes go to. A new group goes to the
// least loaded shard; a placed one stays where it is until moved
// (move.go).

// placeForWrite returns the group's shard, placing a new group on the
// least loaded one, after repairing what an unfinished write left, and
// its placement, whose Seq is the write as of which its rows are whole.
func (s *Store) placeForWrite(ctx context.Context, tx writebehind.GroupLock) (*shard, writebehind.Placement, error) {
	p, ok, err := tx.Placement(ctx)
	if err != nil {
		return nil, p, err
	}
	if !ok {
		name, err := s.leastLoaded(ctx, tx)
		if err != nil {
			return nil, p, err
		}
		if p, err = tx.Place(ctx, name); err != nil {
			return nil, p, err
		}
	}
	sh, err := s.shardOf(p)
	if err != nil {
		return nil, p, err
	}
	p, err = s.settled(ctx, tx, sh, p)
	return sh, p, err
}

func (s *Store) shardOf(p writebehind.Placement) (*shard, error) {
	sh := s.shardNamed(p.Shard)
	if sh == nil {
		return nil, fmt.Errorf("group %s is placed on shard %s, which the usage URL does not name: %w",
			p.GroupID, p.Shard, analytics.ErrUnavailable)
	}
	return sh, nil
}

// leastLoaded returns the shard holding the fewest events, among those that
// answer; the fewest groups breaks ties (and decides between empty shards).
func (s *Store) leastLoaded(ctx context.Context, tx writebehind.GroupLock) (string, error) {
	events, groups, err := s.shardLoads(ctx, tx)
	if err != nil {
		return "", err
	}
	return s.lightest(events, groups), nil
}

// lightest is the shard, of those that answer (events names them), that
// holds the fewest events, then the fewest groups.
func (s *Store) lightest(events map[string]uint64, groups map[string]int) string {
	best := ""
	for _, sh := range s.shards {
		if _, up := events[sh.name]; up && (best == "" || events[sh.name] < events[best] ||
			events[sh.name] == events[best] && groups[sh.name] < groups[best]) {
			best = sh.name
		}
	}
	return best
}

// shardLoads returns the events of each shard that answers, and the groups
// placed on each; an error when none answers.
func (s *Store) shardLoads(ctx context.Context, tx writebehind.GroupLock) (events map[string]uint64, groups map[string]int, err error) {
	if groups, err = tx.GroupsPerShard(ctx); err != nil {
		return nil, nil, err
	}
	events = map[string]uint64{}
	var errs []string
	for _, sh := range s.shards {
		n, err := s.eventCount(ctx, sh)
		if err != nil {
			errs = append(errs, sh.name)
			continue
		}
		events[sh.name] = n
	}
	if len(events) == 0 {
		return nil, nil, fmt.Errorf("no shard answers (%s): %w", strings.Join(errs, ", "), analytics.ErrUnavailable)
	}
	return events, groups, nil
}

// placeAll reads the placements of a flush's groups at once, and places
// those without one together, each on the shard that holds the fewest
// events (then groups) as placing goes: their state is empty, and need not
// be read. It fails only when the directory fails; a group that cannot be
// placed (no shard answers) has its err set.
func (s *Store) placeAll(ctx context.Context, tx writebehind.GroupsLock, writes map[string]*groupWrite) error {
	placements, err := tx.Placements(ctx)
	if err != nil {
		return err
	}
	var unplaced []string
	for g, w := range writes {
		if p, ok := placements[g]; ok {
			w.p = p
		} else {
			unplaced = append(unplaced, g)
		}
	}
	if len(unplaced) == 0 {
		return nil
	}
	slices.Sort(unplaced)
	events, groups, err := s.shardLoads(ctx, writes[unplaced[0]].tx)
	if err != nil {
		for _, g := range unplaced {
			writes[g].err = err
		}
		return nil
	}
	shards := map[string]string{}
	for _, g := range unplaced {
		shards[g] = s.lightest(events, groups)
		groups[shards[g]]++
	}
	placed, err := tx.Place(ctx, shards)
	if err != nil {
		return err
	}
	for _, g := range unplaced {
		w := writes[g]
		w.p = placed[g]
		w.st = emptyState(w.p.Shard, w.p.Epoch, w.p.Seq, true)
	}
	return nil
}

// eachShard runs fn for the writes of each shard at once; an error fails
// the writes of its shard that have not failed yet.
func eachShard(byShard map[*shard][]*groupWrite, fn func(sh *shard, ws []*groupWrite) error) {
	var wg sync.WaitGroup
	for sh, ws := range byShard {
		wg.Go(func() {
			if err := fn(sh, ws); err != nil {
				for _, w := range ws {
					w.err = cmp.Or(w.err, err)
				}
			}
		})
	}
	wg.Wait()
}
