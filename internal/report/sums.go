package report

import (
	"context"
	"encoding/binary"
	"slices"
	"unsafe"

	"groupanalytics/internal/analytics"
)

// A student report's period is its students' counts added up over the
// period's rows of counts: for a year of 10,000 students, some 1,600 rows
// read and decoded, every time. The engine keeps each period's sum, found
// again under what the school's rollup rows of the period's days and
// months were when it was made (their counts exactly, their students
// hashed, as classcounts.go explains): while those rows are unchanged, so
// are the students' counts. A report then reads the school's rows, a few
// dozen, and adds up again only the periods whose rows changed (as events
// arrive, those holding today).
//
// The group's zone and retention are in the key, for what else rewrites
// rows (classcounts.go). The sums are by ordinal, which a student keeps
// until erased and is never given again: a student numbered since has no
// place in a sum made before, and no counts in it either, or its rows
// would have changed.

// maxKeptSums bounds the bytes of the sums an engine keeps: a year of
// 10,000 students takes 0.6 MB, their months 6.7 MB.
const maxKeptSums = 32 << 20

// countsCost is what a student's place in a sum costs.
const countsCost = int(unsafe.Sizeof(analytics.Counts{}))

// DefaultKeepSumsFrom is the fewest students whose sums an engine keeps:
// a smaller group's counts are a row or a few per period, about what the
// school's rows that a kept sum is checked against cost to read.
const DefaultKeepSumsFrom = 1024

// eachPeriodSum calls fn with each period and its students' counts, by
// ordinal, in order, as eachPeriodTotals does, from the sums kept where
// the period's rows are unchanged. fn must not change the counts.
func (e *Engine) eachPeriodSum(ctx context.Context, group analytics.Group, periods []analytics.DayRange, places int,
	fn func(p analytics.DayRange, sum []analytics.Counts) error) error {
	if places < e.KeepSumsFrom {
		return e.eachPeriodTotals(ctx, group.ID, periods, places, fn)
	}
	var segs []analytics.Segment
	for _, p := range periods {
		segs = append(segs, analytics.Segments(p)...)
	}
	// The rows first, then the counts, which are at least as new: a sum
	// is never kept under rows newer than it.
	rollups, err := e.fetchRollups(ctx, group.ID, segs)
	if err != nil {
		return err
	}
	prefix := group.ID + "\x00" + rewrites(group) + "\x00"
	// Period by period, a read's worth at a time, so that the answer
	// streams as it did.
	for batch := range slices.Chunk(periods, periodsPerRead) {
		keys, versions := make([]string, len(batch)), make([]string, len(batch))
		sums := make([][]analytics.Counts, len(batch))
		var stale []analytics.DayRange
		var staleAt []int // of batch
		for i, p := range batch {
			keys[i] = prefix + p.First.String() + p.Last.String()
			versions[i] = rowsVersion(rollups, p)
			if sum, ok := e.sums.Get(keys[i], versions[i]); ok {
				sums[i] = sum
				continue
			}
			stale = append(stale, p)
			staleAt = append(staleAt, i)
		}
		j := 0
		err = e.eachPeriodTotals(ctx, group.ID, stale, places, func(_ analytics.DayRange, sum []analytics.Counts) error {
			i := staleAt[j]
			j++
			sums[i] = slices.Clone(sum)
			e.sums.Put(keys[i], versions[i], sums[i], len(sums[i])*countsCost+len(keys[i])+len(versions[i]))
			return nil
		})
		if err != nil {
			return err
		}
		for i, p := range batch {
			if err := fn(p, sums[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowsVersion is what the group's rows of p's days and months are: each
// present row's span, key and counts, and its students' hash.
func rowsVersion(rollups rollupIndex, p analytics.DayRange) string {
	var b []byte
	for _, seg := range analytics.Segments(p) {
		for key := seg.Keys.First; key <= seg.Keys.Last; key = seg.Span.Next(key) {
			r := rollups[seg.Span][key]
			if r == nil {
				continue
			}
			b = append(b, byte(seg.Span))
			b = binary.AppendVarint(b, int64(key))
			for _, v := range r.Counts {
				b = binary.AppendVarint(b, v)
			}
			b = binary.LittleEndian.AppendUint64(b, usersHash(r))
		}
	}
	return string(b)
}
