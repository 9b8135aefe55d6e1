package report

import (
	"context"
	"math"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
)

// Adoption is how many of a school's students (or a district's) used the
// service over a range: those on its roster, those who used each
// endpoint and either, and the seats its plans cover (0: they do not
// say). A figure its small-cells rule hides is Suppressed.
type Adoption struct {
	School                                *analytics.Group // nil: the total
	Enrolled                              int
	UsedLiveLecture, UsedChat, UsedEither int
	Seats                                 int
}

// Share is of / in to four places, as the answers give it (a share
// used, or of seats); false when of is hidden or in is not above 0.
func Share(of, in int) (float64, bool) {
	if of == Suppressed || in <= 0 {
		return 0, false
	}
	return math.Round(float64(of)/float64(in)*10000) / 10000, true
}

// The used figures, in the order the small-cells rule holds them.
const (
	usedLiveLecture = iota
	usedChat
	usedEither
	usedFigures
)

// AdoptionReport is the adoption of the schools asked, each and together,
// over the days Start to End.
type AdoptionReport struct {
	Start, End time.Time
	Total      Adoption
	Schools    []Adoption
}

// Adoption computes the adoption of the schools asked (planned is every
// school the key's answers may show, for the small-cells rule) over the
// range q asks at time now, its bounds told in loc. The total's seats are
// the schools' added up when every school's plan says, else 0.
func (e *Engine) Adoption(ctx context.Context, asked, planned []analytics.Group, q Query, now time.Time, loc *time.Location) (AdoptionReport, error) {
	r, err := districtRange(asked, q, now, loc)
	if err != nil {
		return AdoptionReport{}, err
	}
	schools := asked
	if slices.ContainsFunc(planned, func(g analytics.Group) bool { return g.MinCellSize > 0 }) {
		schools = shownOver(planned, asked, r.First, now)
	}
	ids := make([]string, len(schools))
	for i, g := range schools {
		ids[i] = g.ID
	}
	// Settled first: the students its events enrol are then on the roster.
	figures, err := e.usedFigures(ctx, schools, r)
	if err != nil {
		return AdoptionReport{}, err
	}
	sizes, err := e.Directory.Enrolment(ctx, ids, now)
	if err != nil {
		return AdoptionReport{}, err
	}
	own := make([][]bool, len(schools))
	for si, g := range schools {
		if g.MinCellSize > 0 {
			own[si] = make([]bool, usedFigures)
			for f, v := range figures[si] {
				own[si][f] = v > 0 && v < int64(g.MinCellSize)
			}
		}
	}
	cells := newCellsGuard(own, figures, usedFigures, false)
	cells.decide(0)
	rep := AdoptionReport{Start: r.First.Start(loc), End: r.Last.End(loc)}
	inSum := make([]int, len(asked))
	sum := make([]int64, usedFigures)
	allSeats := true
	for i := range asked {
		si := slices.Index(ids, asked[i].ID)
		inSum[i] = si
		a := Adoption{School: &asked[i], Enrolled: sizes[asked[i].ID].Students, Seats: sizes[asked[i].ID].Seats}
		for f, v := range figures[si] {
			sum[f] += v
		}
		shown := slices.Clone(figures[si])
		cells.hideSchool(si, shown)
		a.UsedLiveLecture, a.UsedChat, a.UsedEither = int(shown[usedLiveLecture]), int(shown[usedChat]), int(shown[usedEither])
		rep.Total.Enrolled += a.Enrolled
		rep.Total.Seats += a.Seats
		allSeats = allSeats && a.Seats > 0
		rep.Schools = append(rep.Schools, a)
	}
	if !allSeats {
		rep.Total.Seats = 0
	}
	cells.hideSum(inSum, sum)
	rep.Total.UsedLiveLecture, rep.Total.UsedChat, rep.Total.UsedEither = int(sum[usedLiveLecture]), int(sum[usedChat]), int(sum[usedEither])
	return rep, nil
}

// usedFigures returns, for each of the schools, its students who used
// live lectures, chat and either over range r.
func (e *Engine) usedFigures(ctx context.Context, schools []analytics.Group, r analytics.DayRange) ([][]int64, error) {
	kept, err := e.schoolPeriods(ctx, schools, []analytics.DayRange{r})
	if err != nil {
		return nil, err
	}
	figures := make([][]int64, len(schools))
	for si := range schools {
		figures[si] = make([]int64, usedFigures)
		for f, v := range kept[si][0].used {
			figures[si][f] = int64(v)
		}
	}
	return figures, nil
}
