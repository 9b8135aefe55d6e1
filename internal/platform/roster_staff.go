package platform

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/roster"
)

// StaffCounts are what a roster import changes of a school's staff, or a
// district's.
type StaffCounts struct {
	StaffAdded   int `json:"staffAdded"`
	StaffUpdated int `json:"staffUpdated"`
	StaffRemoved int `json:"staffRemoved"`
}

// readStaff takes the school's teachers and administrators from a bundle
// with users.csv: the users with role teacher or administrator at the
// school who have an email, which sign-in finds them by. A teacher's
// classes are their teacher enrollments in the school's classes: exactly
// those of a bulk enrollments file; those they had, with a delta's added
// and removed; as they were without one (docs/decisions.md, Staff).
func (im *importer) readStaff(before []analytics.Staff) {
	classes := im.teachersClasses(before)
	im.staff = staffOf(im.b, im.ofSchool, func(u roster.User, roles map[string]bool) (analytics.Staff, bool) {
		switch {
		case roles["administrator"]:
			return analytics.Staff{Role: analytics.RoleSchoolAdmin}, true
		case roles["teacher"]:
			return analytics.Staff{Role: analytics.RoleTeacher, ClassIDs: classes[u.SourcedID]}, true
		}
		return analytics.Staff{}, false
	})
}

// districtStaff takes a district's administrators from its bundle: the
// users with role administrator at the bundle's district (its one org of
// type district) who have an email.
func districtStaff(b *roster.Bundle) analytics.StaffChange {
	var district []string
	for _, o := range b.Orgs {
		if o.Type == "district" && !o.Deleted() {
			district = append(district, o.SourcedID)
		}
	}
	if len(district) != 1 {
		return analytics.StaffChange{}
	}
	return staffOf(b, func(org string) bool { return org == district[0] }, func(_ roster.User, roles map[string]bool) (analytics.Staff, bool) {
		return analytics.Staff{Role: analytics.RoleDistrictAdmin}, roles["administrator"]
	})
}

// staffOf is the change to the staff of a school or a district (the orgs
// ofOrg accepts) that a bundle with users.csv makes: each user whose
// roles there (roles.csv in OneRoster 1.2; users.csv's role and orgs in
// 1.1) member makes a member of, by their email; a user without one is
// left out (sign-in could not find them). A user a delta deletes goes,
// whatever their role was; a bulk users.csv names every member.
func staffOf(b *roster.Bundle, ofOrg func(string) bool, member func(roster.User, map[string]bool) (analytics.Staff, bool)) analytics.StaffChange {
	var c analytics.StaffChange
	if b.Modes["users.csv"] == roster.Absent {
		return c
	}
	c.Replace = b.Modes["users.csv"] == roster.Bulk
	roles := map[string]map[string]bool{}
	give := func(user, role string) {
		if roles[user] == nil {
			roles[user] = map[string]bool{}
		}
		roles[user][role] = true
	}
	for _, r := range b.Roles {
		if !r.Deleted() && ofOrg(r.OrgSourcedID) {
			give(r.UserSourcedID, r.Role)
		}
	}
	for _, u := range b.Users {
		if u.Role != "" && (len(u.Orgs) == 0 || slices.ContainsFunc(u.Orgs, ofOrg)) {
			give(u.SourcedID, u.Role)
		}
	}
	for _, u := range b.Users {
		if u.Deleted() {
			c.Gone = append(c.Gone, u.SourcedID)
			continue
		}
		m, ok := member(u, roles[u.SourcedID])
		email, err := CheckAddress(u.Email)
		if !ok || err != nil {
			continue
		}
		m.Email = strings.ToLower(email)
		m.Name, m.SourcedID = cmp.Or(u.Name(), m.Email), u.SourcedID
		c.Staff = append(c.Staff, m)
	}
	return c
}

// teachersClasses are the classes of each teacher the enrollments name
// (nil for one they do not), of the school's classes as the import
// leaves them.
func (im *importer) teachersClasses(before []analytics.Staff) map[string][]string {
	mode := im.b.Modes["enrollments.csv"]
	if mode == roster.Absent {
		return nil
	}
	teaches := map[string]map[string]bool{}
	for _, m := range before {
		if m.SourcedID != "" && mode == roster.Delta {
			teaches[m.SourcedID] = map[string]bool{}
			for _, c := range m.ClassIDs {
				teaches[m.SourcedID][c] = true
			}
		}
	}
	for _, e := range im.b.Enrollments {
		if e.Role != "teacher" || !im.ofSchool(e.SchoolSourcedID) {
			continue
		}
		if teaches[e.UserSourcedID] == nil {
			teaches[e.UserSourcedID] = map[string]bool{}
		}
		teaches[e.UserSourcedID][e.ClassSourcedID] = !e.Deleted()
	}
	out := map[string][]string{}
	for user, set := range teaches {
		out[user] = []string{}
		for c, on := range set {
			if _, exists := im.titles[c]; on && exists {
				out[user] = append(out[user], c)
			}
		}
		slices.Sort(out[user])
	}
	return out
}

// countStaff counts what c changes of the staff before, and gives each
// member it names an id and a time for the store to use if they are new.
func (p *Platform) countStaff(c analytics.StaffChange, before []analytics.Staff) StaffCounts {
	var n StaffCounts
	bySourced, byEmail := map[string]analytics.Staff{}, map[string]analytics.Staff{}
	for _, m := range before {
		byEmail[m.Email] = m
		if m.SourcedID != "" {
			bySourced[m.SourcedID] = m
		}
	}
	named := map[string]bool{}
	for i, m := range c.Staff {
		c.Staff[i].ID, c.Staff[i].Created = newStaffID(), p.Now().UTC().Truncate(time.Millisecond)
		named[m.SourcedID] = true
		old, ok := bySourced[m.SourcedID]
		if !ok {
			old, ok = byEmail[m.Email]
		}
		switch {
		case !ok:
			n.StaffAdded++
		case old.Email != m.Email || old.Name != m.Name || old.Role != m.Role || old.SourcedID != m.SourcedID ||
			m.ClassIDs != nil && !slices.Equal(old.ClassIDs, m.ClassIDs):
			n.StaffUpdated++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(bySourced)) {
		if slices.Contains(c.Gone, id) || c.Replace && !named[id] {
			n.StaffRemoved++
		}
	}
	return n
}
