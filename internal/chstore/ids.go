package chstore

import (
	"context"
	"hash/maphash"
	"strconv"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
)

// Telling a logged event's id new from one the group's shard holds takes a
// lookup on the shard, and ClickHouse answers a lookup by reading a block
// of the events table per id and part: a flush of a firehose's one-event
// calls paid one per shard, most of what ClickHouse did. So the applier
// keeps, for the groups it writes, the hashes of the ids their shards
// hold, as of the group's write number; a flush asks the shard only for
// the ids whose hash a set holds (a duplicate, or a rare collision), and
// only when the group's placement, read in the flush's transaction, is at
// the set's number with no write unfinished. Every write of a group takes
// a new number, and a write that does not end leaves its intent, so a
// set that agrees with the placement holds every id the shard holds: the
// ids it holds that the shard no longer does (erased, cut by retention)
// only cost a lookup.

const (
	// maxGroupIDs is the most ids a group's set holds: a larger group's
	// ids are looked up on its shard.
	maxGroupIDs = 100_000
	// maxKeptIDs bounds the ids of every set a process keeps (about 15
	// MB), those of the groups written longest ago dropped first.
	maxKeptIDs = 1 << 19
	// maxLoadedIDs bounds the ids an apply reads to make sets.
	maxLoadedIDs = 200_000
)

// idSet is the hashes of the ids a group's shard holds as of write seq.
type idSet struct {
	shard  string
	epoch  int64
	seq    int64
	hashes map[uint64]struct{}
	used   int64
}

// idSets are the sets a process keeps, by group.
type idSets struct {
	mu   sync.Mutex
	seed maphash.Seed
	sets map[string]*idSet
	// tooLarge are the groups found with more than maxGroupIDs ids.
	tooLarge map[string]bool
	kept     int
	tick     int64
}

func newIDSets() *idSets {
	return &idSets{seed: maphash.MakeSeed(), sets: map[string]*idSet{}, tooLarge: map[string]bool{}}
}

// maybeStored returns the ids of the group placed as p that its shard may
// hold, and true; or false when no set agrees with p, and every id must be
// looked up.
func (s *idSets) maybeStored(p Placement, ids []string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.sets[p.GroupID]
	if set == nil || p.Intent != nil || set.shard != p.Shard || set.epoch != p.Epoch || set.seq != p.Seq {
		return nil, false
	}
	var maybe []string
	for _, id := range ids {
		if _, ok := set.hashes[maphash.String(s.seed, id)]; ok {
			maybe = append(maybe, id)
		}
	}
	return maybe, true
}

// wanted reports whether the group placed as p needs its set read: it has
// none that agrees with p and is not known to be too large.
func (s *idSets) wanted(p Placement) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tooLarge[p.GroupID] {
		return false
	}
	set := s.sets[p.GroupID]
	return set == nil || set.shard != p.Shard || set.epoch != p.Epoch || set.seq != p.Seq
}

// load makes ids, all its shard holds, the set of the group placed as p
// (settled: its writes whole), unless the group has too many.
func (s *idSets) load(p Placement, ids []string, tooLarge bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tooLarge {
		s.dropLocked(p.GroupID)
		s.tooLarge[p.GroupID] = true
		return
	}
	set := &idSet{shard: p.Shard, epoch: p.Epoch, seq: p.Seq, hashes: make(map[uint64]struct{}, len(ids))}
	s.dropLocked(p.GroupID)
	s.sets[p.GroupID] = set
	s.addLocked(p.GroupID, set, ids)
}

// written moves the group's set, at p's number, on to seq: a write of ids
// (all of them, new or found stored) numbered seq ended. A set at another
// number is dropped.
func (s *idSets) written(p Placement, seq int64, ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.sets[p.GroupID]
	if set == nil {
		return
	}
	if set.shard != p.Shard || set.epoch != p.Epoch || set.seq != p.Seq {
		s.dropLocked(p.GroupID)
		return
	}
	set.seq = seq
	s.addLocked(p.GroupID, set, ids)
}

// room is how many more ids the sets may hold.
func (s *idSets) room() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(maxKeptIDs - s.kept)
}

func (s *idSets) addLocked(groupID string, set *idSet, ids []string) {
	before := len(set.hashes)
	for _, id := range ids {
		set.hashes[maphash.String(s.seed, id)] = struct{}{}
	}
	s.kept += len(set.hashes) - before
	s.tick++
	set.used = s.tick
	if len(set.hashes) > maxGroupIDs {
		s.dropLocked(groupID)
		s.tooLarge[groupID] = true
		return
	}
	for s.kept > maxKeptIDs && len(s.sets) > 1 {
		oldest := ""
		for g, other := range s.sets {
			if g != groupID && (oldest == "" || other.used < s.sets[oldest].used) {
				oldest = g
			}
		}
		s.dropLocked(oldest)
	}
}

func (s *idSets) dropLocked(groupID string) {
	if set := s.sets[groupID]; set != nil {
		s.kept -= len(set.hashes)
		delete(s.sets, groupID)
	}
}

// readIDSets makes the sets of the writes' groups that want one, on sh:
// their ids, in one query, up to about maxLoadedIDs in all and the room
// left (the others wait for a later apply). The writes are settled and
// hold their apply locks, so no other write changes what the shard holds
// of them meanwhile; their states are read. A set is only a shortcut, so
// a query that fails makes none.
func (s *Store) readIDSets(ctx context.Context, sh *shard, ws []*groupWrite) {
	var groups []string
	placed := map[string]Placement{}
	// Sets are read into the room left, not in place of others: when the
	// groups written outgrow the room, those that have sets keep them.
	budget := min(maxLoadedIDs, s.ids.room())
	for _, w := range ws {
		if w.err != nil || w.st == nil || !s.ids.wanted(w.p) {
			continue
		}
		n := eventsIn(w.st)
		if n > maxGroupIDs {
			s.ids.load(w.p, nil, true)
			continue
		}
		if budget -= n; budget < 0 {
			break
		}
		groups = append(groups, w.p.GroupID)
		placed[w.p.GroupID] = w.p
	}
	if len(groups) == 0 {
		return
	}
	ctx, err := withLookup(ctx, nil, groups...)
	if err != nil {
		return
	}
	ids := map[string][]string{}
	err = sh.eachRow(ctx, `SELECT group_id, event_id FROM `+s.table("events")+`
		WHERE group_id IN groups LIMIT `+strconv.Itoa(maxGroupIDs+1)+` BY group_id`, nil, func(rows driver.Rows) error {
		var g, id string
		if err := rows.Scan(&g, &id); err != nil {
			return err
		}
		ids[g] = append(ids[g], id)
		return nil
	})
	if err != nil {
		return
	}
	for _, g := range groups {
		s.ids.load(placed[g], ids[g], len(ids[g]) > maxGroupIDs)
	}
}

// eventsIn is how many events the group's rows count: about how many ids
// its shard holds.
func eventsIn(st *state) int64 {
	var n int64
	for p, r := range st.groups {
		if p.span == analytics.SpanMonth {
			for _, c := range r.Counts {
				n += c
			}
		}
	}
	return n
}
