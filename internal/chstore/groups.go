package chstore

import (
	"context"
	"strconv"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/writebehind"
)

// A district's report reads its schools together: their placements and
// whether the log holds events of theirs in one query of the directory,
// and the group rows of those whose states this process does not keep in
// one query of each shard, as the warm-up does.

// settledGroups are the placements SettleGroups read, by group, carried
// by the context it returns.
type settledGroups map[string]settledPlacement

type settledGroupsKey struct{}

// SettleGroups settles the groups: those with events in the log, or a
// write unfinished, one by one, as Settle does; the others by reading
// their placements together.
func (s *Store) SettleGroups(ctx context.Context, groupIDs []string) (context.Context, error) {
	if len(groupIDs) == 0 {
		return ctx, nil
	}
	bounded, cancel := s.bound(ctx)
	defer cancel()
	logged, placements, err := s.dir.LoggedPlacements(bounded, groupIDs)
	if err != nil {
		return ctx, s.wrap("SettleGroups", err)
	}
	now := time.Now()
	settled := make(settledGroups, len(groupIDs))
	for _, id := range groupIDs {
		settled[id] = settledPlacement{p: writebehind.Placement{GroupID: id}, at: now}
	}
	for _, p := range placements {
		settled[p.GroupID] = settledPlacement{p: p, placed: true, at: now}
	}
	for _, id := range logged {
		delete(settled, id)
	}
	for _, p := range placements {
		if p.Intent != nil {
			delete(settled, p.GroupID)
		}
	}
	for _, id := range groupIDs {
		if _, ok := settled[id]; ok {
			continue
		}
		one, err := s.Settle(ctx, id)
		if err != nil {
			return ctx, err
		}
		if v, ok := one.Value(settledKey{}).(settledPlacement); ok {
			settled[id] = v
		}
	}
	return context.WithValue(ctx, settledGroupsKey{}, settled), nil
}

// UsageVersions tells each group's version by the placement SettleGroups
// read (settling them when ctx carries none): its shard, epoch and write
// number, which every write of its usage moves on. A group with a write
// unfinished has none (""), nor one read from its log (a pending view),
// nor one SettleGroups did not read.
func (s *Store) UsageVersions(ctx context.Context, groupIDs []string) ([]string, error) {
	settled, ok := ctx.Value(settledGroupsKey{}).(settledGroups)
	if !ok {
		settledCtx, err := s.SettleGroups(ctx, groupIDs)
		if err != nil {
			return nil, err
		}
		settled, _ = settledCtx.Value(settledGroupsKey{}).(settledGroups)
	}
	versions := make([]string, len(groupIDs))
	for i, id := range groupIDs {
		switch v, ok := settled[id]; {
		case !ok || v.p.Intent != nil || v.pending != nil:
		case !v.placed:
			versions[i] = "unplaced"
		default:
			versions[i] = v.p.Shard + "." + strconv.FormatInt(v.p.Epoch, 10) + "." + strconv.FormatInt(v.p.Seq, 10)
		}
	}
	return versions, nil
}

// GroupsRollups passes the groups' rows of each of segs from their
// states: those kept and current as they are, the others' loaded
// together, a query of each shard. The states tell what is current, not
// versions.
func (s *Store) GroupsRollups(ctx context.Context, groups []analytics.Group, _ []string, segs []analytics.Segment, each func(group, seg int, r *analytics.GroupRollup)) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	groupIDs := make([]string, len(groups))
	for i, g := range groups {
		groupIDs[i] = g.ID
	}
	states, err := s.readStates(ctx, groupIDs)
	if err != nil {
		return s.wrap("GroupsRollups", err)
	}
	var row analytics.GroupRollup
	for i, id := range groupIDs {
		st := states[id]
		if st == nil || st.packed != nil && st.packed.Each(segs, &row, func(j int) { each(i, j, &row) }) {
			continue
		}
		for j, seg := range segs {
			st.eachRow(seg, func(r *analytics.GroupRollup) { each(i, j, r) })
		}
	}
	return nil
}

// readStates returns the states of those groups that hold usage, without
// their counts: kept ones when current, the others' group rows read
// together, a query of each shard. A group with a write unfinished, or
// whose rows are newer than its placement, is read alone, as readState
// reads it.
func (s *Store) readStates(ctx context.Context, groupIDs []string) (map[string]*state, error) {
	settled, _ := ctx.Value(settledGroupsKey{}).(settledGroups)
	states := make(map[string]*state, len(groupIDs))
	var alone []string
	toLoad := map[*shard][]writebehind.Placement{}
	for _, id := range groupIDs {
		v, ok := settled[id]
		if ok && v.pending != nil {
			states[id] = v.pending
			continue
		}
		if !ok || time.Since(v.at) >= readDrain/2 || (v.p.Intent != nil && !isMove(v.p.Intent)) {
			alone = append(alone, id)
			continue
		}
		if !v.placed {
			continue
		}
		sh, err := s.shardOf(v.p)
		if err != nil {
			return nil, err
		}
		if old := s.states.get(id); old != nil && old.shard == sh.name && old.epoch == v.p.Epoch && old.seq >= v.p.Seq {
			states[id] = old
			continue
		}
		toLoad[sh] = append(toLoad[sh], v.p)
	}
	for sh, list := range toLoad {
		loaded, newer, err := s.loadGroupRows(ctx, sh, list)
		if err != nil {
			return nil, err
		}
		for id, st := range loaded {
			states[id] = st
		}
		alone = append(alone, newer...)
	}
	for _, id := range alone {
		st, err := s.readState(ctx, id, false)
		if err != nil {
			return nil, err
		}
		if st != nil {
			states[id] = st
		}
	}
	return states, nil
}

// loadGroupRows reads the group rows of the groups placed on sh as list
// says, in one query, and keeps their states; newer are those with rows
// of a write after their placement's number, whose states are not made.
func (s *Store) loadGroupRows(ctx context.Context, sh *shard, list []writebehind.Placement) (loaded map[string]*state, newer []string, err error) {
	w := &warming{states: map[string]*state{}, limit: stateCacheBytes}
	ids := make([]string, len(list))
	for i, p := range list {
		ids[i] = p.GroupID
		w.states[p.GroupID] = emptyState(sh.name, p.Epoch, p.Seq, false)
	}
	lookup, err := withLookup(ctx, nil, ids...)
	if err != nil {
		return nil, nil, err
	}
	if err := s.warmGroupRows(lookup, sh, w); err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if st := w.states[id]; st != nil {
			st.pack()
			s.states.put(id, st)
		} else {
			newer = append(newer, id)
		}
	}
	return w.states, newer, nil
}
