package report

import (
	"maps"
	"slices"
	"strconv"

	"groupanalytics/internal/analytics"
)

// Suppressed stands for a figure of a group report that its group's
// minCellSize hides: in Report.Values and Report.NumStudentsUsed.
const Suppressed = -1

// smallCells hides the figures of group reports (the group's, a class's,
// a teacher's key's classes') that 1 to min-1 students make up, and more
// figures where those could be worked out from what is shown
// (docs/decisions.md, small cells).
//
// Each period and figure (a metric, or numStudentsUsed) is decided on its
// own, for every report of the group at once, so that what one report
// shows cannot undo what another hides. Reports are sums over atoms: the
// students in the same classes (those in none are one atom); only those
// making the figure count. The rules:
//   - a report of 1 to min-1 students making the figure is hidden;
//   - the pool of a report shown (its students in no report shown inside
//     it: the group less its classes, a key's classes less one, a class
//     less a class within it) holds none or at least min of them, else the
//     smallest report inside it is hidden too;
//   - a report hidden for its few students holds such students in no
//     report shown but the group's, else the reports holding those covered
//     by the fewest are hidden too. No sum and difference of the reports
//     shown gives it then: it would need the group's once for those
//     students, so the group's would be shown, and then, its pool holding
//     such students outside the report (by the rule before), not at all.
//
// A chat report's Total Messages is shown only with all its parts, so it
// tells nothing they do not.
type smallCells struct {
	min    int
	atomOf []int32 // the atom of the student at each place of the totals
	atoms  int
	// reports are the atoms of each report: 0 the group's (every atom),
	// then the classes', then teachers' keys'.
	reports  [][]int32
	inReport [][]int32 // the reports other than the group's holding each atom
	inside   [][]int32 // the reports strictly inside each report
	asked    int       // the report asked for
	total    bool      // the endpoint's first value adds up the others

	made    [][]int32 // made[m][a]: the students of atom a with figure m not 0
	hidden  []bool    // per report, for the figure being decided
	makers  []int     // per report: its students making the figure
	covered []int32   // per atom: the reports shown but the group's holding it
}

// newSmallCells prepares the rule for a group's reports: the group's, its
// classes', those of its teachers' keys of several classes (keys, each a
// list of class ids), and the one asked for (a class's, or the union of
// the classes asked, or the group's when whole), with the students'
// places in the totals. titles is how many metrics the endpoint has;
// numStudentsUsed comes after them.
func newSmallCells(min int, classes []analytics.Class, keys [][]string, asked []string, whole bool, ordinals map[string]int, titles int, total bool) *smallCells {
	sc := &smallCells{min: min, total: total, atoms: 1}
	atomOfStudent := sc.numberAtoms(classes, ordinals)
	sc.addReports(classes, keys, asked, whole, atomOfStudent)
	sc.indexReports()
	sc.made = make([][]int32, titles+1)
	for m := range sc.made {
		sc.made[m] = make([]int32, sc.atoms)
	}
	sc.hidden = make([]bool, len(sc.reports))
	sc.makers = make([]int, len(sc.reports))
	sc.covered = make([]int32, sc.atoms)
	return sc
}

// numberAtoms numbers the atoms, the sets of students in the same
// classes, in the order of their first student's id, so that the same
// classes give the same choices; it places each student's atom by their
// ordinal (atomOf) and returns it by their id.
func (sc *smallCells) numberAtoms(classes []analytics.Class, ordinals map[string]int) map[string]int32 {
	inClasses := map[string][]int{}
	for i, c := range classes {
		for _, id := range c.Members {
			inClasses[id] = append(inClasses[id], i)
		}
	}
	atomOfKey := map[string]int32{}
	atomOfStudent := make(map[string]int32, len(inClasses))
	var key []byte
	for _, id := range slices.Sorted(maps.Keys(inClasses)) {
		key = key[:0]
		for _, i := range inClasses[id] {
			key = strconv.AppendInt(append(key, ','), int64(i), 10)
		}
		a, ok := atomOfKey[string(key)]
		if !ok {
			a = int32(sc.atoms)
			atomOfKey[string(key)] = a
			sc.atoms++
		}
		atomOfStudent[id] = a
	}
	for id, place := range ordinals {
		for len(sc.atomOf) <= place {
			sc.atomOf = append(sc.atomOf, 0)
		}
		sc.atomOf[place] = atomOfStudent[id]
	}
	return atomOfStudent
}

// addReports lists the reports whose figures are decided together, each
// set of atoms once: the school's, each class's, each teacher's key's
// classes together, and the one asked for when it is not the school's.
func (sc *smallCells) addReports(classes []analytics.Class, keys [][]string, asked []string, whole bool, atomOfStudent map[string]int32) {
	atomsOf := func(classIDs []string) []int32 {
		var atoms []int32
		for _, c := range classes {
			if slices.Contains(classIDs, c.ID) {
				for _, id := range c.Members {
					atoms = append(atoms, atomOfStudent[id])
				}
			}
		}
		return slices.Compact(slices.Sorted(slices.Values(atoms)))
	}
	index := map[string]int{} // a report's atoms, as a key: the first report of them
	var key []byte
	addReport := func(atoms []int32) int {
		key = key[:0]
		for _, a := range atoms {
			key = strconv.AppendInt(append(key, ','), int64(a), 10)
		}
		k := string(key)
		if i, ok := index[k]; ok {
			return i
		}
		index[k] = len(sc.reports)
		sc.reports = append(sc.reports, atoms)
		return len(sc.reports) - 1
	}
	all := make([]int32, sc.atoms)
	for a := range all {
		all[a] = int32(a)
	}
	addReport(all)
	for _, c := range classes {
		addReport(atomsOf([]string{c.ID}))
	}
	for _, k := range keys {
		addReport(atomsOf(k))
	}
	if !whole {
		sc.asked = addReport(atomsOf(asked))
	}
}

