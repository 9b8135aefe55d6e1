package chstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/writebehind"
)

// Every row of group_rollups and student_counts is the whole state of its
// key as of the write that inserted it, numbered by that write (version,
// the group's write number), and merges keep the highest. A group's
// current rows as of write number n are thus its rows of version at most
// n, the highest for each key. Rather than ask ClickHouse for that on
// each read, which grows with the writes not yet merged, each process
// keeps the groups' current rows (a state) and, when the group's number
// has moved on, asks only for the rows written since.

// period names one rollup of a group: its span and key in one word, so
// that the states' maps hash and compare it inline.
type period uint64

func periodOf(span analytics.Span, key analytics.Day) period {
	return period(uint64(uint8(span))<<32 | uint64(uint32(key)))
}

func (p period) span() analytics.Span { return analytics.Span(uint8(p >> 32)) }

func (p period) key() analytics.Day { return analytics.Day(int32(uint32(p))) }

// state is a group's current rows on a shard as of write number seq. It is
// not changed once made: a newer state is a copy.
type state struct {
	shard  string
	epoch  int64
	seq    int64
	groups map[period]analytics.GroupRollup
	counts map[period][][]byte // by chunk; nil where a chunk has no row
	// withCounts: counts holds the rows of student counts. A group
	// report reads the group rows only: a state made for it leaves the
	// counts, most of a state's size, to the first read that needs them.
	withCounts bool
	bytes      int
	used       int64 // when last used, in the cache's ticks
	weeksMu    sync.Mutex
	weeks      map[analytics.Day]analytics.GroupRollup // folded on first read (week)
	packed     *rollup.Packed                          // its group rows packed, when pack packed them
	// ordinals are read on first use: writers do not need them.
	ordinalsMu sync.Mutex
	ordinals   map[string]int
}

// stateCacheBytes bounds the states a process keeps: about 10 MB for a
// group of 10,000 students and a year of usage, 40 KB for one of 150 and
// 90 days. With the engine's own, it fits the memory goal (300 MB
// resident; docs/operating.md, "Memory").
const stateCacheBytes = 96 << 20

// stateCache holds the processes' states, least recently used dropped
// first.
type stateCache struct {
	mu     sync.Mutex
	states map[string]*state
	bytes  int
	tick   int64
}

func (c *stateCache) get(groupID string) *state {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.states[groupID]
	if st != nil {
		c.tick++
		st.used = c.tick
	}
	return st
}

// size is the bytes of the states kept.
func (c *stateCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// replace keeps st in place of the group's kept state, which a write
// that added rows of its own number after it was kept has outdated.
func (c *stateCache) replace(groupID string, st *state) {
	c.mu.Lock()
	if old := c.states[groupID]; old != nil {
		c.bytes -= old.bytes
		delete(c.states, groupID)
	}
	c.mu.Unlock()
	c.put(groupID, st)
}

// put keeps st unless a newer state of the group is kept already, or
// one as new with the counts st lacks.
func (c *stateCache) put(groupID string, st *state) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.states[groupID]; old != nil {
		if old.shard == st.shard && old.epoch == st.epoch &&
			(old.seq > st.seq || old.seq == st.seq && (old.withCounts || !st.withCounts)) {
			return
		}
		c.bytes -= old.bytes
	}
	if c.states == nil {
		c.states = map[string]*state{}
	}
	c.tick++
	st.used = c.tick
	c.states[groupID] = st
	c.bytes += st.bytes
	for c.bytes > stateCacheBytes && len(c.states) > 1 {
		oldest := ""
		for id, s := range c.states {
			if id != groupID && (oldest == "" || s.used < c.states[oldest].used) {
				oldest = id
			}
		}
		c.bytes -= c.states[oldest].bytes
		delete(c.states, oldest)
	}
}

// readRepairWait bounds the repair a read attempts before it reads.
var readRepairWait = 2 * time.Second

