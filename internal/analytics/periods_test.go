package analytics

import (
	"slices"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := LoadZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestDayStartAndEnd(t *testing.T) {
	tests := []struct {
		zone       string
		day        Day
		start, end string
	}{
		{"UTC", DateDay(2025, 1, 1), "2025-01-01T00:00:00Z", "2025-01-01T23:59:59.999Z"},
		{"America/New_York", DateDay(2025, 1, 1), "2025-01-01T05:00:00Z", "2025-01-02T04:59:59.999Z"},
		// Spring forward: a 23-hour day.
		{"Europe/Berlin", DateDay(2025, 3, 30), "2025-03-29T23:00:00Z", "2025-03-30T21:59:59.999Z"},
		// Fall back: a 25-hour day.
		{"Europe/Berlin", DateDay(2025, 10, 26), "2025-10-25T22:00:00Z", "2025-10-26T22:59:59.999Z"},
		{"Asia/Kathmandu", DateDay(2025, 6, 1), "2025-05-31T18:15:00Z", "2025-06-01T18:14:59.999Z"},
		// Santiago skips midnight: 2024-09-08 begins at 01:00 local (-03).
		{"America/Santiago", DateDay(2024, 9, 8), "2024-09-08T04:00:00Z", "2024-09-09T02:59:59.999Z"},
		{"America/Santiago", DateDay(2024, 9, 7), "2024-09-07T04:00:00Z", "2024-09-08T03:59:59.999Z"},
		// Amman goes back from 01:00 to 00:00: midnight comes twice, and
		// the day starts at the first.
		{"Asia/Amman", DateDay(2021, 10, 29), "2021-10-28T21:00:00Z", "2021-10-29T21:59:59.999Z"},
		{"Asia/Amman", DateDay(2021, 10, 28), "2021-10-27T21:00:00Z", "2021-10-28T20:59:59.999Z"},
	}
	for _, tt := range tests {
		loc := mustZone(t, tt.zone)
		start, end := tt.day.Start(loc), tt.day.End(loc)
		if got := start.UTC().Format(time.RFC3339Nano); got != tt.start {
			t.Errorf("%s %s: start %s, want %s", tt.zone, tt.day, got, tt.start)
		}
		if got := end.UTC().Format(time.RFC3339Nano); got != tt.end {
			t.Errorf("%s %s: end %s, want %s", tt.zone, tt.day, got, tt.end)
		}
		if DayOf(start, loc) != tt.day || DayOf(end, loc) != tt.day || DayOf(start.Add(-time.Millisecond), loc) != tt.day-1 {
			t.Errorf("%s %s: bounds do not enclose exactly the day", tt.zone, tt.day)
		}
	}
}

// TestDayStartAtEveryTransition checks, in every zone of the embedded
// database, the days around every offset change from 1970 to 2040: a day
// starts at the first instant whose date it is, and ends just before the
// next day starts.
func TestDayStartAtEveryTransition(t *testing.T) {
	files, err := zoneFiles()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name := range files {
		loc := mustZone(t, name)
		for at := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC); at.Year() < 2040; {
			_, end := at.In(loc).ZoneBounds()
			if !end.After(at) {
				break
			}
			for d := DayOf(end, loc) - 1; d <= DayOf(end, loc)+1; d++ {
				start := d.Start(loc)
				if DayOf(start, loc) == d+1 && DayOf(start.Add(-time.Millisecond), loc) == d-1 {
					continue // a day the zone skipped, as Samoa skipped 2011-12-30
				}
				if DayOf(start, loc) != d || DayOf(start.Add(-time.Millisecond), loc) >= d {
					t.Fatalf("%s %s: Start %s is not the first instant of the day", name, d, start.UTC())
				}
				if d.End(loc).Add(time.Millisecond) != (d + 1).Start(loc) {
					t.Fatalf("%s %s: End does not meet the next day's Start", name, d)
				}
				checked++
			}
			at = end
		}
	}
	t.Logf("%d days at transitions checked in %d zones", checked, len(files))
}

