package chstore

import (
	"context"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/cache"
	"groupanalytics/internal/writebehind"
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

// idSets are the hashes of the ids each group's shard holds, kept by
// group under the version of the placement they are as of (idsVersion),
// the groups used longest ago dropped first. mu guards the hashes, which a
// write adds to in place.
type idSets struct {
	mu   sync.Mutex
	seed maphash.Seed
	sets *cache.Versioned[map[uint64]struct{}]
	// tooLarge are the groups found with more than maxGroupIDs ids.
	tooLarge map[string]bool
}

func newIDSets() *idSets {
	return &idSets{seed: maphash.MakeSeed(), sets: cache.New[map[uint64]struct{}](maxKeptIDs), tooLarge: map[string]bool{}}
}

// idsVersion names a group's writes as of placement p: its shard, its
// epoch and its write number.
func idsVersion(p writebehind.Placement) string {
	return p.Shard + " " + strconv.FormatInt(p.Epoch, 10) + " " + strconv.FormatInt(p.Seq, 10)
}

// maybeStored returns the ids of the group placed as p that its shard may
// hold, and true; or false when no set agrees with p, and every id must be
// looked up.
func (s *idSets) maybeStored(p writebehind.Placement, ids []string) ([]string, bool) {
	if p.Intent != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hashes, ok := s.sets.Get(p.GroupID, idsVersion(p))
	if !ok {
		return nil, false
	}
	var maybe []string
	for _, id := range ids {
		if _, ok := hashes[maphash.String(s.seed, id)]; ok {
			maybe = append(maybe, id)
		}
	}
	return maybe, true
}

// wanted reports whether the group placed as p needs its set read: it has
// none that agrees with p and is not known to be too large.
func (s *idSets) wanted(p writebehind.Placement) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sets.Get(p.GroupID, idsVersion(p))
	return !ok && !s.tooLarge[p.GroupID]
}

// load makes ids, all its shard holds, the set of the group placed as p
// (settled: its writes whole), unless the group has too many.
func (s *idSets) load(p writebehind.Placement, ids []string, tooLarge bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tooLarge {
		s.keepLocked(p, nil)
		return
	}
	s.keepLocked(p, s.addLocked(make(map[uint64]struct{}, len(ids)), ids))
}

// written moves the group's set, at p's number, on to seq: a write of ids
// (all of them, new or found stored) numbered seq ended. A set at another
// number is dropped.
func (s *idSets) written(p writebehind.Placement, seq int64, ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hashes, ok := s.sets.Get(p.GroupID, idsVersion(p))
	if !ok {
		return // none, or one at another number, which no later placement is at
	}
	p.Seq = seq
	s.keepLocked(p, s.addLocked(hashes, ids))
}

// room is how many more ids the sets may hold.
func (s *idSets) room() int64 {
	return int64(maxKeptIDs - s.sets.Cost())
}

func (s *idSets) addLocked(hashes map[uint64]struct{}, ids []string) map[uint64]struct{} {
	for _, id := range ids {
		hashes[maphash.String(s.seed, id)] = struct{}{}
	}
	return hashes
}

// keepLocked keeps hashes as the set of the group placed as p, in place
// of its set at another number; nil hashes, or more than maxGroupIDs,
// mark the group too large for a set.
func (s *idSets) keepLocked(p writebehind.Placement, hashes map[uint64]struct{}) {
	if hashes == nil || len(hashes) > maxGroupIDs {
		s.tooLarge[p.GroupID] = true
		s.sets.Put(p.GroupID, "", nil, 0) // drops what was kept
		return
	}
	s.sets.Put(p.GroupID, idsVersion(p), hashes, len(hashes))
}

// readIDSets makes the sets of the writes' groups that want one, on sh:
// their ids, in one query, up to about maxLoadedIDs in all and the room
// left (the others wait for a later apply). The writes are settled and
// hold their apply locks, so no other write changes what the shard holds
// of them meanwhile; their states are read. A set is only a shortcut, so
// a query that fails makes none.
func (s *Store) readIDSets(ctx context.Context, sh *shard, ws []*groupWrite) {
	var groups []string
	placed := map[string]writebehind.Placement{}
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
		if p.span() == analytics.SpanMonth {
			for _, c := range r.Counts {
				n += c
			}
		}
	}
	return n
}

// storedIDs returns which of each group's ids the shard already holds, in
// one query.
func (s *Store) storedIDs(ctx context.Context, sh *shard, ids map[string][]string) (map[string]map[string]bool, error) {
	stored := map[string]map[string]bool{}
	err := s.eachOfGroups(ctx, sh, ids, `SELECT DISTINCT group_id, event_id FROM `+s.table("events")+`
		WHERE group_id IN groups AND event_id IN lookup`, func(groupID, id string, _ uint32) {
		if stored[groupID] == nil {
			stored[groupID] = map[string]bool{}
		}
		stored[groupID][id] = true
	})
	return stored, err
}