// readState returns the group's current rows, with its rows of student
// counts if withCounts, after settling a write the group's placement shows
// unfinished, or nil when the group holds no usage; or the pending view
// Settle carried in ctx.
func (s *Store) readState(ctx context.Context, groupID string, withCounts bool) (*state, error) {
	if v, ok := ctx.Value(settledKey{}).(settledPlacement); ok && v.pending != nil && v.p.GroupID == groupID {
		return v.pending, nil
	}
	p, ok, err := s.placementToRead(ctx, groupID)
	if err != nil || !ok {
		return nil, err
	}
	if p.Intent != nil && !isMove(p.Intent) {
		// Wait for the write, or repair what it left, and read as of the
		// number it leaves: rows of later writes are not looked at. A
		// repair that cannot end soon (the shard takes no writes while a
		// replica or ZooKeeper is down) is left to the next write, and the
		// read reads as of the number the intent says is whole.
		repairCtx, cancel := context.WithTimeout(ctx, readRepairWait)
		err := s.locked(repairCtx, groupID, func(tx writebehind.GroupLock) (err error) {
			var sh *shard
			var whole writebehind.Placement
			if sh, whole, err = s.placeForWrite(repairCtx, tx); err == nil {
				p.Shard, p.Seq = sh.name, whole.Seq
			}
			return err
		})
		cancel()
		switch {
		case err == nil:
		case ctx.Err() == nil && (repairCtx.Err() != nil || tryNext(err) || errors.Is(err, analytics.ErrUnavailable)):
			p.Seq = wholeAsOf(p)
		default:
			return nil, err
		}
	}
	sh, err := s.shardOf(p)
	if err != nil {
		return nil, err
	}
	// A report reads several runs of rows at once, each through here: the
	// first loads the group's state from the shard, the others wait and
	// find it kept, rather than each asking the shard for the same rows.
	unlock, err := s.loading.lock(ctx, groupID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.stateAt(ctx, sh, p, withCounts)
}

// keyLocks holds locks by key, made as they are taken and let go with
// their last holder.
type keyLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when let go
}