func TestLoadZone(t *testing.T) {
	for _, name := range []string{"UTC", "Europe/Berlin", "America/Santiago", "Pacific/Kiritimati"} {
		if _, err := LoadZone(name); err != nil {
			t.Errorf("LoadZone(%q): %v", name, err)
		}
	}
	for _, name := range []string{"", "Local", "Mars/Olympus", "../etc/passwd", "europe/berlin"} {
		if _, err := LoadZone(name); err == nil {
			t.Errorf("LoadZone(%q) succeeded", name)
		}
	}
}

func TestWeekStartIsMonday(t *testing.T) {
	for d := DateDay(1969, 12, 1); d < DateDay(1970, 2, 1); d++ {
		w := d.WeekStart()
		y, m, day := w.Date()
		if wd := time.Date(y, m, day, 0, 0, 0, 0, time.UTC).Weekday(); wd != time.Monday || d-w > 6 || d < w {
			t.Fatalf("WeekStart(%s) = %s (%s)", d, w, wd)
		}
	}
}

// utcDay is the day of a date ("2025-01-06") in UTC.
func utcDay(s string) Day {
	tm, _ := time.Parse(time.DateOnly, s)
	return DayOf(tm, time.UTC)
}

// cutCase is a range of days and the segments it should be cut into.
type cutCase struct {
	first, last string
	want        []Segment
}

// checkCuts checks that cut (Segments or GroupSegments) cuts each case's
// range as it wants.
func checkCuts(t *testing.T, name string, cut func(DayRange) []Segment, tests []cutCase) {
	t.Helper()
	for _, tt := range tests {
		if got := cut(DayRange{utcDay(tt.first), utcDay(tt.last)}); !slices.Equal(got, tt.want) {
			t.Errorf("%s(%s..%s) = %v, want %v", name, tt.first, tt.last, got, tt.want)
		}
	}
}

func TestSegments(t *testing.T) {
	checkCuts(t, "Segments", Segments, []cutCase{
		{"2025-01-05", "2025-01-05", []Segment{{SpanDay, DayRange{utcDay("2025-01-05"), utcDay("2025-01-05")}}}},
		{"2025-01-01", "2025-01-31", []Segment{{SpanMonth, DayRange{utcDay("2025-01-01"), utcDay("2025-01-01")}}}},
		{"2025-01-01", "2025-01-30", []Segment{{SpanDay, DayRange{utcDay("2025-01-01"), utcDay("2025-01-30")}}}},
		{"2025-01-15", "2025-04-10", []Segment{
			{SpanDay, DayRange{utcDay("2025-01-15"), utcDay("2025-01-31")}},
			{SpanMonth, DayRange{utcDay("2025-02-01"), utcDay("2025-03-01")}},
			{SpanDay, DayRange{utcDay("2025-04-01"), utcDay("2025-04-10")}},
		}},
		{"2024-12-31", "2025-12-31", []Segment{
			{SpanDay, DayRange{utcDay("2024-12-31"), utcDay("2024-12-31")}},
			{SpanMonth, DayRange{utcDay("2025-01-01"), utcDay("2025-12-01")}},
		}},
		{"2025-02-10", "2025-03-05", []Segment{
			{SpanDay, DayRange{utcDay("2025-02-10"), utcDay("2025-02-28")}},
			{SpanDay, DayRange{utcDay("2025-03-01"), utcDay("2025-03-05")}},
		}},
	})
}

