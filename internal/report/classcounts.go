package report

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"groupanalytics/internal/analytics"
)

// A class's group reports need its members' counts, which only the
// students' counts hold: adding them up reads every student's counts of
// every period, a scan of the group. So the engine keeps, per class (or a
// teacher's classes together, with their members as they are now), what
// the members' counts came to in each group rollup row a report read,
// beside that row's counts and students then. A row whose counts and
// students are still those has had no event appended (each adds one to
// its rows) and no student erased (their ordinal, never given again,
// leaves its sets), so its members' counts are unchanged; only the rows
// that differ are read again from the students' counts. Appends touch a
// group's current day, week and month: a class report then costs its
// group report and those rows.
//
// What else rewrites rows is in the version the counts are kept under:
// the roster's (students enrolled, renamed, erased), the group's zone (a
// rebuild in another zone cuts the days anew) and its retention (a cut
// rewrites the week and month it falls in, which no report asks for until
// the retention is changed).

// classCounts is what the engine keeps of one class.
type classCounts struct {
	members []string // the class is this one while its members are these
	cost    int      // of members
	mu      sync.Mutex
	// The members' places in the students' counts and their set, made of
	// a group's ordinals numbering ordinals students: under one roster
	// version a group's ordinals are only added to, never changed, so
	// they hold while there are as many.
	ordinals  int
	places    []int
	memberSet analytics.StudentSet
	rows      map[rowKey]classRow
}

// memberPlaces returns the members' places in the students' counts, and
// their set, kept while the group numbers as many students.
func (kept *classCounts) memberPlaces(ordinals map[string]int) ([]int, analytics.StudentSet) {
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if kept.places != nil && kept.ordinals == len(ordinals) {
		return kept.places, kept.memberSet
	}
	places := placesOf(ordinals, kept.members)
	var memberSet analytics.StudentSet
	for _, n := range places {
		memberSet.Add(n)
	}
	kept.ordinals, kept.places, kept.memberSet = len(ordinals), places, memberSet
	return places, memberSet
}

type rowKey struct {
	span analytics.Span
	key  analytics.Day
}

// classRow is what the members' counts came to in a group rollup row
// whose counts were group and whose students hashed to users.
type classRow struct {
	group, class analytics.Counts
	users        uint64
}

// rowCost is about what a kept row costs, its map entry included.
const rowCost = int(unsafe.Sizeof(classRow{})+unsafe.Sizeof(rowKey{})) + 32

// maxKeptClassCounts bounds the bytes of the class counts an engine
// keeps: a class asked for a year by day keeps about 430 rows, 70 KB.
const maxKeptClassCounts = 16 << 20

// usersSeed seeds usersHash.
var usersSeed = maphash.MakeSeed()

// usersHash sums up the row's two student sets.
func usersHash(r *analytics.GroupRollup) uint64 {
	var h maphash.Hash
	h.SetSeed(usersSeed)
	var b [8]byte
	for _, set := range [...]analytics.StudentSet{r.LiveLectureUsers, r.ChatUsers} {
		h.Write(binary.LittleEndian.AppendUint64(b[:0], uint64(len(set))))
		if len(set) > 0 {
			// The words as they lie in memory: the hash lives in this
			// process only.
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&set[0])), len(set)*8))
		}
	}
	return h.Sum64()
}

// keptCounts returns what is kept of the class of these members (the
// classes asked), under version, or a new, empty one.
func (e *Engine) keptCounts(key, version string, members []string) *classCounts {
	if kept, ok := e.classCounts.Get(key, version); ok && slices.Equal(kept.members, members) {
		return kept
	}
	kept := &classCounts{members: members, rows: map[rowKey]classRow{}}
	for _, id := range members {
		kept.cost += len(id) + 16 + 8 + 8 // and its place, and room in the set
	}
	e.classCounts.Put(key, version, kept, kept.cost)
	return kept
}

