package rollup

import (
	"fmt"
	"testing"

	"groupanalytics/internal/analytics"
)

// TestPackedRowsOfRanges: packed rows come back as they went in, those of
// each segment's range in order, and a span without rows (never packed)
// passes none.
func TestPackedRowsOfRanges(t *testing.T) {
	row := func(key analytics.Day, n int64) analytics.GroupRollup {
		r := analytics.GroupRollup{Key: key, ChatUsers: analytics.StudentSet{uint64(n), 0, 1 << 63}}
		r.Counts[analytics.MainChatMessages] = n
		r.Counts[analytics.SessionsCreated] = -n // varints of either sign
		if n%2 == 0 {
			r.LiveLectureUsers = analytics.StudentSet{uint64(n)}
		}
		return r
	}
	var p Packed
	days := []analytics.GroupRollup{row(12, 12), row(10, 10), row(11, 11), row(20, 20)}
	p.Pack(0, days) // unsorted: Pack sorts them
	var empty Packed
	segs := []analytics.Segment{
		{Span: analytics.SpanDay, Keys: analytics.DayRange{First: 11, Last: 19}},
		{Span: analytics.SpanMonth, Keys: analytics.DayRange{First: 0, Last: 40}},
		{Span: analytics.SpanDay, Keys: analytics.DayRange{First: 20, Last: 30}},
		{Span: analytics.SpanWeek, Keys: analytics.DayRange{First: 0, Last: 40}},
	}
	for _, c := range []struct {
		name string
		p    *Packed
		want string
	}{
		{"days", &p, fmt.Sprint([]string{"0 " + fmt.Sprint(row(11, 11)), "0 " + fmt.Sprint(row(12, 12)), "2 " + fmt.Sprint(row(20, 20))})},
		{"none", &empty, fmt.Sprint([]string(nil))},
	} {
		var got []string
		var r analytics.GroupRollup
		if !c.p.Each(segs, &r, func(seg int) { got = append(got, fmt.Sprint(seg, " ", r)) }) {
			t.Fatalf("%s: a span not packed", c.name)
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if p.Each([]analytics.Segment{{Span: analytics.SpanLast}}, new(analytics.GroupRollup), func(int) { t.Error("a row passed") }) {
		t.Error("a span Packed does not hold was read")
	}
}