func TestGroupSegments(t *testing.T) {
	checkCuts(t, "GroupSegments", GroupSegments, []cutCase{
		// 2025-01-06 and 2025-01-13 are Mondays.
		{"2025-01-06", "2025-01-12", []Segment{{SpanWeek, DayRange{utcDay("2025-01-06"), utcDay("2025-01-06")}}}},
		{"2025-01-06", "2025-01-11", []Segment{{SpanDay, DayRange{utcDay("2025-01-06"), utcDay("2025-01-11")}}}},
		{"2025-01-05", "2025-01-14", []Segment{
			{SpanDay, DayRange{utcDay("2025-01-05"), utcDay("2025-01-05")}},
			{SpanWeek, DayRange{utcDay("2025-01-06"), utcDay("2025-01-06")}},
			{SpanDay, DayRange{utcDay("2025-01-13"), utcDay("2025-01-14")}},
		}},
		// A week across two months, none of them whole.
		{"2025-01-27", "2025-02-02", []Segment{{SpanWeek, DayRange{utcDay("2025-01-27"), utcDay("2025-01-27")}}}},
		// Whole months stay months; the days around them hold weeks.
		{"2025-01-15", "2025-04-13", []Segment{
			{SpanDay, DayRange{utcDay("2025-01-15"), utcDay("2025-01-19")}},
			{SpanWeek, DayRange{utcDay("2025-01-20"), utcDay("2025-01-20")}},
			{SpanDay, DayRange{utcDay("2025-01-27"), utcDay("2025-01-31")}},
			{SpanMonth, DayRange{utcDay("2025-02-01"), utcDay("2025-03-01")}},
			{SpanDay, DayRange{utcDay("2025-04-01"), utcDay("2025-04-06")}},
			{SpanWeek, DayRange{utcDay("2025-04-07"), utcDay("2025-04-07")}},
		}},
	})
}

func TestSegmentsCoverEveryDayOnce(t *testing.T) {
	for _, cut := range []struct {
		name string
		fn   func(DayRange) []Segment
	}{{"Segments", Segments}, {"GroupSegments", GroupSegments}} {
		for first := DateDay(2024, 1, 1); first < DateDay(2024, 3, 5); first += 3 {
			for last := first; last < first+120; last += 5 {
				covered := map[Day]int{}
				for _, s := range cut.fn(DayRange{first, last}) {
					if cut.name == "Segments" && s.Span == SpanWeek {
						t.Fatalf("Segments(%s..%s) has weeks", first, last)
					}
					for k := s.Keys.First; k <= s.Keys.Last; k = s.Span.Next(k) {
						for day := k; day < s.Span.Next(k); day++ {
							covered[day]++
						}
					}
				}
				if want := (DayRange{first, last}).Len(); len(covered) != want {
					t.Fatalf("%s(%s..%s): %d days covered, want %d", cut.name, first, last, len(covered), want)
				}
				for day, n := range covered {
					if n != 1 || day < first || day > last {
						t.Fatalf("%s(%s..%s): day %s covered %d times", cut.name, first, last, day, n)
					}
				}
			}
		}
	}
}

func TestStudentSet(t *testing.T) {
	var a, b StudentSet
	for _, n := range []int{0, 5, 63, 64, 700} {
		a.Add(n)
	}
	b.Add(5)
	b.Add(1000)
	a.Union(b)
	if a.Len() != 6 {
		t.Fatalf("Len = %d, want 6", a.Len())
	}
	a.Remove(1000)
	a.Remove(99999)
	if a.Len() != 5 {
		t.Fatalf("after removing: Len = %d, want 5", a.Len())
	}
}

func TestPlanValidAt(t *testing.T) {
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	end, cancelled := at("2025-07-01T00:00:00Z"), at("2025-03-01T00:00:00Z")
	p := Plan{Starts: at("2025-01-01T00:00:00Z"), Ends: &end}
	for s, want := range map[string]bool{"2024-12-31T23:59:59Z": false, "2025-01-01T00:00:00Z": true, "2025-06-30T23:59:59Z": true, "2025-07-01T00:00:00Z": false} {
		if p.ValidAt(at(s)) != want {
			t.Errorf("ValidAt(%s) = %t", s, !want)
		}
	}
	p.Cancelled = &cancelled
	if p.ValidAt(at("2025-03-01T00:00:00Z")) || !p.ValidAt(at("2025-02-28T23:59:59Z")) {
		t.Error("a cancelled plan is valid until its cancellation only")
	}
}