// indexReports notes the reports each atom is in, and the reports inside
// each report.
func (sc *smallCells) indexReports() {
	sc.inReport = make([][]int32, sc.atoms)
	for r, atoms := range sc.reports[1:] {
		for _, a := range atoms {
			sc.inReport[a] = append(sc.inReport[a], int32(r+1))
		}
	}
	sc.inside = make([][]int32, len(sc.reports))
	for outer, big := range sc.reports {
		for inner, small := range sc.reports {
			if inner != outer && len(small) < len(big) && subset(small, big) {
				sc.inside[outer] = append(sc.inside[outer], int32(inner))
			}
		}
	}
}

// subset reports whether the sorted atoms of small are all in big's.
func subset(small, big []int32) bool {
	i := 0
	for _, a := range small {
		for i < len(big) && big[i] < a {
			i++
		}
		if i == len(big) || big[i] != a {
			return false
		}
	}
	return true
}

// apply replaces the figures of rep (the report asked for, of the period
// of sum, the students' counts by place) that the rule hides with
// Suppressed.
func (sc *smallCells) apply(ep *Endpoint, sum []analytics.Counts, rep *Report) {
	for m := range sc.made {
		clear(sc.made[m])
	}
	users := len(sc.made) - 1
	one := make([]int64, users)
	for place := range sum {
		ep.values(&sum[place], one)
		a := int32(0)
		if place < len(sc.atomOf) {
			a = sc.atomOf[place]
		}
		used := false
		for m, v := range one {
			if v != 0 {
				sc.made[m][a]++
				used = true
			}
		}
		if used {
			sc.made[users][a]++
		}
	}
	first := 0
	if sc.total {
		first = 1 // the total goes with its parts
	}
	for m := first; m <= users; m++ {
		sc.decide(m)
		if !sc.hidden[sc.asked] {
			continue
		}
		if m == users {
			rep.NumStudentsUsed = Suppressed
		} else {
			rep.Values[m] = Suppressed
		}
	}
	if sc.total && slices.Contains(rep.Values[1:], Suppressed) {
		rep.Values[0] = Suppressed
	}
}

// decide marks the reports whose figure m is hidden.
func (sc *smallCells) decide(m int) {
	made := sc.made[m]
	for r, atoms := range sc.reports {
		n := 0
		for _, a := range atoms {
			n += int(made[a])
		}
		sc.makers[r] = n
		sc.hidden[r] = sc.fewMakers(r)
	}
	for sc.guardPools(made) || sc.guardTargets(made) {
	}
}

// guardPools hides, in each report shown with reports shown inside it
// whose pool (its students in none of them) holds 1 to min-1 students
// making the figure, the smallest of those until the pool holds none or
// enough, and reports whether it hid any.
func (sc *smallCells) guardPools(made []int32) (hid bool) {
	for outer, inside := range sc.inside {
		if sc.hidden[outer] || len(inside) == 0 {
			continue
		}
		clear(sc.covered)
		for _, r := range inside {
			if !sc.hidden[r] {
				for _, a := range sc.reports[r] {
					sc.covered[a]++
				}
			}
		}
		pool := 0
		for _, a := range sc.reports[outer] {
			if sc.covered[a] == 0 {
				pool += int(made[a])
			}
		}
		for pool > 0 && pool < sc.min {
			smallest := -1
			for _, r := range inside {
				if !sc.hidden[r] && sc.makers[r] > 0 && (smallest < 0 || sc.makers[r] < sc.makers[smallest]) {
					smallest = int(r)
				}
			}
			if smallest < 0 {
				break
			}
			sc.hidden[smallest], hid = true, true
			for _, a := range sc.reports[smallest] {
				if sc.covered[a]--; sc.covered[a] == 0 {
					pool += int(made[a])
				}
			}
		}
	}
	return hid
}

// guardTargets makes sure that each report hidden for its few students
// holds students making the figure in no report shown but the group's;
// where not, it hides the reports shown that hold the atom of such
// students covered by the fewest, and reports whether it hid any.
func (sc *smallCells) guardTargets(made []int32) (hid bool) {
	clear(sc.covered)
	for r, atoms := range sc.reports[1:] {
		if !sc.hidden[r+1] {
			for _, a := range atoms {
				sc.covered[a]++
			}
		}
	}
	for r := range sc.reports {
		if !sc.fewMakers(r) {
			continue
		}
		if a := sc.leastCovered(made, sc.reports[r]); a >= 0 && sc.covered[a] > 0 {
			for _, r := range sc.inReport[a] {
				if !sc.hidden[r] {
					sc.hidden[r], hid = true, true
					for _, b := range sc.reports[r] {
						sc.covered[b]--
					}
				}
			}
		}
	}
	return hid
}

// fewMakers reports whether 1 to min-1 students make report r's figure:
// the reports the rule hides first, and keeps from being worked out.
func (sc *smallCells) fewMakers(r int) bool {
	return sc.makers[r] > 0 && sc.makers[r] < sc.min
}

// leastCovered returns, of the atoms with students making the figure,
// the one covered by the fewest reports shown (then the one of fewest
// students, then the first), or -1.
func (sc *smallCells) leastCovered(made []int32, atoms []int32) int32 {
	best := int32(-1)
	for _, a := range atoms {
		if made[a] == 0 {
			continue
		}
		if best < 0 || sc.covered[a] < sc.covered[best] || sc.covered[a] == sc.covered[best] && made[a] < made[best] {
			best = a
		}
	}
	return best
}
