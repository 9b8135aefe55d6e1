package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"groupanalytics/internal/analytics"
)

// TestSmallCellsCannotBeWorkedOut: over random schools (overlapping
// classes, students in none, teachers' keys of several classes) and random
// usage, what each report shows of a period: no figure that 1 to
// minCellSize-1 students make, nor one that sums and differences of those
// shown (the group's, every class's, every key's, a chat total beside its
// parts) give; and of each report shown, the students in no report shown
// inside it are none or at least minCellSize of those making the figure.
func TestSmallCellsCannotBeWorkedOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 29))
	hiddenFigures := 0
	for round := range 600 {
		min := 2 + rng.IntN(4)
		students := 3 + rng.IntN(10)
		var classes []analytics.Class
		for c := range 1 + rng.IntN(6) {
			class := analytics.Class{ID: fmt.Sprintf("c%d", c)}
			for s := range students {
				if rng.IntN(3) > 0 {
					class.Members = append(class.Members, fmt.Sprintf("s%02d", s))
				}
			}
			classes = append(classes, class)
		}
		if len(classes) > 1 && rng.IntN(2) == 0 { // a class inside another
			inner := &classes[len(classes)-1]
			inner.Members = nil
			for _, id := range classes[0].Members {
				if rng.IntN(4) > 0 {
					inner.Members = append(inner.Members, id)
				}
			}
		}
		ordinals := map[string]int{}
		sum := make([]analytics.Counts, students)
		all := make([]string, students)
		for s := range students {
			all[s] = fmt.Sprintf("s%02d", s)
			ordinals[all[s]] = s
			for m := range sum[s] {
				if rng.IntN(3) == 0 {
					sum[s][m] = int64(1 + rng.IntN(4))
				}
			}
		}
		// The reports: the group's, each class's, and those of some keys
		// of several classes.
		reports := [][]string{nil}
		for _, c := range classes {
			reports = append(reports, []string{c.ID})
		}
		var keys [][]string
		for range rng.IntN(3) {
			var key []string
			for _, c := range classes {
				if rng.IntN(2) == 0 {
					key = append(key, c.ID)
				}
			}
			reports = append(reports, key)
			keys = append(keys, key)
		}
		for _, ep := range []*Endpoint{LiveLecture, Chat} {
			known := newPublished(students, len(ep.Titles))
			var hidden []figure
			shownSets := make([][][]string, len(ep.Titles)+1)
			for i, asked := range reports {
				sc := newSmallCells(min, classes, keys, asked, i == 0, ordinals, len(ep.Titles), ep.total)
				members := membersOf(classes, asked)
				if i == 0 {
					members = all
				}
				want := exactFigures(ep, sum, ordinals, members)
				rep := &Report{Values: slices.Clone(want[:len(ep.Titles)]), NumStudentsUsed: int(want[len(ep.Titles)])}
				sc.apply(ep, sum, rep)
				if i == 0 { // the group's report is decided the same without its classes
					alone := &Report{Values: slices.Clone(want[:len(ep.Titles)]), NumStudentsUsed: int(want[len(ep.Titles)])}
					newSmallCells(min, nil, nil, nil, true, ordinals, len(ep.Titles), ep.total).apply(ep, sum, alone)
					if !slices.Equal(alone.Values, rep.Values) || alone.NumStudentsUsed != rep.NumStudentsUsed {
						t.Fatalf("round %d %s: the group's report %+v with its classes, %+v without", round, ep.Name, rep, alone)
					}
				}
				for m := range want {
					got := int64(rep.NumStudentsUsed)
					if m < len(ep.Titles) {
						got = rep.Values[m]
					}
					switch n := makers(ep, sum, ordinals, members, m); {
					case got == Suppressed:
						hiddenFigures++
						if n > 0 && n < min {
							hidden = append(hidden, figure{members, m})
						}
					case got != want[m]:
						t.Fatalf("round %d %s %v figure %d: shown %d, is %d", round, ep.Name, asked, m, got, want[m])
					case n > 0 && n < min:
						t.Fatalf("round %d %s %v figure %d: shown, of %d students", round, ep.Name, asked, m, n)
					default:
						known.add(ep, members, m)
						shownSets[m] = append(shownSets[m], members)
					}
				}
				if ep.total && rep.Values[0] != Suppressed && slices.Contains(rep.Values[1:], Suppressed) {
					t.Fatalf("round %d %v: a total is shown with a part hidden", round, asked)
				}
			}
			if f, ok := known.givesAny(ep, sum, hidden); ok {
				t.Fatalf("round %d, %s, minCellSize %d, classes %v, keys %v: hidden figure %d of %v can be worked out", round, ep.Name, min, classes, keys, f.m, f.students)
			}
			for m, sets := range shownSets {
				for _, outer := range sets {
					var covered []string
					for _, inner := range sets {
						if len(inner) < len(outer) && isSubset(inner, outer) {
							covered = append(covered, inner...)
						}
					}
					pool := slices.DeleteFunc(slices.Clone(outer), func(id string) bool { return slices.Contains(covered, id) })
					if n := makers(ep, sum, ordinals, pool, m); covered != nil && n > 0 && n < min {
						t.Fatalf("round %d, %s: of %v shown, %v are in nothing shown inside it, %d making figure %d", round, ep.Name, outer, pool, n, m)
					}
				}
			}
		}
	}
	if hiddenFigures == 0 {
		t.Fatal("no figure was ever hidden: the test tests nothing")
	}
	t.Logf("%d figures hidden", hiddenFigures)
}

