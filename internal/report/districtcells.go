package report

import (
	"context"
	"time"

	"groupanalytics/internal/analytics"
)

// districtCells hides the figures of a district's reports that its
// schools' minCellSize hides in their own group reports, and more where
// those could be worked out from what is shown (docs/decisions.md, small
// cells).
//
// Each period and figure is decided on its own, for every school an
// answer may show at once. H are the schools whose own report hides the
// figure. One school alone in H would follow from the district's sum less
// the other schools': so the school shown with the smallest figure above
// 0 is hidden too or, when there is none, the district's sum. A sum over
// schools S is shown only when S holds none of H, or all of H while the
// district's sum is shown: then every sum shown tells of H at most their
// total, of two schools or more, and no school's own.
type districtCells struct {
	// own[s], for a school with a minCellSize, marks each figure of each
	// period (as figures holds them) its own report hides; nil for others.
	own     [][]bool
	figures [][]int64
	n       int  // figures a period: the endpoint's values, numStudentsUsed
	total   bool // the first value adds up the other values
	active  bool // some school hides something
	// Of the period decided: the schools hiding each figure, and whether
	// the district's sum hides it.
	hidden    [][]bool
	sumHidden []bool
}

// newDistrictCells reads what the own reports of the schools with a
// minCellSize hide, period by period (the periods interval iv cuts), and
// returns the rule over the schools' figures.
func (e *Engine) newDistrictCells(ctx context.Context, schools []analytics.Group, ep *Endpoint, iv analytics.Interval,
	periods []analytics.DayRange, figures [][]int64, now time.Time) (*districtCells, error) {
	n := len(ep.Titles) + 1
	own := make([][]bool, len(schools))
	first, last := analytics.OnDay(periods[0].First), analytics.OnDay(periods[len(periods)-1].Last)
	q := Query{Start: &first, End: &last, Interval: iv}
	for si, g := range schools {
		if g.MinCellSize == 0 {
			continue
		}
		own[si] = make([]bool, len(periods)*n)
		pi := 0
		err := e.Run(ctx, g, ep, q, now, func(rep *Report) error {
			for f, v := range rep.Values {
				own[si][pi*n+f] = v == Suppressed
			}
			own[si][pi*n+n-1] = rep.NumStudentsUsed == Suppressed
			pi++
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return newCellsGuard(own, figures, n, ep.total), nil
}

// newCellsGuard returns the rule over the schools' figures (n a period),
// given what each school's own rule hides (own, nil for a school that
// hides nothing).
func newCellsGuard(own [][]bool, figures [][]int64, n int, total bool) *districtCells {
	dc := &districtCells{own: own, figures: figures, n: n, total: total}
	for _, flags := range own {
		for _, h := range flags {
			dc.active = dc.active || h
		}
	}
	dc.hidden = make([][]bool, n)
	for f := range dc.hidden {
		dc.hidden[f] = make([]bool, len(own))
	}
	dc.sumHidden = make([]bool, n)
	return dc
}

// decide decides every figure of period pi.
func (dc *districtCells) decide(pi int) {
	if !dc.active {
		return
	}
	for f := range dc.n {
		for si, own := range dc.own {
			dc.hidden[f][si] = own != nil && own[pi*dc.n+f]
		}
		dc.sumHidden[f] = false
	}
	for f := range dc.n {
		if f == 0 && dc.total {
			continue // after its parts
		}
		dc.guard(pi, f)
	}
	if dc.total {
		// A school's total is hidden with any of its parts.
		for si := range dc.own {
			for f := 1; f < dc.n-1; f++ {
				dc.hidden[0][si] = dc.hidden[0][si] || dc.hidden[f][si]
			}
		}
		dc.guard(pi, 0)
		for f := 1; f < dc.n-1; f++ {
			dc.sumHidden[0] = dc.sumHidden[0] || dc.sumHidden[f]
		}
	}
}

// guard hides a second school, or the district's sum, where one school
// alone hides figure f of period pi.
func (dc *districtCells) guard(pi, f int) {
	hiding, smallest := 0, -1
	for si, h := range dc.hidden[f] {
		v := dc.figures[si][pi*dc.n+f]
		switch {
		case h:
			hiding++
		case v > 0 && (smallest < 0 || v < dc.figures[smallest][pi*dc.n+f]):
			smallest = si
		}
	}
	switch {
	case hiding != 1:
	case smallest >= 0:
		dc.hidden[f][smallest] = true
	default:
		dc.sumHidden[f] = true
	}
}

// hideSchool hides the figures of school si that the period's decision
// hides.
func (dc *districtCells) hideSchool(si int, figures []int64) {
	if !dc.active {
		return
	}
	for f := range figures {
		if dc.hidden[f][si] {
			figures[f] = Suppressed
		}
	}
}

// hideSum hides the figures of the sum over the schools at places inSum
// that would tell more of the schools hiding them than their total.
func (dc *districtCells) hideSum(inSum []int, figures []int64) {
	if !dc.active {
		return
	}
	for f := range figures {
		hiding, held := 0, 0
		for _, h := range dc.hidden[f] {
			if h {
				hiding++
			}
		}
		for _, si := range inSum {
			if dc.hidden[f][si] {
				held++
			}
		}
		if held > 0 && (held < hiding || dc.sumHidden[f]) {
			figures[f] = Suppressed
		}
	}
	if dc.total {
		for f := 1; f < dc.n-1; f++ {
			if figures[f] == Suppressed {
				figures[0] = Suppressed
			}
		}
	}
}
