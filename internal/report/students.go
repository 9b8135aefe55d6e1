package report

import (
	"context"
	"slices"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
)

// totalsPool keeps the buffers of studentReports' totals.
var totalsPool sync.Pool

// periodsPerRead is how many periods of student reports are read at
// once: few reads, and memory bounded by this many periods' counts.
const periodsPerRead = 32

// studentReports emits the students' reports period by period, in the
// order of students. Each student's counts sit at their ordinal in the
// totals the usage store sums; the place of each student's is found once.
func (e *Engine) studentReports(ctx context.Context, group analytics.Group, loc *time.Location, ep *Endpoint,
	periods []analytics.DayRange, students []analytics.Student, ordinals map[string]int, emit func(*Report) error) error {
	if len(students) == 0 {
		return nil
	}
	places := make([]int, len(students))
	for i, s := range students {
		places[i] = placeOf(ordinals, s.ID)
	}
	var zero analytics.Counts
	rep := &Report{Values: make([]int64, len(ep.Titles))}
	return e.eachPeriodSum(ctx, group, periods, len(ordinals), func(p analytics.DayRange, sum []analytics.Counts) error {
		rep.Start, rep.End = p.First.Start(loc), p.Last.End(loc)
		for i := range students {
			counts := &zero
			if n := places[i]; n >= 0 && n < len(sum) {
				counts = &sum[n]
			}
			ep.values(counts, rep.Values)
			rep.Student, rep.StudentIndex = &students[i], i
			if err := emit(rep); err != nil {
				return err
			}
		}
		return nil
	})
}

// classReports emits a class's group reports (the whole group's when
// whole) when small cells are hidden: in each period, its members' counts
// added up, and how many of them used the endpoint (had any of its
// counts), and then cells hides the figures of too few students.
func (e *Engine) classReports(ctx context.Context, groupID string, loc *time.Location, ep *Endpoint,
	periods []analytics.DayRange, members []string, whole bool, ordinals map[string]int, cells *smallCells, emit func(*Report) error) error {
	places := placesOf(ordinals, members)
	rep := &Report{Values: make([]int64, len(ep.Titles))}
	one := make([]int64, len(ep.Titles))
	return e.eachPeriodTotals(ctx, groupID, periods, len(ordinals), func(p analytics.DayRange, sum []analytics.Counts) error {
		var counts analytics.Counts
		rep.NumStudentsUsed = 0
		add := func(c *analytics.Counts) {
			counts.Add(c)
			ep.values(c, one)
			if slices.ContainsFunc(one, func(v int64) bool { return v != 0 }) {
				rep.NumStudentsUsed++
			}
		}
		if whole {
			for n := range sum {
				add(&sum[n])
			}
		}
		for _, n := range places {
			if n < len(sum) {
				add(&sum[n])
			}
		}
		rep.Start, rep.End = p.First.Start(loc), p.Last.End(loc)
		ep.values(&counts, rep.Values)
		cells.apply(ep, sum, rep)
		return emit(rep)
	})
}

// placesOf returns the places in the totals of the students of ids who
// have one: a student without usage adds nothing.
func placesOf(ordinals map[string]int, ids []string) []int {
	places := make([]int, 0, len(ids))
	for _, id := range ids {
		if n := placeOf(ordinals, id); n >= 0 {
			places = append(places, n)
		}
	}
	return places
}

// placeOf is the student's place in the totals, -1 without an ordinal.
func placeOf(ordinals map[string]int, studentID string) int {
	if n, ok := ordinals[studentID]; ok {
		return n
	}
	return -1
}

// eachPeriodTotals calls fn with each period and its students' counts, by
// ordinal, in order; the counts are reused for the next period. places is
// about how many ordinals the group has given.
func (e *Engine) eachPeriodTotals(ctx context.Context, groupID string, periods []analytics.DayRange, places int,
	fn func(p analytics.DayRange, sum []analytics.Counts) error) error {
	for batch := range slices.Chunk(periods, periodsPerRead) {
		var segs []analytics.Segment
		var ends []int // ends[j]: the end of period j's segments in segs
		for _, p := range batch {
			segs = append(segs, analytics.Segments(p)...)
			ends = append(ends, len(segs))
		}
		err := e.readTotals(ctx, groupID, segs, places, func(totals [][]analytics.Counts) error {
			first := 0
			for j, p := range batch {
				sum := addUp(totals[first:ends[j]])
				first = ends[j]
				if err := fn(p, sum); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachSegmentTotals calls fn with the index of each segment of segs (in
// order, not overlapping) and its students' counts, by ordinal.
func (e *Engine) eachSegmentTotals(ctx context.Context, groupID string, segs []analytics.Segment, places int,
	fn func(i int, sum []analytics.Counts)) error {
	for first := 0; first < len(segs); first += periodsPerRead {
		batch := segs[first:min(first+periodsPerRead, len(segs))]
		err := e.readTotals(ctx, groupID, batch, places, func(totals [][]analytics.Counts) error {
			for i := range batch {
				fn(first+i, totals[i])
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// readTotals reads the students' counts of segs into buffers of the pool,
// one a segment, and passes them to fn.
func (e *Engine) readTotals(ctx context.Context, groupID string, segs []analytics.Segment, places int,
	fn func(totals [][]analytics.Counts) error) error {
	// The totals' buffers (half a megabyte a period for 10,000 students)
	// serve answer after answer.
	var totals [][]analytics.Counts
	if kept, ok := totalsPool.Get().(*[][]analytics.Counts); ok {
		totals = *kept
	}
	defer func() { totalsPool.Put(&totals) }()
	for len(totals) < len(segs) {
		totals = append(totals, nil)
	}
	for i := range totals {
		// Room for every place at once: grown place by place as the
		// counts came (the pool is emptied by each collection), the
		// buffers were copied over and over.
		totals[i] = slices.Grow(totals[i][:0], places)
	}
	if err := e.Usage.StudentTotals(ctx, groupID, segs, totals[:len(segs)]); err != nil {
		return err
	}
	return fn(totals[:len(segs)])
}

// addUp adds the totals of a period's segments into the first, and
// returns it.
func addUp(parts [][]analytics.Counts) []analytics.Counts {
	sum := parts[0]
	for _, part := range parts[1:] {
		if n := len(sum); len(part) > n {
			sum = append(sum, part[n:]...)
			part = part[:n]
		}
		for i := range part {
			sum[i].Add(&part[i])
		}
	}
	parts[0] = sum
	return sum
}
