package analytics

import (
	"cmp"
	"slices"
	"time"
)

// District is a school district: the schools (groups) it holds, a group in
// one district at most, seen together by the district's keys. Its reports
// count each school's days in the school's zone; TimeZone is where their
// bounds are told (docs/decisions.md, districts).
type District struct {
	ID       string
	Name     string
	TimeZone string
	Created  time.Time
	// Schools are the ids of its groups, in byte order.
	Schools []string
}

// Location returns the district's time zone from the embedded database.
func (d District) Location() (*time.Location, error) {
	return LoadZone(d.TimeZone)
}

// DistrictAccess is what a district's key opens: the district, and its
// schools by id, those with a plan valid now (Schools) apart from those
// without one (Unplanned), which its answers leave out and name.
type DistrictAccess struct {
	District  District
	Schools   []Group
	Unplanned []Group
}

// Asked returns the schools of ids (every one of the district's when
// there are none), those with a valid plan apart from those without,
// each by name, then id. An id that is not one of the district's schools
// is an Invalid error, the same whether or not a group of that id exists
// elsewhere.
func (a *DistrictAccess) Asked(ids []string) (planned, unplanned []Group, err error) {
	if len(ids) == 0 {
		planned, unplanned = slices.Clone(a.Schools), slices.Clone(a.Unplanned)
	}
	for _, id := range ids {
		if i := slices.IndexFunc(a.Schools, func(g Group) bool { return g.ID == id }); i >= 0 {
			planned = append(planned, a.Schools[i])
		} else if i := slices.IndexFunc(a.Unplanned, func(g Group) bool { return g.ID == id }); i >= 0 {
			unplanned = append(unplanned, a.Unplanned[i])
		} else {
			return nil, nil, Errorf(Invalid, "Invalid schoolId: no school %q in this district", id)
		}
	}
	SortSchools(planned)
	SortSchools(unplanned)
	return planned, unplanned, nil
}

// Enrolment is a school's size: the students on its roster, and the seats
// of its plans valid now (the most any of them covers; 0: none says).
type Enrolment struct {
	Students int
	Seats    int
}

// SortSchools puts schools in report order: by name, then id.
func SortSchools(schools []Group) {
	slices.SortFunc(schools, func(a, b Group) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
}