func TestCutIntoPeriods(t *testing.T) {
	d := func(s string) Day {
		tm, _ := time.Parse(time.DateOnly, s)
		return DayOf(tm, time.UTC)
	}
	r := DayRange{First: d("2025-01-29"), Last: d("2025-03-04")}
	tests := []struct {
		iv   Interval
		want []string
	}{
		{Whole, []string{"2025-01-29..2025-03-04"}},
		{Weekly, []string{"2025-01-29..2025-02-02", "2025-02-03..2025-02-09", "2025-02-10..2025-02-16",
			"2025-02-17..2025-02-23", "2025-02-24..2025-03-02", "2025-03-03..2025-03-04"}},
		{Monthly, []string{"2025-01-29..2025-01-31", "2025-02-01..2025-02-28", "2025-03-01..2025-03-04"}},
	}
	for _, tt := range tests {
		got := r.Periods(tt.iv)
		if len(got) != len(tt.want) || r.CountPeriods(tt.iv) != len(tt.want) {
			t.Errorf("%s: %d periods (counted %d), want %d", tt.iv, len(got), r.CountPeriods(tt.iv), len(tt.want))
			continue
		}
		for i, p := range got {
			if s := p.First.String() + ".." + p.Last.String(); s != tt.want[i] {
				t.Errorf("%s period %d = %s, want %s", tt.iv, i, s, tt.want[i])
			}
		}
	}
	if n := len(r.Periods(Daily)); n != r.Len() || r.CountPeriods(Daily) != n {
		t.Errorf("daily: %d periods, want %d", n, r.Len())
	}
}

func TestRunsAndSegmentOf(t *testing.T) {
	jan15, feb1, mar1, apr1, apr10 := DateDay(2026, 1, 15), DateDay(2026, 2, 1), DateDay(2026, 3, 1), DateDay(2026, 4, 1), DateDay(2026, 4, 10)
	var segs []Segment
	for _, p := range (DayRange{jan15, apr10}).Periods(Monthly) {
		segs = append(segs, Segments(p)...)
	}
	runs := Runs(segs)
	want := []Segment{{SpanDay, DayRange{jan15, feb1 - 1}}, {SpanMonth, DayRange{feb1, mar1}}, {SpanDay, DayRange{apr1, apr10}}}
	if !slices.Equal(runs, want) {
		t.Errorf("Runs = %v, want %v", runs, want)
	}
	for _, c := range []struct {
		span Span
		key  Day
		want int
	}{
		{SpanDay, jan15, 0}, {SpanDay, feb1 - 1, 0}, {SpanMonth, feb1, 1}, {SpanMonth, mar1, 2},
		{SpanDay, feb1 + 3, -1}, {SpanMonth, apr1, -1}, {SpanDay, apr10, 3}, {SpanDay, apr10 + 1, -1}, {SpanDay, jan15 - 1, -1},
	} {
		if got := SegmentOf(segs, c.span, c.key); got != c.want {
			t.Errorf("SegmentOf(%d, %s) = %d, want %d", c.span, c.key, got, c.want)
		}
	}
}

// A district's report reads the runs of its periods' group segments and
// adds each row to the period that holds its key: every key of a run must
// be in one period, among that period's own segments.
func TestRunsOfPeriodsLieInTheirPeriods(t *testing.T) {
	for _, interval := range []Interval{Whole, Daily, Weekly, Monthly} {
		for first := DateDay(2024, 1, 1); first < DateDay(2024, 2, 20); first += 5 {
			for last := first; last < first+100; last += 7 {
				periods := (DayRange{first, last}).Periods(interval)
				var segs []Segment
				for _, p := range periods {
					segs = append(segs, GroupSegments(p)...)
				}
				for _, run := range Runs(segs) {
					for k := run.Keys.First; k <= run.Keys.Last; k = run.Span.Next(k) {
						pi := PeriodAt(periods, k)
						if pi < 0 || SegmentOf(GroupSegments(periods[pi]), run.Span, k) < 0 {
							t.Fatalf("%v of %s..%s: key %s of span %d is in period %d, not among its segments", interval, first, last, k, run.Span, pi)
						}
					}
				}
				if PeriodAt(periods, first-1) != -1 || PeriodAt(periods, last+1) != -1 {
					t.Fatalf("PeriodAt finds a day outside %s..%s", first, last)
				}
			}
		}
	}
}
