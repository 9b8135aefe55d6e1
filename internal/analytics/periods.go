package analytics

import (
	"slices"
	"time"
)

// Day is a calendar date counted in days since 1970-01-01. It carries no
// time zone: the same Day is a different span of instants in each zone.
type Day int32

// DayOf returns the calendar date of t in loc.
func DayOf(t time.Time, loc *time.Location) Day {
	y, m, d := t.In(loc).Date()
	return DateDay(y, m, d)
}

// DateDay returns the Day of a calendar date. Out-of-range months and days
// are normalised as time.Date does.
func DateDay(year int, month time.Month, day int) Day {
	return Day(time.Date(year, month, day, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Date returns the calendar date of d.
func (d Day) Date() (year int, month time.Month, day int) {
	return time.Unix(int64(d)*86400, 0).UTC().Date()
}

func (d Day) String() string { return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly) }

// Start returns the first instant of d in loc. Where a zone skips midnight
// (a daylight-saving jump at 00:00), the day starts at the transition;
// where clocks go back across midnight, so that it comes twice, the day
// starts at the first.
func (d Day) Start(loc *time.Location) time.Time {
	y, m, day := d.Date()
	t := time.Date(y, m, day, 0, 0, 0, 0, loc)
	if DayOf(t, loc) < d {
		// Midnight does not exist and time.Date answered an instant of the
		// day before: the day begins where that zone period ends.
		_, end := t.ZoneBounds()
		return end
	}
	start, _ := t.ZoneBounds()
	if start.IsZero() || start.After(t) || DayOf(start, loc) != d {
		return t
	}
	// A zone period began earlier on day d. Midnight may have come before
	// it, at the offset of the period before (time.Date picks one of two
	// midnights when there are two) ...
	_, before := start.Add(-time.Nanosecond).Zone()
	if first := time.Date(y, m, day, 0, 0, 0, 0, time.FixedZone("", before)); first.Before(start) && DayOf(first, loc) == d {
		return first.In(loc)
	}
	// ... or not at all, the day beginning at the transition.
	if DayOf(start.Add(-time.Millisecond), loc) < d {
		return start
	}
	return t
}

// End returns the last millisecond of d in loc.
func (d Day) End(loc *time.Location) time.Time {
	return (d + 1).Start(loc).Add(-time.Millisecond)
}

// MonthStart returns the first day of d's month.
func (d Day) MonthStart() Day {
	y, m, _ := d.Date()
	return DateDay(y, m, 1)
}

// NextMonthStart returns the first day of the month after d's.
func (d Day) NextMonthStart() Day {
	y, m, _ := d.Date()
	return DateDay(y, m+1, 1)
}

// WeekStart returns the Monday of d's ISO week.
func (d Day) WeekStart() Day {
	// 1970-01-01 was a Thursday, three days after a Monday.
	offset := (int32(d) + 3) % 7
	if offset < 0 {
		offset += 7
	}
	return d - Day(offset)
}

// DayRange is the days from First to Last, both included.
type DayRange struct {
	First, Last Day
}

// Len returns the number of days in r.
func (r DayRange) Len() int { return int(r.Last-r.First) + 1 }

// Span is the granularity of a rollup: one row per day, per calendar
// month, or per ISO week.
type Span int8

const (
	SpanDay   Span = 0
	SpanMonth Span = 1
	// SpanWeek rows are keyed by their Monday. Only group rollups have
	// them (GroupSegments): a week's distinct students are not a sum of
	// its days', while a student's counts of a week are.
	SpanWeek Span = 2
	// SpanLast rows are no period's: only student counts have them, one
	// row of key 0 per chunk of a group's students, holding each
	// student's last day of use of each metric (LastUse).
	SpanLast Span = 3
)

// Segment is a run of rollup keys of one span: days First..Last, or the
// months whose first days are First..Last.
type Segment struct {
	Span Span
	Keys DayRange
}

// Segments cuts r into the fewest rollup reads that cover it exactly:
// whole calendar months as month rollups, the days around them as day
// rollups.
func Segments(r DayRange) []Segment {
	var segs []Segment
	first := r.First
	if first != first.MonthStart() {
		end := min(first.NextMonthStart()-1, r.Last)
		segs = append(segs, Segment{SpanDay, DayRange{first, end}})
		first = end + 1
	}
	// Whole months: first is now a month start (or past r).
	lastMonth := Day(-1 << 31)
	for m := first; m <= r.Last && m.NextMonthStart()-1 <= r.Last; m = m.NextMonthStart() {
		lastMonth = m
	}
	if lastMonth >= first {
		segs = append(segs, Segment{SpanMonth, DayRange{first, lastMonth}})
		first = lastMonth.NextMonthStart()
	}
	if first <= r.Last {
		segs = append(segs, Segment{SpanDay, DayRange{first, r.Last}})
	}
	return segs
}

// GroupSegments cuts r as Segments does, and further cuts each run of
// days into the whole ISO weeks it holds and the days around them: the
// reads of group rollups, which keep weeks so that a weekly report reads
// a row a week rather than seven.
func GroupSegments(r DayRange) []Segment {
	var segs []Segment
	// Runs joins the days on both sides of a month's end.
	for _, seg := range Runs(Segments(r)) {
		if seg.Span != SpanDay {
			segs = append(segs, seg)
			continue
		}
		first, last := seg.Keys.First, seg.Keys.Last
		firstWeek := first.WeekStart()
		if firstWeek != first {
			firstWeek += 7
		}
		lastWeek := (last - 6).WeekStart() // the last Monday whose week ends by last
		if firstWeek > lastWeek {
			segs = append(segs, seg)
			continue
		}
		if first < firstWeek {
			segs = append(segs, Segment{SpanDay, DayRange{first, firstWeek - 1}})
		}
		segs = append(segs, Segment{SpanWeek, DayRange{firstWeek, lastWeek}})
		if lastWeek+7 <= last {
			segs = append(segs, Segment{SpanDay, DayRange{lastWeek + 7, last}})
		}
	}
	return segs
}

// Interval is how a range is cut into reports (docs/decisions.md, R1).
type Interval int

const (
	Whole Interval = iota // one report for the whole range
	Daily
	Weekly  // ISO weeks, Monday to Sunday
	Monthly // calendar months
)

var intervalNames = map[Interval]string{Whole: "none", Daily: "day", Weekly: "week", Monthly: "month"}

func (iv Interval) String() string { return intervalNames[iv] }

// CountPeriods returns how many periods r.Periods(iv) has, without
// cutting.
func (r DayRange) CountPeriods(iv Interval) int {
	switch iv {
	case Daily:
		return r.Len()
	case Weekly:
		return int(r.Last.WeekStart()-r.First.WeekStart())/7 + 1
	case Monthly:
		y1, m1, _ := r.First.Date()
		y2, m2, _ := r.Last.Date()
		return (y2-y1)*12 + int(m2-m1) + 1
	}
	return 1
}

// Periods cuts r into the calendar periods of iv, the first and last
// clipped to r (docs/decisions.md, R1).
func (r DayRange) Periods(iv Interval) []DayRange {
	if iv == Whole {
		return []DayRange{r}
	}
	periods := make([]DayRange, 0, r.CountPeriods(iv))
	for first := r.First; first <= r.Last; {
		var last Day
		switch iv {
		case Daily:
			last = first
		case Weekly:
			last = first.WeekStart() + 6
		case Monthly:
			last = first.NextMonthStart() - 1
		}
		last = min(last, r.Last)
		periods = append(periods, DayRange{First: first, Last: last})
		first = last + 1
	}
	return periods
}

// Next returns the key of the rollup after key's: the day after the last
// day key's rollup covers.
func (span Span) Next(key Day) Day {
	switch span {
	case SpanMonth:
		return key.NextMonthStart()
	case SpanWeek:
		return key + 7
	}
	return key + 1
}

// Runs merges segments that follow each other, of the same span, into
// one: the reads that cover segs (in order, not overlapping).
func Runs(segs []Segment) []Segment {
	var runs []Segment
	for _, seg := range segs {
		if n := len(runs); n > 0 && runs[n-1].Span == seg.Span && seg.Span.Next(runs[n-1].Keys.Last) >= seg.Keys.First {
			runs[n-1].Keys.Last = max(runs[n-1].Keys.Last, seg.Keys.Last)
			continue
		}
		runs = append(runs, seg)
	}
	return runs
}

// SegmentOf returns the index of the segment of segs (in order, not
// overlapping) that holds the rollup of span and key, or -1. Segments
// that do not overlap in days do not overlap in keys either.
func SegmentOf(segs []Segment, span Span, key Day) int {
	i, found := slices.BinarySearchFunc(segs, key, func(s Segment, key Day) int { return compareRange(s.Keys, key) })
	if !found || segs[i].Span != span {
		return -1
	}
	return i
}

// PeriodAt returns the index of the range of periods (ascending, apart)
// that holds day, or -1.
func PeriodAt(periods []DayRange, day Day) int {
	i, found := slices.BinarySearchFunc(periods, day, compareRange)
	if !found {
		return -1
	}
	return i
}

// compareRange orders r against day, for a binary search: -1 when r ends
// before it, 1 when r begins after it, 0 when r holds it.
func compareRange(r DayRange, day Day) int {
	switch {
	case r.Last < day:
		return -1
	case day < r.First:
		return 1
	}
	return 0
}
