package rollup

import (
	"bytes"
	"slices"
	"testing"

	"groupanalytics/internal/analytics"
)

func TestSetEncoding(t *testing.T) {
	var s analytics.StudentSet
	for _, n := range []int{0, 5, 63, 64, 700, 1000} {
		s.Add(n)
	}
	s.Remove(1000)
	b := EncodeSet(s)
	if round := DecodeSet(b); round.Len() != 5 || len(b) != 8*11 {
		t.Fatalf("round trip: Len %d, %d bytes; want 5 members in 11 words (no trailing empty ones)", round.Len(), len(b))
	}
}

// UnionSets joins two stored sets as StudentSet.Union joins them, whichever
// is longer, without trailing empty words.
func TestUnionSets(t *testing.T) {
	set := func(members ...int) analytics.StudentSet {
		var s analytics.StudentSet
		for _, n := range members {
			s.Add(n)
		}
		return s
	}
	for _, c := range []struct{ a, b analytics.StudentSet }{
		{nil, nil},
		{set(1), nil},
		{nil, set(700)},
		{set(0, 63), set(64, 65)},
		{set(3, 1000), set(3, 4)},
		{set(5), set(5)},
	} {
		want := slices.Clone(c.a)
		want.Union(c.b)
		for _, args := range [][2]analytics.StudentSet{{c.a, c.b}, {c.b, c.a}} {
			if got := UnionSets(EncodeSet(args[0]), EncodeSet(args[1])); !bytes.Equal(got, EncodeSet(want)) {
				t.Errorf("UnionSets(%v, %v) = %v, want %v", args[0], args[1], DecodeSet(got), want)
			}
		}
	}
}

func TestColumns(t *testing.T) {
	if got, want := Columns("sum({c})"), "sum(sessions), sum(tutor_me), sum(test), sum(flashcard), sum(material), sum(live_lecture), sum(main)"; got != want {
		t.Errorf("Columns = %q, want %q", got, want)
	}
}
