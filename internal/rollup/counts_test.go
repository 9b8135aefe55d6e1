package rollup

import (
	"errors"
	"reflect"
	"testing"

	"groupanalytics/internal/analytics"
)

func TestCountsRoundTrip(t *testing.T) {
	for _, students := range [][]StudentCounts{
		nil,
		{{Ordinal: 0, Counts: analytics.Counts{1}}},
		{{Ordinal: 3, Counts: analytics.Counts{0, 2, 0, 0, 0, 0, 300}}, {Ordinal: 4, Counts: analytics.Counts{1, 1, 1, 1, 1, 1, 1}},
			{Ordinal: 1000, Counts: analytics.Counts{-5, 0, 0, 0, 0, 0, 1 << 40}}},
	} {
		b := AppendCounts(nil, students)
		got, err := DecodeCounts(b)
		if err != nil || len(got) != len(students) || len(got) > 0 && !reflect.DeepEqual(got, students) {
			t.Errorf("round trip of %v: %v, %v", students, got, err)
		}
		totals, err := AddCounts(make([]analytics.Counts, 2, 8)[:0], b)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range students {
			if totals[s.Ordinal] != s.Counts {
				t.Errorf("AddCounts: ordinal %d has %v, want %v", s.Ordinal, totals[s.Ordinal], s.Counts)
			}
		}
	}
}

func TestAddCountsClearsReusedBuffers(t *testing.T) {
	buf := make([]analytics.Counts, 10)
	for i := range buf {
		buf[i] = analytics.Counts{9, 9, 9, 9, 9, 9, 9}
	}
	totals, err := AddCounts(buf[:0], AppendCounts(nil, []StudentCounts{{Ordinal: 5, Counts: analytics.Counts{1}}}))
	if err != nil || len(totals) != 6 || totals[2] != (analytics.Counts{}) || totals[5] != (analytics.Counts{1}) {
		t.Errorf("totals %v, %v: a reused buffer's old counts show", totals, err)
	}
}

func TestMergeCounts(t *testing.T) {
	row := []StudentCounts{{1, analytics.Counts{1}}, {4, analytics.Counts{0, 2}}, {9, analytics.Counts{3}}}
	add := []StudentCounts{{0, analytics.Counts{5}}, {4, analytics.Counts{0, -2}}, {9, analytics.Counts{1}}, {12, analytics.Counts{7}}}
	want := []StudentCounts{{0, analytics.Counts{5}}, {1, analytics.Counts{1}}, {9, analytics.Counts{4}}, {12, analytics.Counts{7}}}
	if got := MergeCounts(row, add); !reflect.DeepEqual(got, want) {
		t.Errorf("MergeCounts = %v, want %v (ordinal 4 comes to zeros and goes)", got, want)
	}
}

func TestCorruptCountsAreAnError(t *testing.T) {
	good := AppendCounts(nil, []StudentCounts{{Ordinal: 7, Counts: analytics.Counts{1, 2, 3}}})
	for _, b := range [][]byte{nil, {}, {2}, good[:len(good)-1], append(good, 0x80)} {
		if _, err := DecodeCounts(b); !errors.Is(err, ErrCorruptCounts) {
			t.Errorf("DecodeCounts(%x): %v, want ErrCorruptCounts", b, err)
		}
		if _, err := AddCounts(nil, b); !errors.Is(err, ErrCorruptCounts) {
			t.Errorf("AddCounts(%x): %v, want ErrCorruptCounts", b, err)
		}
	}
}
