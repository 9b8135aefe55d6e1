package rollup

import (
	"maps"
	"slices"
	"testing"

	"groupanalytics/internal/analytics"
)

func TestAddWeeksFoldsDaysIntoTheirWeek(t *testing.T) {
	// 2025-01-27 (Monday) to 2025-02-02 (Sunday): one week across two
	// months; 2025-02-03 starts the next.
	monday := analytics.DateDay(2025, 1, 27)
	d := NewDelta()
	for _, e := range []analytics.Event{
		{GroupID: "g", StudentID: "a", Day: monday, Metric: analytics.SessionsCreated},
		{GroupID: "g", StudentID: "b", Day: monday + 5, Metric: analytics.LiveLectureMessages},
		{GroupID: "g", StudentID: "a", Day: monday + 6, Metric: analytics.LiveLectureMessages},
		{GroupID: "g", StudentID: "c", Day: monday + 7, Metric: analytics.LiveLectureMessages},
		{GroupID: "h", StudentID: "a", Day: monday + 1, Metric: analytics.SessionsCreated},
	} {
		d.Add(e)
	}
	d.AddWeeks()
	week := d.Groups[GroupKey{"g", analytics.SpanWeek, monday}]
	if week == nil {
		t.Fatalf("no week row; rows: %v", slices.Collect(maps.Keys(d.Groups)))
	}
	if week.Counts[analytics.SessionsCreated] != 1 || week.Counts[analytics.LiveLectureMessages] != 2 {
		t.Errorf("week counts = %v", week.Counts)
	}
	if got := slices.Sorted(maps.Keys(week.LiveLectureUsers)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("week's live lecture users = %v, want a, b", got)
	}
	next := d.Groups[GroupKey{"g", analytics.SpanWeek, monday + 7}]
	if next == nil || next.Counts[analytics.LiveLectureMessages] != 1 {
		t.Errorf("next week = %+v", next)
	}
	if h := d.Groups[GroupKey{"h", analytics.SpanWeek, monday}]; h == nil || h.Counts[analytics.SessionsCreated] != 1 {
		t.Errorf("the other group's week = %+v", h)
	}
	weeks := 0
	for k := range d.Groups {
		if k.Span == analytics.SpanWeek {
			weeks++
		}
	}
	if weeks != 3 {
		t.Errorf("%d week rows, want 3", weeks)
	}
	for k := range d.Students {
		if k.Span == analytics.SpanWeek {
			t.Errorf("a student row of a week: %v", k)
		}
	}
}