// lock takes key's lock, waiting while another holds it or until ctx
// ends, and returns what lets it go.
func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	for {
		l.mu.Lock()
		released, busy := l.held[key]
		if !busy {
			if l.held == nil {
				l.held = map[string]chan struct{}{}
			}
			released = make(chan struct{})
			l.held[key] = released
			l.mu.Unlock()
			return func() {
				l.mu.Lock()
				delete(l.held, key)
				l.mu.Unlock()
				close(released)
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-released:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// stateAt returns the group's rows on sh as of write number p.Seq or
// later, its rows of counts too if withCounts: every write up to p.Seq
// must be whole (done, or repaired). A kept state of a later write (which
// only a whole write keeps) is as good; an earlier one is brought up to
// date with the rows written since; its counts, if it lacks them and they
// are wanted, are read whole.
func (s *Store) stateAt(ctx context.Context, sh *shard, p writebehind.Placement, withCounts bool) (*state, error) {
	groupID, seq := p.GroupID, p.Seq
	old := s.states.get(groupID)
	if old != nil && old.shard == sh.name && old.epoch == p.Epoch && old.seq >= seq && (old.withCounts || !withCounts) {
		return old, nil
	}
	if old != nil && (old.shard != sh.name || old.epoch != p.Epoch || old.seq > seq) {
		old = nil // of another shard, of a group deleted before this one, or newer without the counts
	}
	st, since := emptyState(sh.name, p.Epoch, seq, false), int64(-1)
	if old != nil {
		st, since = old.next(seq), old.seq
	}
	if since < seq {
		if err := s.readGroupRows(ctx, sh, groupID, since, seq, st); err != nil {
			return nil, err
		}
	}
	switch {
	case st.withCounts && since < seq:
		if err := s.readCountsRows(ctx, sh, groupID, since, seq, st); err != nil {
			return nil, err
		}
	case !st.withCounts && withCounts:
		if err := s.readCountsRows(ctx, sh, groupID, -1, seq, st); err != nil {
			return nil, err
		}
		st.withCounts = true
		if since == seq {
			// The same write's state: its students' ordinals, if read,
			// are still theirs.
			old.ordinalsMu.Lock()
			st.ordinals = old.ordinals
			old.ordinalsMu.Unlock()
		}
	}
	s.states.put(groupID, st)
	return st, nil
}

// emptyState is a group's state without rows, on shard as of write seq;
// withCounts when its counts are whole too (a group without usage).
func emptyState(shard string, epoch, seq int64, withCounts bool) *state {
	return &state{shard: shard, epoch: epoch, seq: seq, groups: map[period]analytics.GroupRollup{}, counts: map[period][][]byte{},
		withCounts: withCounts}
}

// next returns a copy of st as of write seq, to be changed: its maps are
// its own, their rows still st's.
func (st *state) next(seq int64) *state {
	next := &state{shard: st.shard, epoch: st.epoch, seq: seq, bytes: st.bytes, withCounts: st.withCounts,
		groups: make(map[period]analytics.GroupRollup, len(st.groups)), counts: make(map[period][][]byte, len(st.counts))}
	for k, v := range st.groups {
		next.groups[k] = v
	}
	for k, v := range st.counts {
		next.counts[k] = v
	}
	return next
}

// setGroupRow makes r the group row of p.
func (st *state) setGroupRow(p period, r analytics.GroupRollup) {
	if old, ok := st.groups[p]; ok {
		st.bytes -= groupRowBytes(old)
	}
	st.groups[p] = r
	st.bytes += groupRowBytes(r)
}

// setChunk makes b the row of counts of a chunk of p. copied names the
// periods whose slice of chunks st has copied already: the slice may be
// an older state's, copied before it changes.
func (st *state) setChunk(p period, chunk int, b []byte, copied map[period]bool) {
	chunks := st.counts[p]
	if !copied[p] {
		chunks, copied[p] = append([][]byte(nil), chunks...), true
	}
	for len(chunks) <= chunk {
		chunks = append(chunks, nil)
	}
	st.bytes += len(b) - len(chunks[chunk])
	chunks[chunk] = b
	st.counts[p] = chunks
}

// after returns the state that the write w, made on st, leaves: st with
// w's rows, as of w's number. A writer keeps it, so that the group's next
// write or read asks the shard for nothing.
func (st *state) after(w written) *state {
	next := st.next(w.seq)
	for i, k := range w.gkeys {
		r := w.grows[i]
		r.Key = k.Key
		next.setGroupRow(periodOf(k.Span, k.Key), r)
	}
	copied := map[period]bool{}
	for _, r := range w.counts {
		next.setChunk(periodOf(r.key.Span, r.key.Key), r.key.Chunk, r.counts, copied)
	}
	return next
}

// readGroupRows adds to st the group rows of versions in (since, seq].
func (s *Store) readGroupRows(ctx context.Context, sh *shard, groupID string, since, seq int64, st *state) error {
	return sh.eachRow(ctx, `SELECT span, period, `+groupColumns+` FROM `+s.table("group_rollups")+`
		WHERE group_id = ? AND version >= ? AND version <= ? GROUP BY span, period`, []any{groupID, uint64(since + 1), uint64(seq)},
		func(rows driver.Rows) error {
			var span uint8
			var key int32
			r, err := scanGroupRow(rows, &span, &key)
			if err != nil {
				return err
			}
			r.Key = analytics.Day(key)
			st.setGroupRow(periodOf(analytics.Span(span), r.Key), r)
			return nil
		})
}

// groupRowBytes is about what a group row takes in memory.
func groupRowBytes(r analytics.GroupRollup) int {
	return 96 + 8*(len(r.LiveLectureUsers)+len(r.ChatUsers))
}

// readCountsRows adds to st the rows of student counts of versions in
// (since, seq].
func (s *Store) readCountsRows(ctx context.Context, sh *shard, groupID string, since, seq int64, st *state) error {
	copied := map[period]bool{}
	return sh.eachRow(ctx, `SELECT span, period, chunk, argMax(counts, version) FROM `+s.table("student_counts")+`
		WHERE group_id = ? AND version >= ? AND version <= ? GROUP BY span, period, chunk`, []any{groupID, uint64(since + 1), uint64(seq)},
		func(rows driver.Rows) error {
			var span uint8
			var key int32
			var chunk uint32
			var b string
			if err := rows.Scan(&span, &key, &chunk, &b); err != nil {
				return err
			}
			st.setChunk(periodOf(analytics.Span(span), analytics.Day(key)), int(chunk), []byte(b), copied)
			return nil
		})
}

// readOrdinals reads the group's numbered students, without the marks of
// erased students' ordinals.
func (s *Store) readOrdinals(ctx context.Context, sh *shard, groupID string) (map[string]int, error) {
	ordinals := map[string]int{}
	err := sh.eachRow(ctx, `SELECT student_id, min(ordinal) FROM `+s.table("students")+`
		WHERE group_id = ? GROUP BY student_id`, []any{groupID}, func(rows driver.Rows) error {
		var id string
		var n uint32
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		if !strings.HasPrefix(id, erasedMark) {
			ordinals[id] = int(n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ordinals, nil
}

// GroupRollups reads the group's current rows from the process's state.
func (s *Store) GroupRollups(ctx context.Context, groupID string, seg analytics.Segment) ([]analytics.GroupRollup, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	st, err := s.readState(ctx, groupID, false)
	if err != nil || st == nil {
		return nil, s.wrap("GroupRollups", err)
	}
	var rollups []analytics.GroupRollup
	st.eachRow(seg, func(r *analytics.GroupRollup) { rollups = append(rollups, *r) })
	return rollups, nil
}

// eachRow passes the state's group rows of seg to each, ascending. They
// are the state's: each must not change them.
func (st *state) eachRow(seg analytics.Segment, each func(r *analytics.GroupRollup)) {
	for key := seg.Keys.First; key <= seg.Keys.Last; key = seg.Span.Next(key) {
		var r analytics.GroupRollup
		if seg.Span == analytics.SpanWeek {
			r = st.week(key)
		} else {
			r = st.groups[periodOf(seg.Span, key)]
		}
		// A period whose usage was all erased keeps a row of zeros.
		if r.Counts != (analytics.Counts{}) {
			each(&r)
		}
	}
}

// pack packs st's group rows of days, weeks and months, counting them in
// its bytes, before st is shared (a warm-up's, or one a district's answer
// loads): a district's answer then reads each school's rows of a range
// from one run of memory, and a week as one row (rollup.Packed).
func (st *state) pack() {
	var spans [len(rollup.PackedSpans)][]analytics.GroupRollup
	mondays := map[analytics.Day]bool{}
	for p, r := range st.groups {
		if i := slices.Index(rollup.PackedSpans[:], p.span()); i >= 0 && r.Counts != (analytics.Counts{}) {
			spans[i] = append(spans[i], r)
		}
		if p.span() == analytics.SpanDay {
			mondays[p.key().WeekStart()] = true
		}
	}
	week := slices.Index(rollup.PackedSpans[:], analytics.SpanWeek)
	for monday := range mondays {
		if w := st.foldWeek(monday); w.Counts != (analytics.Counts{}) {
			spans[week] = append(spans[week], w)
		}
	}
	st.packed = &rollup.Packed{}
	for i, rows := range spans {
		st.bytes += st.packed.Pack(i, rows)
	}
}

// week returns the group row of the ISO week that starts on monday:
// shards keep no week rows, so it is folded from its days' rows on its
// first read, and kept with the state. Its bytes leave them out: they are
// at most a seventh of its group rows, and group rows a small part of
// what a state holds (its counts are most).
func (st *state) week(monday analytics.Day) analytics.GroupRollup {
	st.weeksMu.Lock()
	defer st.weeksMu.Unlock()
	if w, ok := st.weeks[monday]; ok {
		return w
	}
	w := st.foldWeek(monday)
	if st.weeks == nil {
		st.weeks = map[analytics.Day]analytics.GroupRollup{}
	}
	st.weeks[monday] = w
	return w
}

// foldWeek returns the group row of the ISO week that starts on monday,
// folded from its days' rows.
func (st *state) foldWeek(monday analytics.Day) analytics.GroupRollup {
	w := analytics.GroupRollup{Key: monday}
	for d := monday; d < monday+7; d++ {
		if r, ok := st.groups[periodOf(analytics.SpanDay, d)]; ok {
			w.Add(&r)
		}
	}
	return w
}

// Ordinals reads the group's ordinals from the process's state.
func (s *Store) Ordinals(ctx context.Context, groupID string) (map[string]int, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	st, err := s.readState(ctx, groupID, false)
	if err != nil || st == nil {
		return map[string]int{}, s.wrap("Ordinals", err)
	}
	st.ordinalsMu.Lock()
	defer st.ordinalsMu.Unlock()
	if st.ordinals == nil {
		sh, err := s.shardOf(writebehind.Placement{GroupID: groupID, Shard: st.shard})
		if err == nil {
			st.ordinals, err = s.readOrdinals(ctx, sh, groupID)
		}
		if err != nil {
			return nil, s.wrap("Ordinals", err)
		}
	}
	// The map is the state's, shared by its readers.
	return st.ordinals, nil
}

// StudentTotals adds up the rows of the process's state.
func (s *Store) StudentTotals(ctx context.Context, groupID string, segs []analytics.Segment, totals [][]analytics.Counts) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	st, err := s.readState(ctx, groupID, true)
	if err != nil || st == nil {
		return s.wrap("StudentTotals", err)
	}
	for i, seg := range segs {
		for key := seg.Keys.First; key <= seg.Keys.Last; key = seg.Span.Next(key) {
			for _, b := range st.counts[periodOf(seg.Span, key)] {
				if b == nil {
					continue
				}
				if totals[i], err = rollup.AddCounts(totals[i], b); err != nil {
					return s.wrap("StudentTotals", fmt.Errorf("student counts of %s %s: %w", groupID, key, err))
				}
			}
		}
	}
	return nil
}

// StudentEvents returns the student's events in the group from its shard,
// oldest first, each id once (as reads count them).
func (s *Store) StudentEvents(ctx context.Context, groupID, studentID string) ([]analytics.Event, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	p, ok, err := s.dir.Placement(ctx, groupID)
	if err != nil || !ok {
		return nil, s.wrap("StudentEvents", err)
	}
	sh, err := s.shardOf(p)
	if err != nil {
		return nil, s.wrap("StudentEvents", err)
	}
	rows, err := sh.query(ctx, `SELECT event_id, any(occurred_at) AS at, any(metric) FROM `+s.table("events")+`
		WHERE group_id = ? AND student_id = ? GROUP BY event_id ORDER BY at, event_id`, groupID, studentID)
	if err != nil {
		return nil, s.wrap("StudentEvents", err)
	}
	defer rows.Close()
	var events []analytics.Event
	for rows.Next() {
		e := analytics.Event{GroupID: groupID, StudentID: studentID}
		var at int64
		var metric uint8
		if err := rows.Scan(&e.ID, &at, &metric); err != nil {
			return nil, s.wrap("StudentEvents", err)
		}
		e.OccurredAt, e.Metric = time.UnixMilli(at).UTC(), analytics.Metric(metric)
		events = append(events, e)
	}
	return events, s.wrap("StudentEvents", rows.Err())
}
