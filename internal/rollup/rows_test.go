package rollup

import (
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

func TestColumns(t *testing.T) {
	if got, want := Columns("sum({c})"), "sum(sessions), sum(tutor_me), sum(test), sum(flashcard), sum(material), sum(live_lecture), sum(main)"; got != want {
		t.Errorf("Columns = %q, want %q", got, want)
	}
}
