package platform

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/roster"
)

// readStaff takes the school's teachers and administrators from a bundle
// with users.csv: the users with role teacher or administrator at the
// school (roles.csv in OneRoster 1.2; users.csv's role and orgs in 1.1)
// who have an email, which sign-in finds them by. A teacher's classes are
// their teacher enrollments in the school's classes: exactly those of a
// bulk enrollments file; those they had, with a delta's added and
// removed; as they were without one. A bulk users.csv names every staff
// member the roster brings: those it brought before and does not name
// leave, as those a delta deletes do (docs/decisions.md, Staff).
func (im *importer) readStaff(before []analytics.Staff) {
	if im.b.Modes["users.csv"] == roster.Absent {
		return
	}
	im.replaceStaff = im.b.Modes["users.csv"] == roster.Bulk
	roles := map[string]map[string]bool{}
	give := func(user, role string) {
		if roles[user] == nil {
			roles[user] = map[string]bool{}
		}
		roles[user][role] = true
	}
	for _, r := range im.b.Roles {
		if !r.Deleted() && im.ofSchool(r.OrgSourcedID) {
			give(r.UserSourcedID, r.Role)
		}
	}
	for _, u := range im.b.Users {
		if u.Role != "" && (len(u.Orgs) == 0 || slices.ContainsFunc(u.Orgs, im.ofSchool)) {
			give(u.SourcedID, u.Role)
		}
	}
	classes := im.teachersClasses(before)
	for _, u := range im.b.Users {
		if u.Deleted() {
			im.staffGone = append(im.staffGone, u.SourcedID) // whatever their role was
			continue
		}
		role := analytics.RoleTeacher
		switch {
		case roles[u.SourcedID]["administrator"]:
			role = analytics.RoleSchoolAdmin
		case !roles[u.SourcedID]["teacher"]:
			continue
		}
		email, err := CheckAddress(u.Email)
		if err != nil {
			continue // sign-in could not find them
		}
		email = strings.ToLower(email)
		m := analytics.Staff{Email: email, Name: cmp.Or(u.Name(), email), Role: role, SourcedID: u.SourcedID}
		if role == analytics.RoleTeacher {
			m.ClassIDs = classes[u.SourcedID]
		}
		im.staff = append(im.staff, m)
	}
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

// countStaff fills in res's staff figures, from the staff before.
func countStaff(c analytics.RosterChange, before []analytics.Staff, res *RosterResult) {
	bySourced, byEmail := map[string]analytics.Staff{}, map[string]analytics.Staff{}
	for _, m := range before {
		byEmail[m.Email] = m
		if m.SourcedID != "" {
			bySourced[m.SourcedID] = m
		}
	}
	named := map[string]bool{}
	for _, m := range c.Staff {
		named[m.SourcedID] = true
		old, ok := bySourced[m.SourcedID]
		if !ok {
			old, ok = byEmail[m.Email]
		}
		switch {
		case !ok:
			res.StaffAdded++
		case old.Email != m.Email || old.Name != m.Name || old.Role != m.Role || old.SourcedID != m.SourcedID ||
			m.ClassIDs != nil && !slices.Equal(old.ClassIDs, m.ClassIDs):
			res.StaffUpdated++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(bySourced)) {
		if slices.Contains(c.StaffGone, id) || c.ReplaceStaff && !named[id] {
			res.StaffRemoved++
		}
	}
}
