package report

import (
	"context"
	"reflect"
	"slices"
	"unsafe"

	"groupanalytics/internal/analytics"
)

// students returns the group's students in report order, kept from an
// answer before while the group's roster version is the same. The slice
// is shared: callers pick from it, never change it.
func (e *Engine) students(ctx context.Context, groupID string) ([]analytics.Student, error) {
	// The version is read first: students read after it are at least as
	// new, so they are never kept under a version they are older than.
	version, err := e.Directory.RosterVersion(ctx, groupID)
	if err != nil {
		return nil, err
	}
	if students, ok := e.rosters.Get(groupID, version); ok {
		return students, nil
	}
	students, err := e.Directory.Students(ctx, groupID)
	if err != nil {
		return nil, err
	}
	analytics.SortStudents(students)
	cost := 0
	for _, s := range students {
		cost += len(s.ID) + len(s.Name) + studentCost
	}
	e.rosters.Put(groupID, version, students, cost)
	return students, nil
}

// studentCost is what a Student costs beside its id's and name's bytes.
const studentCost = int(unsafe.Sizeof(analytics.Student{}))

// rosterPlaces are a group's students' places in the totals (placeOf)
// and in the roster, by id, made for a roster and its ordinals.
type rosterPlaces struct {
	students []analytics.Student
	ordinals map[string]int
	places   []int
	at       map[string]int // a student's index in students
}

// rosterPlaces returns the places of the group's students, made once for
// a roster and ordinals that the engine and the usage store keep (and
// share) under their versions, and kept while both are the very ones they
// were made for: looking 10,000 students up by id was a third of a list
// of who stopped, and most of a class's.
func (e *Engine) rosterPlaces(groupID string, students []analytics.Student, ordinals map[string]int) *rosterPlaces {
	if p, ok := e.keptPlaces.Get(groupID, ""); ok && len(p.students) == len(students) &&
		(len(students) == 0 || &p.students[0] == &students[0]) &&
		reflect.ValueOf(p.ordinals).UnsafePointer() == reflect.ValueOf(ordinals).UnsafePointer() {
		return p
	}
	p := &rosterPlaces{students: students, ordinals: ordinals, places: make([]int, len(students)), at: make(map[string]int, len(students))}
	for i, s := range students {
		p.places[i], p.at[s.ID] = placeOf(ordinals, s.ID), i
	}
	// Its cost counts the roster and ordinals it holds on to.
	e.keptPlaces.Put(groupID, "", p, len(students)*(8+studentCost+2*ordinalCost))
	return p
}

// pick returns the students of ids (the roster's, in its order) and their
// places in the totals.
func (p *rosterPlaces) pick(ids []string) ([]analytics.Student, []int) {
	at := make([]int, 0, len(ids))
	for _, id := range ids {
		if i, ok := p.at[id]; ok {
			at = append(at, i)
		}
	}
	slices.Sort(at)
	at = slices.Compact(at)
	students, places := make([]analytics.Student, len(at)), make([]int, len(at))
	for j, i := range at {
		students[j], places[j] = p.students[i], p.places[i]
	}
	return students, places
}

// ordinalCost is about what an entry of the ordinals costs.
const ordinalCost = 40

// members returns the students the answer may cover when restricted
// (not the whole group): the class asked for, or the classes of a
// teacher's key together, perhaps none, of the group's classes. where
// says, for an error, where a student was looked for. A class outside a
// teacher's key is as unknown as one that does not exist. The members are
// in byte order, and shared: callers never change them.
func (e *Engine) members(q Query, classes []analytics.Class) (members []string, restricted bool, where string, err error) {
	where = "this group"
	if q.ClassID != "" {
		if q.Scoped && !slices.Contains(q.Classes, q.ClassID) {
			return nil, false, "", analytics.Errorf(analytics.Invalid, "Invalid classId: no class %q in this group", q.ClassID)
		}
		where = "this class"
	} else if !q.Scoped {
		return nil, false, where, nil
	}
	asked := q.asked()
	for _, id := range asked {
		i := slices.IndexFunc(classes, func(c analytics.Class) bool { return c.ID == id })
		switch {
		case i < 0 && q.ClassID != "":
			return nil, false, "", analytics.Errorf(analytics.Invalid, "Invalid classId: no class %q in this group", q.ClassID)
		case i < 0:
			continue // deleted since the key was read
		case len(asked) == 1:
			return classes[i].Members, true, where, nil // in byte order, shared
		}
		members = append(members, classes[i].Members...)
	}
	return slices.Compact(slices.Sorted(slices.Values(members))), true, where, nil
}

// groupClasses returns the group's classes with their members, kept from
// an answer before while the group's roster version (which their changes
// change) is the same, and that version. The slice is shared: callers
// never change it.
func (e *Engine) groupClasses(ctx context.Context, groupID string) ([]analytics.Class, string, error) {
	version, err := e.Directory.RosterVersion(ctx, groupID)
	if err != nil {
		return nil, "", err
	}
	if classes, ok := e.classes.Get(groupID, version); ok {
		return classes, version, nil
	}
	classes, err := e.Directory.Classes(ctx, groupID)
	if err != nil {
		return nil, "", err
	}
	cost := 0
	for _, c := range classes {
		cost += len(c.ID) + len(c.Name) + classCost
		for _, id := range c.Members {
			cost += len(id) + 16
		}
	}
	e.classes.Put(groupID, version, classes, cost)
	return classes, version, nil
}

// classCost is what a Class costs beside its strings' bytes.
const classCost = int(unsafe.Sizeof(analytics.Class{}))

// teachersClasses returns the classes of the group's teachers' keys of
// more than one class: what the group shows group reports of besides the
// group and its classes.
func (e *Engine) teachersClasses(ctx context.Context, groupID string) ([][]string, error) {
	all, err := e.Directory.Keys(ctx, groupID)
	var keys [][]string
	for _, k := range all {
		if k.ForClasses && k.Revoked == nil && len(k.Classes) > 1 {
			keys = append(keys, k.Classes)
		}
	}
	return keys, err
}

// pickAll keeps the students whose ids are given; an id of none of them
// (an erased student's included) is an error naming it and where it was
// looked for.
func pickAll(students *[]analytics.Student, ids []string, where string) error {
	picked := pick(*students, ids)
	if len(picked) < len(ids) {
		have := make(map[string]bool, len(picked))
		for _, s := range picked {
			have[s.ID] = true
		}
		for _, id := range ids {
			if !have[id] {
				return analytics.Errorf(analytics.Invalid, "Invalid studentId: no student %q in %s", id, where)
			}
		}
	}
	*students = picked
	return nil
}

// pick keeps the students whose ids are given (distinct), in their order.
func pick(students []analytics.Student, ids []string) []analytics.Student {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	picked := make([]analytics.Student, 0, len(ids))
	for _, s := range students {
		if want[s.ID] {
			picked = append(picked, s)
			delete(want, s.ID)
		}
	}
	return picked
}
