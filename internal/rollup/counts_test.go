package rollup

import (
	"bytes"
	"errors"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
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

func TestAddToRow(t *testing.T) {
	row := []StudentCounts{{1, analytics.Counts{1}}, {4, analytics.Counts{0, 2}}, {9, analytics.Counts{3}}, {300, analytics.Counts{0, 0, 1 << 40}}}
	for _, c := range []struct {
		name     string
		row, add []StudentCounts
		want     []StudentCounts
	}{
		{"no row yet", nil, []StudentCounts{{2, analytics.Counts{1}}}, []StudentCounts{{2, analytics.Counts{1}}}},
		{"before, between, on and after the row's students; ordinal 4 comes to zeros and goes", row,
			[]StudentCounts{{0, analytics.Counts{5}}, {4, analytics.Counts{0, -2}}, {9, analytics.Counts{1}}, {12, analytics.Counts{7}}, {400, analytics.Counts{0, 1}}},
			[]StudentCounts{{0, analytics.Counts{5}}, {1, analytics.Counts{1}}, {9, analytics.Counts{4}}, {12, analytics.Counts{7}}, {300, analytics.Counts{0, 0, 1 << 40}}, {400, analytics.Counts{0, 1}}}},
		{"nothing to add", row, nil, row},
		{"the first student goes: the next one's gap grows", row, []StudentCounts{{1, analytics.Counts{-1}}}, row[1:]},
	} {
		var b []byte
		if c.row != nil {
			b = AppendCounts(nil, c.row)
		}
		got, err := AddToRow(b, c.add)
		if want := AppendCounts(nil, c.want); err != nil || !bytes.Equal(got, want) {
			decoded, _ := DecodeCounts(got)
			t.Errorf("%s: AddToRow = %v (%v), want %v", c.name, decoded, err, c.want)
		}
	}
}

// AddToRow copies the untouched students' bytes: over random rows and
// additions it must write what decoding, adding and encoding them writes.
func TestAddToRowAgreesWithDecodeAndEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []StudentCounts {
		var students []StudentCounts
		for ord := range ChunkStudents * 2 {
			if rng.IntN(ChunkStudents*2) < n {
				var c analytics.Counts
				c[rng.IntN(len(c))] = rng.Int64N(1<<20) - 1<<10
				students = append(students, StudentCounts{ord, c})
			}
		}
		return students
	}
	for range 500 {
		row, add := random(rng.IntN(400)), random(rng.IntN(8))
		sum := map[int]analytics.Counts{}
		for _, s := range append(slices.Clone(row), add...) {
			c := sum[s.Ordinal]
			c.Add(&s.Counts)
			sum[s.Ordinal] = c
		}
		var want []StudentCounts
		for _, ord := range slices.Sorted(maps.Keys(sum)) {
			want = append(want, StudentCounts{ord, sum[ord]})
		}
		got, err := AddToRow(AppendCounts(nil, row), add)
		if err != nil || !bytes.Equal(got, AppendCounts(nil, want)) {
			t.Fatalf("AddToRow(%v, %v) = %x, %v; want %x", row, add, got, err, AppendCounts(nil, want))
		}
		if merged, err := AddRows(AppendCounts(nil, row), AppendCounts(nil, add)); err != nil || !bytes.Equal(merged, got) {
			t.Fatalf("AddRows(%v, %v) = %x, %v; want AddToRow's %x", row, add, merged, err, got)
		}
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
		if _, err := AddToRow(b, nil); !errors.Is(err, ErrCorruptCounts) && b != nil {
			t.Errorf("AddToRow(%x): %v, want ErrCorruptCounts", b, err)
		}
		if _, err := AddRows(good, b); !errors.Is(err, ErrCorruptCounts) {
			t.Errorf("AddRows(good, %x): %v, want ErrCorruptCounts", b, err)
		}
		if _, err := AddRows(b, good); !errors.Is(err, ErrCorruptCounts) && b != nil {
			t.Errorf("AddRows(%x, good): %v, want ErrCorruptCounts", b, err)
		}
	}
}