// figure is a figure of a report: its students, and which (a metric, or
// numStudentsUsed after them).
type figure struct {
	students []string
	m        int
}

func isSubset(small, big []string) bool {
	return !slices.ContainsFunc(small, func(id string) bool { return !slices.Contains(big, id) })
}

// makers counts the students who make figure m.
func makers(ep *Endpoint, sum []analytics.Counts, ordinals map[string]int, students []string, m int) int {
	n := 0
	one := make([]int64, len(ep.Titles))
	for _, id := range students {
		ep.values(&sum[ordinals[id]], one)
		if m < len(one) && one[m] != 0 || m == len(one) && slices.ContainsFunc(one, func(v int64) bool { return v != 0 }) {
			n++
		}
	}
	return n
}

func membersOf(classes []analytics.Class, asked []string) []string {
	var members []string
	for _, c := range classes {
		if slices.Contains(asked, c.ID) {
			members = append(members, c.Members...)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(members)))
}

// exactFigures are the endpoint's values over the members, then their
// numStudentsUsed, by brute force.
func exactFigures(ep *Endpoint, sum []analytics.Counts, ordinals map[string]int, members []string) []int64 {
	figures := make([]int64, len(ep.Titles)+1)
	one := make([]int64, len(ep.Titles))
	for _, id := range members {
		ep.values(&sum[ordinals[id]], one)
		used := false
		for m, v := range one {
			figures[m] += v
			used = used || v != 0
		}
		if used {
			figures[len(one)]++
		}
	}
	return figures
}

// published is what a reader of the reports knows, as linear equations:
// one row per figure shown, over one unknown per student and measure (the
// endpoint's metrics other than a total, then whether the student used
// the endpoint).
type published struct {
	students, measures int
	rows               [][]float64
}

func newPublished(students, titles int) *published {
	return &published{students: students, measures: titles + 1}
}

// unknown is the column of a student's measure m; a total is its parts.
func (p *published) unknowns(ep *Endpoint, student, m int) []int {
	if ep.total && m == 0 {
		var cols []int
		for part := 1; part < len(ep.Titles); part++ {
			cols = append(cols, part*p.students+student)
		}
		return cols
	}
	return []int{m*p.students + student}
}

// add records figure m of the students.
func (p *published) add(ep *Endpoint, students []string, m int) {
	p.rows = append(p.rows, p.row(ep, students, m))
}

func (p *published) row(ep *Endpoint, students []string, m int) []float64 {
	row := make([]float64, p.students*p.measures)
	for _, id := range students {
		var s int
		fmt.Sscanf(id, "s%d", &s)
		for _, col := range p.unknowns(ep, s, m) {
			row[col]++
		}
	}
	return row
}

// givesAny returns a figure of those that sums and differences of the
// rows give. A student whose count is 0 adds 0 to any sum, so the columns
// of such counts are left out: a sum that covers them too still gives the
// figure.
func (p *published) givesAny(ep *Endpoint, sum []analytics.Counts, figures []figure) (figure, bool) {
	zero := make([]bool, p.students*p.measures)
	one := make([]int64, len(ep.Titles))
	for s := range p.students {
		ep.values(&sum[s], one)
		for m := range p.measures {
			if ep.total && m == 0 {
				continue // the total has no unknowns of its own
			}
			made := m == len(one) && slices.ContainsFunc(one, func(v int64) bool { return v != 0 }) || m < len(one) && one[m] != 0
			zero[m*p.students+s] = !made
		}
	}
	var rows [][]float64
	for _, r := range p.rows {
		rows = append(rows, without(r, zero))
	}
	basis := echelon(rows)
	for _, f := range figures {
		v := without(p.row(ep, f.students, f.m), zero)
		if slices.ContainsFunc(v, func(x float64) bool { return x != 0 }) && inSpan(basis, v) {
			return f, true
		}
	}
	return figure{}, false
}

func pick01(makers []int, set int) []int {
	var picked []int
	for i, s := range makers {
		if set&(1<<i) != 0 {
			picked = append(picked, s)
		}
	}
	return picked
}

// echelon returns the rows' span in reduced row echelon form, each row
// with its pivot column.
func echelon(rows [][]float64) (basis []pivotRow) {
	for _, r := range rows {
		r = reduce(basis, r)
		col := slices.IndexFunc(r, func(x float64) bool { return math.Abs(x) > 1e-9 })
		if col < 0 {
			continue
		}
		f := r[col]
		for i := range r {
			r[i] /= f
		}
		for j := range basis {
			if g := basis[j].row[col]; g != 0 {
				for i := range r {
					basis[j].row[i] -= g * r[i]
				}
			}
		}
		basis = append(basis, pivotRow{col, r})
	}
	return basis
}

type pivotRow struct {
	col int
	row []float64
}

// reduce returns v less its parts along the basis.
func reduce(basis []pivotRow, v []float64) []float64 {
	v = slices.Clone(v)
	for _, b := range basis {
		if f := v[b.col]; f != 0 {
			for i := range v {
				v[i] -= f * b.row[i]
			}
		}
	}
	return v
}

// inSpan reports whether v, not 0, is a combination of the basis.
func inSpan(basis []pivotRow, v []float64) bool {
	return !slices.ContainsFunc(reduce(basis, v), func(x float64) bool { return math.Abs(x) > 1e-9 })
}

func without(v []float64, drop []bool) []float64 {
	var out []float64
	for i, x := range v {
		if !drop[i] {
			out = append(out, x)
		}
	}
	return out
}