// classGroupReports emits the group reports of members (a class, or a
// teacher's classes together), read under the roster version roster: in
// each period, their counts added up and how many of them used the
// endpoint.
func (e *Engine) classGroupReports(ctx context.Context, group analytics.Group, loc *time.Location, ep *Endpoint,
	periods []analytics.DayRange, roster string, asked, members []string, emit func(*Report) error) error {
	key := group.ID + "\x00" + strings.Join(asked, "\x00")
	version := roster + "\x00" + rewrites(group)
	kept := e.keptCounts(key, version, members)
	// The rows first, then the ordinals and the students' counts, each at
	// least as new as the rows: a member counted in a row has a place,
	// and a row is never kept with counts older than it.
	rollups, err := e.fetchGroupRollups(ctx, group.ID, periods)
	if err != nil {
		return err
	}
	ordinals, err := e.Usage.Ordinals(ctx, group.ID)
	if err != nil {
		return err
	}
	places, memberSet := kept.memberPlaces(ordinals)
	reads, ends, stale, segs := kept.readsOf(periods, rollups)
	err = e.eachSegmentTotals(ctx, group.ID, segs, len(ordinals), func(i int, sum []analytics.Counts) {
		rd := &reads[stale[i]]
		rd.class = analytics.Counts{}
		for _, n := range places {
			if n < len(sum) {
				rd.class.Add(&sum[n])
			}
		}
	})
	if err != nil {
		return err
	}
	if len(stale) > 0 {
		kept.mu.Lock()
		for _, i := range stale {
			rd := &reads[i]
			kept.rows[rd.key] = classRow{group: rd.row.Counts, users: rd.users, class: rd.class}
		}
		cost := kept.cost + len(kept.rows)*rowCost
		kept.mu.Unlock()
		e.classCounts.Put(key, version, kept, cost)
	}
	return emitClassPeriods(loc, ep, periods, reads, ends, memberSet, emit)
}

// classRead is a row a class's periods read, with the members' counts
// kept for it.
type classRead struct {
	row   *analytics.GroupRollup
	key   rowKey
	users uint64 // the row's students hashed
	class analytics.Counts
}

// readsOf lists each row the periods read, in order, with the members'
// counts kept for it, and where each period's reads end; those not kept
// as the row is now (stale) must be counted again, from the students'
// counts of segs.
func (kept *classCounts) readsOf(periods []analytics.DayRange, rollups rollupIndex) (
	reads []classRead, ends, stale []int, segs []analytics.Segment) {
	ends = make([]int, len(periods))
	kept.mu.Lock()
	defer kept.mu.Unlock()
	for i, p := range periods {
		for _, seg := range analytics.GroupSegments(p) {
			for day := seg.Keys.First; day <= seg.Keys.Last; day = seg.Span.Next(day) {
				r := rollups[seg.Span][day]
				if r == nil {
					continue
				}
				k, users := rowKey{seg.Span, day}, usersHash(r)
				row, ok := kept.rows[k]
				if !ok || row.group != r.Counts || row.users != users {
					stale = append(stale, len(reads))
					segs = append(segs, studentSegment(k))
				}
				reads = append(reads, classRead{r, k, users, row.class})
			}
		}
		ends[i] = len(reads)
	}
	return reads, ends, stale, segs
}

// emitClassPeriods emits a report a period: the members' counts of its
// reads, and the members among the students of its rows.
func emitClassPeriods(loc *time.Location, ep *Endpoint, periods []analytics.DayRange, reads []classRead, ends []int,
	memberSet analytics.StudentSet, emit func(*Report) error) error {
	rep := &Report{Values: make([]int64, len(ep.Titles))}
	first := 0
	for i, p := range periods {
		var counts analytics.Counts
		var users analytics.StudentSet
		for _, rd := range reads[first:ends[i]] {
			counts.Add(&rd.class)
			users.Union(ep.users(rd.row))
		}
		first = ends[i]
		rep.Start, rep.End = p.First.Start(loc), p.Last.End(loc)
		rep.NumStudentsUsed = users.IntersectionLen(memberSet)
		ep.values(&counts, rep.Values)
		if err := emit(rep); err != nil {
			return err
		}
	}
	return nil
}

// rewrites names what rewrites a group's rows other than its writes of
// events and erasures: its zone (a rebuild in another cuts the days anew)
// and its retention (a cut rewrites the week and month it falls in). What
// is kept of the rows is kept under it.
func rewrites(group analytics.Group) string {
	return group.TimeZone + "\x00" + group.Retention.String()
}

// studentSegment is the segment of the students' counts that a group
// rollup row covers: a week's are its days'.
func studentSegment(k rowKey) analytics.Segment {
	if k.span == analytics.SpanWeek {
		return analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: k.key, Last: k.key + 6}}
	}
	return analytics.Segment{Span: k.span, Keys: analytics.DayRange{First: k.key, Last: k.key}}
}
