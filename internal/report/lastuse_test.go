package report

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBySince: the counting sort and the sort it falls back to for days
// too many to count both order students as a stable sort by days since,
// most first, never before all.
func TestBySince(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for _, tt := range []struct {
		name string
		most int
	}{{"few days, counted", 40}, {"decades, sorted", 700_000}} {
		students := make([]StudentUse, 300)
		for i := range students {
			students[i].ID = fmt.Sprintf("s%03d", i)
			students[i].DaysSince = rng.IntN(tt.most+2) - 1 // -1: never
		}
		students[0].DaysSince = tt.most
		want := slices.Clone(students)
		slices.SortStableFunc(want, func(a, b StudentUse) int {
			key := func(u StudentUse) int {
				if u.DaysSince < 0 {
					return 1 << 40
				}
				return u.DaysSince
			}
			return cmp.Compare(key(b), key(a))
		})
		if got := bySince(students); !slices.EqualFunc(got, want, func(a, b StudentUse) bool { return a.ID == b.ID }) {
			t.Errorf("%s: the order differs from a stable sort", tt.name)
		}
	}
}
