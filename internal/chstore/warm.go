package chstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/writebehind"
)

// A school's first report in a process loads the group's state from its
// shard, a few point queries. After a restart every school would pay
// that at once, so a serving process first loads the states of the
// groups written most, a few hundred groups a query: one scan of many
// groups costs the shard far less than a query for each.

// warmBatch is how many groups one round of the warm-up reads at most; the
// first reads one, and each next as many as the groups read so far say
// fit in what is left.
const warmBatch = 500

// errWarmFull stops a round of the warm-up that would load more than is
// left of its budget: its states are dropped whole, never kept in part,
// and its groups tried again in smaller rounds.
var errWarmFull = errors.New("the warm-up's budget is spent")

// warmBytes bounds what the warm-up loads: a quarter of what is kept stays
// for the groups that reports load.
var warmBytes = stateCacheBytes / 4 * 3

// warmTimeout bounds the warm-up.
const warmTimeout = time.Minute

// warm loads the states of the groups with usage, those of the most
// writes first, until they fill warmBytes. A group with a write unfinished
// or in progress is left to its first read, which settles it.
func (s *Store) warm(ctx context.Context) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	placements, err := s.dir.Placements(ctx)
	if err != nil {
		s.log.Warn("states not warmed", "error", err)
		return
	}
	placements = slices.DeleteFunc(placements, func(p writebehind.Placement) bool { return p.Seq == 0 || p.Intent != nil })
	slices.SortStableFunc(placements, func(a, b writebehind.Placement) int { return cmp.Compare(b.Seq, a.Seq) })
	warmed, loaded, size := 0, 0, 1
	defer func() {
		s.log.Info("states warmed", "groups", warmed, "bytes", loaded, "duration", time.Since(start))
	}()
	for len(placements) > 0 && ctx.Err() == nil {
		left := warmBytes - s.states.size()
		if warmed > 0 {
			size = min(size, warmBatch, left/max(1, loaded/warmed))
		}
		if size < 1 {
			return
		}
		// A round reads the groups of one shard.
		shard := placements[0].Shard
		var list []writebehind.Placement
		rest := placements[:0:0]
		for _, p := range placements {
			if p.Shard == shard && len(list) < size {
				list = append(list, p)
			} else {
				rest = append(rest, p)
			}
		}
		placements = rest
		sh := s.shardNamed(shard)
		if sh == nil {
			continue
		}
		n, bytes, err := s.warmGroups(ctx, sh, list, left)
		switch {
		case errors.Is(err, errWarmFull) && len(list) > 1:
			placements, size = append(list, placements...), len(list)/2
			continue
		case errors.Is(err, errWarmFull):
			return
		case err != nil:
			s.log.Warn("states not warmed", "shard", shard, "error", err)
			return
		}
		warmed, loaded, size = warmed+n, loaded+bytes, warmBatch
	}
}

// warmGroups loads the states of the groups placed on sh as list says, in
// three queries, and keeps those whose rows are all of writes up to the
// placement's number: a group with rows of a later one is being written,
// and left to its first read. It returns how many it kept and their
// bytes, or errWarmFull, keeping none, if they came to more than limit.
func (s *Store) warmGroups(ctx context.Context, sh *shard, list []writebehind.Placement, limit int) (kept, bytes int, err error) {
	w := &warming{states: map[string]*state{}, limit: limit}
	ids := make([]string, len(list))
	for i, p := range list {
		ids[i] = p.GroupID
		st := emptyState(sh.name, p.Epoch, p.Seq, true)
		st.ordinals = map[string]int{}
		w.states[p.GroupID] = st
	}
	if ctx, err = withLookup(ctx, nil, ids...); err != nil {
		return 0, 0, err
	}
	for _, read := range []func(context.Context, *shard, *warming) error{s.warmGroupRows, s.warmCounts, s.warmOrdinals} {
		if err := read(ctx, sh, w); err != nil {
			return 0, 0, err
		}
	}
	bytes = 0
	for _, st := range w.states {
		st.pack()
		bytes += st.bytes
	}
	if bytes > limit {
		return 0, 0, errWarmFull
	}
	for groupID, st := range w.states {
		s.states.put(groupID, st)
	}
	return len(w.states), bytes, nil
}

// warming is the states a round of the warm-up fills, and their bytes
// against the round's limit.
type warming struct {
	states       map[string]*state
	bytes, limit int
}

// current is the state of the group to fill, or nil: of a group whose
// rows are newer than its placement, nothing is kept.
func (w *warming) current(groupID string, version uint64) *state {
	st := w.states[groupID]
	if st != nil && version > uint64(st.seq) {
		delete(w.states, groupID)
		return nil
	}
	return st
}

// grow makes a change to st and counts the bytes it adds, failing once
// the round passes its limit.
func (w *warming) grow(st *state, change func()) error {
	w.bytes -= st.bytes
	change()
	if w.bytes += st.bytes; w.bytes > w.limit {
		return errWarmFull
	}
	return nil
}

// warmGroupRows reads the current group rows of the round's groups.
func (s *Store) warmGroupRows(ctx context.Context, sh *shard, w *warming) error {
	return sh.eachRow(ctx, `SELECT group_id, max(version), span, period, `+groupColumns+` FROM `+s.table("group_rollups")+`
		WHERE group_id IN groups GROUP BY group_id, span, period`, nil, func(rows driver.Rows) error {
		var groupID string
		var version uint64
		var span uint8
		var key int32
		r, err := scanGroupRow(rows, &groupID, &version, &span, &key)
		if err != nil {
			return err
		}
		st := w.current(groupID, version)
		if st == nil {
			return nil
		}
		r.Key = analytics.Day(key)
		return w.grow(st, func() { st.setGroupRow(periodOf(analytics.Span(span), r.Key), r) })
	})
}

// warmCounts reads the current rows of students' counts of the round's
// groups.
func (s *Store) warmCounts(ctx context.Context, sh *shard, w *warming) error {
	copied := map[string]map[period]bool{}
	return sh.eachRow(ctx, `SELECT group_id, max(version), span, period, chunk, argMax(counts, version) FROM `+s.table("student_counts")+`
		WHERE group_id IN groups GROUP BY group_id, span, period, chunk`, nil, func(rows driver.Rows) error {
		var groupID, counts string
		var version uint64
		var span uint8
		var key int32
		var chunk uint32
		if err := rows.Scan(&groupID, &version, &span, &key, &chunk, &counts); err != nil {
			return err
		}
		st := w.current(groupID, version)
		if st == nil {
			return nil
		}
		if copied[groupID] == nil {
			copied[groupID] = map[period]bool{}
		}
		return w.grow(st, func() {
			st.setChunk(periodOf(analytics.Span(span), analytics.Day(key)), int(chunk), []byte(counts), copied[groupID])
		})
	})
}

// warmOrdinals reads the students' ordinals of the round's groups.
func (s *Store) warmOrdinals(ctx context.Context, sh *shard, w *warming) error {
	return sh.eachRow(ctx, `SELECT group_id, student_id, min(ordinal) FROM `+s.table("students")+`
		WHERE group_id IN groups GROUP BY group_id, student_id`, nil, func(rows driver.Rows) error {
		var groupID, studentID string
		var n uint32
		if err := rows.Scan(&groupID, &studentID, &n); err != nil {
			return err
		}
		if st := w.states[groupID]; st != nil && !strings.HasPrefix(studentID, erasedMark) {
			st.ordinals[studentID] = int(n)
		}
		return nil
	})
}
