package analytics

import (
	"cmp"
	"slices"
)

// StudentRollupKey names one student's rollup row.
type StudentRollupKey struct {
	GroupID   string
	Span      Span
	Key       Day
	StudentID string
}

// GroupRollupKey names one group rollup row.
type GroupRollupKey struct {
	GroupID string
	Span    Span
	Key     Day
}

// GroupDelta is what a batch of events adds to one group rollup row.
type GroupDelta struct {
	Counts           Counts
	LiveLectureUsers map[string]struct{} // student ids
	ChatUsers        map[string]struct{}
}

// RollupDelta is what a batch of new events adds to the rollups: every
// store applies it the same way, as upserts that add counts and union sets.
type RollupDelta struct {
	Students map[StudentRollupKey]*Counts
	Groups   map[GroupRollupKey]*GroupDelta
}

// NewRollupDelta returns an empty delta.
func NewRollupDelta() *RollupDelta {
	return &RollupDelta{Students: map[StudentRollupKey]*Counts{}, Groups: map[GroupRollupKey]*GroupDelta{}}
}

// GroupKeysOf returns the group rollup rows that count e: its day's and
// its month's.
func GroupKeysOf(e Event) [2]GroupRollupKey {
	return [...]GroupRollupKey{{e.GroupID, SpanDay, e.Day}, {e.GroupID, SpanMonth, e.Day.MonthStart()}}
}

// Add counts e in its day's and its month's rollups.
func (d *RollupDelta) Add(e Event) {
	for _, k := range GroupKeysOf(e) {
		sk := StudentRollupKey{k.GroupID, k.Span, k.Key, e.StudentID}
		sc := d.Students[sk]
		if sc == nil {
			sc = new(Counts)
			d.Students[sk] = sc
		}
		sc[e.Metric]++
		g := d.Groups[k]
		if g == nil {
			g = &GroupDelta{LiveLectureUsers: map[string]struct{}{}, ChatUsers: map[string]struct{}{}}
			d.Groups[k] = g
		}
		g.Counts[e.Metric]++
		if e.Metric.IsLiveLecture() {
			g.LiveLectureUsers[e.StudentID] = struct{}{}
		}
		if e.Metric.IsChat() {
			g.ChatUsers[e.StudentID] = struct{}{}
		}
	}
}

// StudentKeys returns the student rollup keys in one fixed order, so that
// concurrent writers lock rows in the same order and cannot deadlock.
func (d *RollupDelta) StudentKeys() []StudentRollupKey {
	keys := make([]StudentRollupKey, 0, len(d.Students))
	for k := range d.Students {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b StudentRollupKey) int {
		return cmp.Or(cmp.Compare(a.GroupID, b.GroupID), cmp.Compare(a.Span, b.Span),
			cmp.Compare(a.Key, b.Key), cmp.Compare(a.StudentID, b.StudentID))
	})
	return keys
}

// GroupKeys returns the group rollup keys in one fixed order.
func (d *RollupDelta) GroupKeys() []GroupRollupKey {
	keys := make([]GroupRollupKey, 0, len(d.Groups))
	for k := range d.Groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b GroupRollupKey) int {
		return cmp.Or(cmp.Compare(a.GroupID, b.GroupID), cmp.Compare(a.Span, b.Span), cmp.Compare(a.Key, b.Key))
	})
	return keys
}

// StudentIDs returns the ids of the students the delta touches in each
// group, sorted.
func (d *RollupDelta) StudentIDs() map[string][]string {
	seen := map[[2]string]bool{}
	ids := map[string][]string{}
	for k := range d.Students {
		if p := [2]string{k.GroupID, k.StudentID}; !seen[p] {
			seen[p] = true
			ids[k.GroupID] = append(ids[k.GroupID], k.StudentID)
		}
	}
	for _, list := range ids {
		slices.Sort(list)
	}
	return ids
}
