package report

import (
	"context"
	"fmt"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
)

// A district's reports are made of its schools' group rollups, read
// together (UsageStore.GroupsRollups) and kept (schoolperiods.go): the
// district's sums them, school by school, each school's days cut in its
// own zone, so that its figures are those the schools' own reports give,
// added up. A student counts in
// each school they are enrolled in: ids are a school's own
// (docs/decisions.md, districts).

// DistrictQuery is a district's report request: Query's dates and
// interval, one report per school (PerSchool) or their sum, of the
// schools of SchoolIDs (every one of the district's when none).
type DistrictQuery struct {
	Query
	PerSchool bool
	SchoolIDs []string
}

// RunDistrict computes the reports dq asks of the district at time now and
// passes them to emit in response order, as Run does. Schools without a
// valid plan are left out: DistrictAccess.Asked names them.
func (e *Engine) RunDistrict(ctx context.Context, da *analytics.DistrictAccess, ep *Endpoint, dq DistrictQuery, now time.Time, emit func(*Report) error) error {
	asked, _, err := da.Asked(dq.SchoolIDs)
	if err != nil {
		return err
	}
	loc, err := da.District.Location()
	if err != nil {
		return fmt.Errorf("report: district %s: %w", da.District.ID, err)
	}
	r, err := districtRange(asked, dq.Query, now, loc)
	if err != nil {
		return err
	}
	per, each := 1, ""
	if dq.PerSchool {
		per, each = len(asked), "schools"
	}
	if err := e.checkSize(r, dq.Interval, per, each); err != nil {
		return err
	}
	periods := r.Periods(dq.Interval)
	// With small cells, what each school shows is decided on every school
	// that any of the district's answers may show, whichever were asked.
	schools := asked
	if slices.ContainsFunc(da.Schools, func(g analytics.Group) bool { return g.MinCellSize > 0 }) {
		schools = shownOver(da.Schools, asked, r.First, now)
	}
	figures, err := e.schoolFigures(ctx, schools, ep, periods)
	if err != nil {
		return err
	}
	cells, err := e.newDistrictCells(ctx, schools, ep, dq.Interval, periods, figures, now)
	if err != nil {
		return err
	}
	return emitDistrict(asked, schools, loc, ep, periods, figures, cells, dq.PerSchool, emit)
}

// districtRange is the range q asks of the schools at time now, its days
// told in the district's zone loc: by default from the later of
// DefaultStart and the last of the schools' first days kept, to today. A
// range reaching before a school's first day kept is refused, naming it,
// as the school's own reports refuse it.
func districtRange(schools []analytics.Group, q Query, now time.Time, loc *time.Location) (analytics.DayRange, error) {
	r := q.Range(now, loc, 0)
	for _, g := range schools {
		gloc, err := g.Location()
		if err != nil {
			return r, fmt.Errorf("report: group %s: %w", g.ID, err)
		}
		first := g.FirstKeptDay(now, gloc)
		if q.Start == nil {
			r.First = max(r.First, first)
		}
		if r.First < first {
			return r, analytics.Errorf(analytics.Invalid, "Invalid startDate: %s is before %s, the first day school %q keeps (its usage is kept %s)",
				r.First, first, g.ID, g.Retention)
		}
	}
	if r.First > r.Last {
		return r, analytics.Errorf(analytics.Invalid, "Invalid range: startDate %s is after endDate %s", r.First, r.Last)
	}
	return r, nil
}

// shownOver returns the schools whose figures an answer of the range from
// first may show: those asked, and every other of planned that keeps the
// days from first (the others' answers of the range are refused).
func shownOver(planned, asked []analytics.Group, first analytics.Day, now time.Time) []analytics.Group {
	schools := slices.Clone(asked)
	for _, g := range planned {
		if slices.ContainsFunc(asked, func(a analytics.Group) bool { return a.ID == g.ID }) {
			continue
		}
		if loc, err := g.Location(); err == nil && g.FirstKeptDay(now, loc) <= first {
			schools = append(schools, g)
		}
	}
	return schools
}

// schoolFigures returns each school's figures: per period, the
// endpoint's values, then numStudentsUsed.
func (e *Engine) schoolFigures(ctx context.Context, schools []analytics.Group, ep *Endpoint, periods []analytics.DayRange) ([][]int64, error) {
	kept, err := e.schoolPeriods(ctx, schools, periods)
	if err != nil {
		return nil, err
	}
	n := len(ep.Titles) + 1
	figures := make([][]int64, len(schools))
	for si := range schools {
		figures[si] = make([]int64, len(periods)*n)
		for pi := range periods {
			out := figures[si][pi*n : (pi+1)*n]
			ep.values(&kept[si][pi].counts, out[:n-1])
			out[n-1] = int64(kept[si][pi].used[ep.used])
		}
	}
	return figures, nil
}

// emitDistrict passes the reports asked to emit: per period, each school
// asked (in name order) or the sum of them, with the figures cells hides.
func emitDistrict(asked, schools []analytics.Group, loc *time.Location, ep *Endpoint, periods []analytics.DayRange,
	figures [][]int64, cells *districtCells, perSchool bool, emit func(*Report) error) error {
	index := make(map[string]int, len(schools))
	for i, g := range schools {
		index[g.ID] = i
	}
	inSum := make([]int, len(asked))
	for i, g := range asked {
		inSum[i] = index[g.ID]
	}
	n := len(ep.Titles) + 1
	rep := &Report{Values: make([]int64, len(ep.Titles))}
	sum := make([]int64, n)
	for pi, p := range periods {
		rep.Start, rep.End = p.First.Start(loc), p.Last.End(loc)
		cells.decide(pi)
		if perSchool {
			for _, si := range inSum {
				rep.School = &schools[si]
				copy(sum, figures[si][pi*n:(pi+1)*n])
				cells.hideSchool(si, sum)
				if err := emitFigures(rep, sum, emit); err != nil {
					return err
				}
			}
			continue
		}
		clear(sum)
		for _, si := range inSum {
			for f, v := range figures[si][pi*n : (pi+1)*n] {
				sum[f] += v
			}
		}
		cells.hideSum(inSum, sum)
		if err := emitFigures(rep, sum, emit); err != nil {
			return err
		}
	}
	return nil
}

// emitFigures passes rep to emit with figures: the values, then
// numStudentsUsed.
func emitFigures(rep *Report, figures []int64, emit func(*Report) error) error {
	n := len(figures) - 1
	copy(rep.Values, figures[:n])
	rep.NumStudentsUsed = int(figures[n])
	return emit(rep)
}
