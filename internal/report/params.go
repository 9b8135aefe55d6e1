package report

import (
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// ParseInterval reads the interval parameter: day, week or month.
func ParseInterval(value string) (analytics.Interval, error) {
	switch value {
	case "day":
		return analytics.Daily, nil
	case "week":
		return analytics.Weekly, nil
	case "month":
		return analytics.Monthly, nil
	}
	return analytics.Whole, analytics.Errorf(analytics.Invalid, "Invalid interval: expected day, week or month, got %q", value)
}

// ParseFlag reads a boolean parameter (students, schools): true or false,
// in any case.
func ParseFlag(name, value string) (bool, error) {
	switch strings.ToLower(value) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, analytics.Errorf(analytics.Invalid, "Invalid %s: expected true or false, got %q", name, value)
}

// Query is a report request with its parameter values read. Nil dates
// take their defaults.
type Query struct {
	Start, End *analytics.Date
	Students   bool
	Interval   analytics.Interval
	// StudentIDs, if any, keeps the student reports to these students.
	StudentIDs []string
	// ClassID, if set, keeps the reports to the class's members: its
	// group reports count theirs, its student reports are theirs.
	ClassID string
	// Scoped marks the query of a teacher's key, which sees its Classes
	// only: without ClassID, their members together.
	Scoped  bool
	Classes []string
	// Disclosing, if set, is called once student reports are checked and
	// about to be computed, when there are students to report: the access
	// log's entry may be written while they are.
	Disclosing func()
}

// MaxStudentIDs caps the studentId values of one request.
const MaxStudentIDs = 1000

// SetStudentIDs checks the studentId values and sets them: up to
// MaxStudentIDs (repeats count once), for student reports only.
func (q *Query) SetStudentIDs(ids []string) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	switch {
	case len(ids) > MaxStudentIDs:
		return analytics.Errorf(analytics.Invalid, "Invalid studentId: at most %d students a request, got %d", MaxStudentIDs, len(ids))
	case len(ids) > 0 && !q.Students:
		return analytics.Errorf(analytics.Invalid, "Invalid studentId: it picks students of student reports; add students=true")
	}
	q.StudentIDs = ids
	return nil
}

// Range is the days q asks for at time now, in loc, of a group keeping
// its usage retention days: startDate (default DefaultStart, or the first
// day the group keeps when that is later) to endDate (default today).
// First may lie after Last.
func (q Query) Range(now time.Time, loc *time.Location, retention analytics.Days) analytics.DayRange {
	today := analytics.DayOf(now, loc)
	r := analytics.DayRange{First: max(DefaultStart, retention.FirstKept(today)), Last: today}
	if q.Start != nil {
		r.First = q.Start.Day(loc)
	}
	if q.End != nil {
		r.Last = q.End.Day(loc)
	}
	return r
}

// DefaultStart is the first day reported when startDate is not given:
// 2025-01-01 in the group's time zone (for a UTC group, exactly the
// documented 2025-01-01T00:00:00.000Z).
var DefaultStart = analytics.DateDay(2025, time.January, 1)

// asked returns the classes whose members the reports cover: the class
// asked for, or a teacher's key's classes.
func (q Query) asked() []string {
	if q.ClassID != "" {
		return []string{q.ClassID}
	}
	return q.Classes
}
