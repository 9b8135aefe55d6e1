package report

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"groupanalytics/internal/analytics"
)

// BenchmarkSmallCellsDistrict decides a week of a school of 3,000
// students in 300 classes of about 30 (each student in three), half of
// them active, with a minCellSize of 10.
func BenchmarkSmallCellsDistrict(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const students, classes = 3000, 300
	cs := make([]analytics.Class, classes)
	for i := range cs {
		cs[i].ID = fmt.Sprintf("c%03d", i)
	}
	ordinals := map[string]int{}
	sum := make([]analytics.Counts, students)
	for s := range students {
		id := fmt.Sprintf("s%04d", s)
		ordinals[id] = s
		for k := range 3 {
			c := (s/30 + k*97*(1+s%7)) % classes
			cs[c].Members = append(cs[c].Members, id)
		}
		if rng.IntN(2) == 0 {
			for m := range sum[s] {
				if rng.IntN(2) == 0 {
					sum[s][m] = int64(1 + rng.IntN(5))
				}
			}
		}
	}
	for i := range cs {
		cs[i].Members = dedupe(cs[i].Members)
	}
	sc := newSmallCells(10, cs, nil, []string{"c007"}, false, ordinals, len(Chat.Titles), true)
	rep := &Report{Values: make([]int64, len(Chat.Titles))}
	b.ResetTimer()
	for range b.N {
		sc.apply(Chat, sum, rep)
	}
}

func dedupe(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
