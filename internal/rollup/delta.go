// Package rollup is what the usage stores share, whichever database holds
// them: how new events add to the rollup rows that reports read (Delta),
// how those rows are stored (their count columns, the encoding of student
// sets and of the students' counts by ordinal) and read back, and how the
// appends waiting for a writer are merged into one write (Call).
package rollup

import (
	"cmp"
	"maps"
	"slices"

	"groupanalytics/internal/analytics"
)

// StudentKey names one student's rollup row.
type StudentKey struct {
	GroupID   string
	Span      analytics.Span
	Key       analytics.Day
	StudentID string
}

// GroupKey names one group rollup row.
type GroupKey struct {
	GroupID string
	Span    analytics.Span
	Key     analytics.Day
}

// GroupDelta is what a batch of events adds to one group rollup row.
type GroupDelta struct {
	Counts           analytics.Counts
	LiveLectureUsers map[string]struct{} // student ids
	ChatUsers        map[string]struct{}
}

// Delta is what a batch of new events adds to the rollups: every
// store applies it the same way, as upserts that add counts and union sets.
type Delta struct {
	Students map[StudentKey]*analytics.Counts
	Groups   map[GroupKey]*GroupDelta
}

// NewDelta returns an empty delta.
func NewDelta() *Delta {
	return &Delta{Students: map[StudentKey]*analytics.Counts{}, Groups: map[GroupKey]*GroupDelta{}}
}

// KeysOf returns the group rollup rows that count e: its day's and
// its month's.
func KeysOf(e analytics.Event) [2]GroupKey {
	return [...]GroupKey{{e.GroupID, analytics.SpanDay, e.Day}, {e.GroupID, analytics.SpanMonth, e.Day.MonthStart()}}
}

// Add counts e in its day's and its month's rollups, and in its student's
// last days of use.
func (d *Delta) Add(e analytics.Event) {
	lk := StudentKey{e.GroupID, analytics.SpanLast, 0, e.StudentID}
	last := d.Students[lk]
	if last == nil {
		last = new(analytics.Counts)
		d.Students[lk] = last
	}
	noteLastDay(last, e)
	for _, k := range KeysOf(e) {
		sk := StudentKey{k.GroupID, k.Span, k.Key, e.StudentID}
		sc := d.Students[sk]
		if sc == nil {
			sc = new(analytics.Counts)
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

// AddWeeks adds to the delta the group rows of the ISO weeks of its day
// rows, for the stores that keep them (analytics.SpanWeek): a week's row
// is its days' counts and the union of their students.
func (d *Delta) AddWeeks() {
	for k, day := range d.Groups {
		if k.Span != analytics.SpanDay {
			continue
		}
		wk := GroupKey{k.GroupID, analytics.SpanWeek, k.Key.WeekStart()}
		w := d.Groups[wk]
		if w == nil {
			w = &GroupDelta{LiveLectureUsers: map[string]struct{}{}, ChatUsers: map[string]struct{}{}}
			d.Groups[wk] = w
		}
		w.Counts.Add(&day.Counts)
		maps.Copy(w.LiveLectureUsers, day.LiveLectureUsers)
		maps.Copy(w.ChatUsers, day.ChatUsers)
	}
}

// GroupKeys returns the group rollup keys in one fixed order.
func (d *Delta) GroupKeys() []GroupKey {
	keys := make([]GroupKey, 0, len(d.Groups))
	for k := range d.Groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b GroupKey) int {
		return cmp.Or(cmp.Compare(a.GroupID, b.GroupID), cmp.Compare(a.Span, b.Span), cmp.Compare(a.Key, b.Key))
	})
	return keys
}

// StudentIDs returns the ids of the students the delta touches in each
// group, sorted.
func (d *Delta) StudentIDs() map[string][]string {
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