// eachOfGroups runs query, which reads (group_id, value[, ordinal]) rows
// of the groups in the external table "groups" and of values in "lookup",
// and calls fn with each row whose value is one of its group's.
func (s *Store) eachOfGroups(ctx context.Context, sh *shard, values map[string][]string, query string, fn func(groupID, value string, n uint32)) error {
	var groups, all []string
	wanted := map[[2]string]bool{}
	for g, vs := range values {
		groups = append(groups, g)
		for _, v := range vs {
			wanted[[2]string{g, v}] = true
			all = append(all, v)
		}
	}
	if len(all) == 0 {
		return nil
	}
	ctx, err := withLookup(ctx, all, groups...)
	if err != nil {
		return err
	}
	rows, err := sh.query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	withOrdinal := len(rows.Columns()) == 3
	for rows.Next() {
		var g, v string
		var n uint32
		dest := []any{&g, &v}
		if withOrdinal {
			dest = append(dest, &n)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if wanted[[2]string{g, v}] {
			fn(g, v, n)
		}
	}
	return rows.Err()
}

// withLookup attaches values to ctx as the external table "lookup", a
// block of data sent beside the query rather than in its text, so that
// the query can ask `x IN lookup` of any number of values; and groups as
// the table "groups". An empty list makes no table.
func withLookup(ctx context.Context, values []string, groups ...string) (context.Context, error) {
	tables := []*ext.Table{}
	for name, list := range map[string][]string{"lookup": values, "groups": groups} {
		if len(list) == 0 {
			continue
		}
		t, err := ext.NewTable(name, ext.Column("v", "String"))
		if err != nil {
			return nil, err
		}
		for _, v := range list {
			if err := t.Append(v); err != nil {
				return nil, err
			}
		}
		tables = append(tables, t)
	}
	return clickhouse.Context(ctx, clickhouse.WithExternalTable(tables...)), nil
}

// eventsHaving returns which of values col (event_id or student_id) takes
// in the group's events of writes numbered up to maxSeq.
func (s *Store) eventsHaving(ctx context.Context, sh *shard, groupID, col string, values []string, maxSeq int64) (map[string]bool, error) {
	found := map[string]bool{}
	if len(values) == 0 {
		return found, nil
	}
	ctx, err := withLookup(ctx, values)
	if err != nil {
		return nil, err
	}
	rows, err := sh.query(ctx, `SELECT DISTINCT `+col+` FROM `+s.table("events")+`
		WHERE group_id = ? AND seq <= ? AND `+col+` IN lookup`, groupID, uint64(maxSeq))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		found[v] = true
	}
	return found, rows.Err()
}

// ordinals returns the ordinals of the students, numbering those the group
// has not numbered yet after its highest.
func (s *Store) ordinals(ctx context.Context, sh *shard, groupID string, studentIDs []string) (map[string]int, error) {
	all, err := s.ordinalsOf(ctx, sh, map[string][]string{groupID: studentIDs})
	if err != nil {
		return nil, err
	}
	return all[groupID], nil
}

// ordinalsOf is ordinals of several groups' students, asked and numbered
// at once.
func (s *Store) ordinalsOf(ctx context.Context, sh *shard, students map[string][]string) (map[string]map[string]int, error) {
	ordinals, err := s.storedOrdinals(ctx, sh, students)
	if err != nil {
		return nil, err
	}
	missing := func() map[string][]string {
		out := map[string][]string{}
		for g, ids := range students {
			for _, id := range ids {
				if _, ok := ordinals[g][id]; !ok {
					out[g] = append(out[g], id)
				}
			}
		}
		return out
	}
	unnumbered := missing()
	if len(unnumbered) == 0 {
		return ordinals, nil
	}
	// A write that was told it failed may yet have numbered some of them:
	// once its insert has settled, look again.
	if sh.replicated() {
		if err := s.settleQuorums(ctx, sh); err != nil {
			return nil, err
		}
		settled, err := s.storedOrdinals(ctx, sh, unnumbered)
		if err != nil {
			return nil, err
		}
		for g, ords := range settled {
			maps.Copy(ordinals[g], ords)
		}
		if unnumbered = missing(); len(unnumbered) == 0 {
			return ordinals, nil
		}
	}
	groups := slices.Sorted(maps.Keys(unnumbered))
	lookupCtx, err := withLookup(ctx, nil, groups...)
	if err != nil {
		return nil, err
	}
	rows, err := sh.query(lookupCtx, `SELECT group_id, toUInt32(max(ordinal) + 1) FROM `+s.table("students")+`
		WHERE group_id IN groups GROUP BY group_id`)
	if err != nil {
		return nil, err
	}
	next := map[string]uint32{}
	for rows.Next() {
		var g string
		var n uint32
		if err := rows.Scan(&g, &n); err != nil {
			rows.Close()
			return nil, err
		}
		next[g] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, g := range groups {
		for i, id := range unnumbered[g] {
			ordinals[g][id] = int(next[g]) + i
		}
	}
	return ordinals, sh.insert(ctx, `INSERT INTO `+s.table("students")+` (group_id, student_id, ordinal)`, func(b driver.Batch) error {
		for _, g := range groups {
			for _, id := range unnumbered[g] {
				if err := b.Append(g, id, uint32(ordinals[g][id])); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// storedOrdinals returns the ordinals each group has given its students,
// a map for every group asked of.
func (s *Store) storedOrdinals(ctx context.Context, sh *shard, students map[string][]string) (map[string]map[string]int, error) {
	ordinals := map[string]map[string]int{}
	for g := range students {
		ordinals[g] = map[string]int{}
	}
	err := s.eachOfGroups(ctx, sh, students, `SELECT group_id, student_id, min(ordinal) FROM `+s.table("students")+`
		WHERE group_id IN groups AND student_id IN lookup GROUP BY group_id, student_id`, func(groupID, id string, n uint32) {
		ordinals[groupID][id] = int(n)
	})
	return ordinals, err
}
