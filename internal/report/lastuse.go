package report

import (
	"cmp"
	"context"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
)

// StudentUse is one student's line of the list of who stopped: their last
// day of use of each endpoint and their status on the list's day.
type StudentUse struct {
	analytics.Student
	analytics.LastUse
	Status analytics.UseStatus
	// DaysSince is the days from the last use of either endpoint to
	// today (0 for today, or a day after it); -1: never.
	DaysSince int
}

// UseList is the list of a group's students (or a class's) by last use.
type UseList struct {
	Today         analytics.Day
	InactiveAfter int
	// Counts are how many of the students listed, before the status
	// filter, have each status.
	Counts   map[analytics.UseStatus]int
	Students []StudentUse
}

// UseQuery asks for a list of last use: the students of q's class (or
// the teacher's key's classes, or the whole group), those of Statuses
// (all when empty), stopped after InactiveAfter days (0: the group's
// setting).
type UseQuery struct {
	Query
	Statuses      []analytics.UseStatus
	InactiveAfter int
}

// LastUses lists the students that uq asks for with their last use, on
// today in the group's zone: those who never used it first, then by days
// since their last use, most first, then in report order. The last days
// are kept by the usage store as events arrive (analytics.LastDaysSegment):
// the list reads a few rows, whatever the range of usage.
func (e *Engine) LastUses(ctx context.Context, group analytics.Group, uq UseQuery, now time.Time) (UseList, error) {
	loc, err := group.Location()
	if err != nil {
		return UseList{}, err
	}
	list := UseList{Today: analytics.DayOf(now, loc), InactiveAfter: cmp.Or(uq.InactiveAfter, group.InactiveAfter, analytics.DefaultInactiveAfter),
		Counts: map[analytics.UseStatus]int{}}
	var classes []analytics.Class
	if uq.ClassID != "" || uq.Scoped {
		if classes, _, err = e.groupClasses(ctx, group.ID); err != nil {
			return list, err
		}
	}
	members, restricted, _, err := e.members(uq.Query, classes)
	if err != nil {
		return list, err
	}
	ctx, err = e.Usage.Settle(ctx, group.ID)
	if err != nil {
		return list, err
	}
	students, err := e.students(ctx, group.ID)
	if err != nil {
		return list, err
	}
	ordinals, err := e.Usage.Ordinals(ctx, group.ID)
	if err != nil {
		return list, err
	}
	last := [][]analytics.Counts{nil}
	if err := e.Usage.StudentTotals(ctx, group.ID, []analytics.Segment{analytics.LastDaysSegment}, last); err != nil {
		return list, err
	}
	for _, s := range students {
		if _, in := slices.BinarySearch(members, s.ID); restricted && !in {
			continue
		}
		u := StudentUse{Student: s, LastUse: analytics.NeverUsed, DaysSince: -1}
		if o, ok := ordinals[s.ID]; ok && o < len(last[0]) {
			u.LastUse = analytics.LastUseOf(&last[0][o])
		}
		if either := u.Either(); either != analytics.NoDay {
			u.DaysSince = max(0, int(list.Today-either))
		}
		u.Status = u.LastUse.Status(list.Today, list.InactiveAfter)
		list.Counts[u.Status]++
		if len(uq.Statuses) == 0 || slices.Contains(uq.Statuses, u.Status) {
			list.Students = append(list.Students, u)
		}
	}
	slices.SortStableFunc(list.Students, func(a, b StudentUse) int {
		return cmp.Compare(sinceOrder(b), sinceOrder(a))
	})
	return list, nil
}

// sinceOrder is a student's days since their last use, never the most.
func sinceOrder(u StudentUse) int {
	if u.DaysSince < 0 {
		return int(^uint(0) >> 1)
	}
	return u.DaysSince
}
