package platform

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/roster"
)

// RosterResult says what a roster import changed, or would change.
type RosterResult struct {
	DryRun          bool   `json:"dryRun"`
	School          string `json:"school,omitempty"` // the org imported, when the bundle names schools
	StudentsAdded   int    `json:"studentsAdded"`
	StudentsRenamed int    `json:"studentsRenamed"`
	ClassesAdded    int    `json:"classesAdded"`
	ClassesChanged  int    `json:"classesChanged"` // renamed, or members changed
	ClassesDeleted  int    `json:"classesDeleted"`
	MembersAdded    int    `json:"membersAdded"`
	MembersRemoved  int    `json:"membersRemoved"`
	// The school's teachers and administrators the roster brings.
	StaffCounts
	// Skipped are the rows left out, and why: a bulk file's tobedeleted
	// records, and the enrollments of those records.
	Skipped []roster.Skipped `json:"skipped"`
	// Warnings are the cells the service does not act on and could not
	// read, kept as they came (a district's import gives them once, for
	// the bundle).
	Warnings []roster.Warning `json:"warnings,omitempty"`
}

// ImportRoster takes a group's students and classes from a OneRoster
// bundle, all or nothing (docs/decisions.md, roster import): the users
// enrolled as students in the school's classes become students (and
// those already students are renamed); the classes of the school are
// created or renamed, and their members are their student enrollments
// (a bulk enrollments file replaces a class's members, a delta adds and
// removes). A delta's tobedeleted class is deleted, and its tobedeleted
// user leaves every class; no student is erased. org picks the school of
// a bundle of several. With dryRun, nothing is changed.
func (p *Platform) ImportRoster(ctx context.Context, groupID, org string, b *roster.Bundle, dryRun bool) (RosterResult, error) {
	res := RosterResult{DryRun: dryRun}
	if _, err := p.Group(ctx, groupID); err != nil {
		return res, err
	}
	if _, err := p.Usage.Settle(ctx, groupID); err != nil {
		return res, err
	}
	res, change, err := p.rosterChange(ctx, groupID, org, b)
	res.DryRun, res.Warnings = dryRun, b.Warnings
	if err != nil || dryRun || (len(change.Students) == 0 && len(change.Classes) == 0 && len(change.DeletedClasses) == 0 &&
		res.StaffCounts == StaffCounts{}) {
		return res, err
	}
	return res, p.Directory.ApplyRoster(ctx, groupID, change)
}

// rosterChange works out what a bundle changes of a group as it is (a
// group not yet made has no students or classes), taking the classes of
// org (or of the bundle's one school).
func (p *Platform) rosterChange(ctx context.Context, groupID, org string, b *roster.Bundle) (RosterResult, analytics.RosterChange, error) {
	var res RosterResult
	students, err := p.Directory.Students(ctx, groupID)
	if err != nil && analytics.ErrorCode(err) != analytics.NotFound {
		return res, analytics.RosterChange{}, err
	}
	classes, err := p.Directory.Classes(ctx, groupID)
	if err != nil && analytics.ErrorCode(err) != analytics.NotFound {
		return res, analytics.RosterChange{}, err
	}
	staff, err := p.Directory.StaffOf(ctx, groupID, "")
	if err != nil && analytics.ErrorCode(err) != analytics.NotFound {
		return res, analytics.RosterChange{}, err
	}
	im := importer{b: b, names: map[string]string{}, members: map[string]map[string]bool{}, titles: map[string]string{},
		users: map[string]roster.User{}, inBundle: map[string]bool{}, updates: map[string]string{}}
	for _, s := range students {
		im.names[s.ID] = s.Name
	}
	before := maps.Clone(im.names)
	for _, c := range classes {
		im.titles[c.ID] = c.Name
		im.members[c.ID] = map[string]bool{}
		for _, m := range c.Members {
			im.members[c.ID][m] = true
		}
	}
	if res.School, err = im.school(org); err != nil {
		return res, analytics.RosterChange{}, err
	}
	im.skipped = slices.Clone(b.Skipped)
	change, err := im.change(res.School, staff)
	if err != nil {
		return res, change, invalid("Invalid roster: %s", err)
	}
	res.Skipped = append([]roster.Skipped{}, im.skipped...)
	count(&change, before, classes, &res)
	res.StaffCounts = p.countStaff(change.Staff, staff)
	return res, change, nil
}

// importer works out a bundle's changes from the group as it is.
type importer struct {
	b        *roster.Bundle
	names    map[string]string          // the group's students, and then the bundle's
	titles   map[string]string          // the group's classes' names, and then the bundle's
	members  map[string]map[string]bool // by class
	users    map[string]roster.User
	inBundle map[string]bool       // the school's classes of classes.csv
	updates  map[string]string     // students enrolled or renamed: their names
	skipped  []roster.Skipped      // the bundle's, then the enrollments of what it skipped
	org      string                // the school imported; empty: the bundle names none
	changed  map[string]bool       // the classes the import may change
	deleted  []string              // the classes it deletes
	staff    analytics.StaffChange // the school's staff the bundle names
}

// school is the org the import takes classes of: the one named, or the
// bundle's only school; empty when the bundle has no orgs.
func (im *importer) school(org string) (string, error) {
	var schools []string
	known := false
	for _, o := range im.b.Orgs {
		if o.SourcedID == org {
			known = true
		}
		if o.Type == "school" && !o.Deleted() {
			schools = append(schools, o.SourcedID)
		}
	}
	switch {
	case org != "" && !known && len(im.b.Orgs) > 0:
		return "", invalid("Invalid org: no org %q in orgs.csv", org)
	case org != "":
		return org, nil
	case len(schools) > 1:
		return "", &SchoolNotNamedError{Schools: schools}
	case len(schools) == 1:
		return schools[0], nil
	}
	return "", nil
}

// SchoolNotNamedError is the refusal of a bundle of several schools when
// the import does not name the group's. It says how to name it on the
// platform API (?org=); Say words it for another interface.
type SchoolNotNamedError struct{ Schools []string }

func (e *SchoolNotNamedError) Error() string { return e.Say("?org=ID") }

// Say is the refusal, naming the school with how.
func (e *SchoolNotNamedError) Say(how string) string {
	return fmt.Sprintf("Invalid roster: orgs.csv has %d schools (%s): name the group's school with %s", len(e.Schools), strings.Join(e.Schools, ", "), how)
}

func (e *SchoolNotNamedError) Unwrap() error { return invalid("%s", e.Error()) }

// change works out what the import changes: the users' ids and names
// checked, the school's classes, its student enrollments, the users
// renamed or deleted, then its staff (from the staff before).
func (im *importer) change(school string, staff []analytics.Staff) (analytics.RosterChange, error) {
	im.org = school
	im.changed = map[string]bool{}
	if err := im.readUsers(); err != nil {
		return analytics.RosterChange{}, err
	}
	if err := im.readClasses(); err != nil {
		return analytics.RosterChange{}, err
	}
	if err := im.readEnrollments(); err != nil {
		return analytics.RosterChange{}, err
	}
	im.readUserChanges()
	im.readStaff(staff)
	return im.result(), nil
}

// ofSchool reports whether a record of the org named belongs to the
// school imported: any, when the bundle names no school.
func (im *importer) ofSchool(org string) bool { return im.org == "" || org == "" || org == im.org }

// readUsers checks the users' ids and names, and keeps them by id.
func (im *importer) readUsers() error {
	for _, u := range im.b.Users {
		if err := checkText("studentId", u.SourcedID, 128); err != nil {
			return &roster.Error{File: "users.csv", Line: u.Line, Column: "sourcedId", Msg: analytics.ErrorMessage(err)}
		}
		if n := u.Name(); n != "" {
			if err := checkText("studentName", n, 200); err != nil {
				return &roster.Error{File: "users.csv", Line: u.Line, Column: "givenName", Msg: analytics.ErrorMessage(err)}
			}
		}
		im.users[u.SourcedID] = u
	}
	return nil
}

// readClasses takes the school's classes: created or renamed, or deleted
// by a delta.
func (im *importer) readClasses() error {
	for _, c := range im.b.Classes {
		if !im.ofSchool(c.SchoolSourcedID) {
			continue
		}
		im.inBundle[c.SourcedID] = true
		if c.Deleted() {
			if _, ok := im.titles[c.SourcedID]; ok {
				im.deleted = append(im.deleted, c.SourcedID)
			}
			delete(im.titles, c.SourcedID)
			continue
		}
		if err := checkText("classId", c.SourcedID, 128); err != nil {
			return &roster.Error{File: "classes.csv", Line: c.Line, Column: "sourcedId", Msg: analytics.ErrorMessage(err)}
		}
		if err := checkText("title", c.Title, 200); err != nil {
			return &roster.Error{File: "classes.csv", Line: c.Line, Column: "title", Msg: analytics.ErrorMessage(err)}
		}
		im.titles[c.SourcedID] = c.Title
		im.changed[c.SourcedID] = true
		if im.members[c.SourcedID] == nil || im.b.Modes["enrollments.csv"] == roster.Bulk {
			im.members[c.SourcedID] = map[string]bool{} // a bulk file gives every member
		}
	}
	return nil
}

// readEnrollments takes the students: users enrolled as students in the
// school's classes, who join (or, marked tobedeleted, leave) them. The
// enrollments of a record the bundle skipped are skipped too.
func (im *importer) readEnrollments() error {
	skippedRecords := map[string]bool{} // "classes.csv/ID": a record skipped
	for _, sk := range im.b.Skipped {
		skippedRecords[sk.File+"/"+sk.SourcedID] = true
	}
	for _, e := range im.b.Enrollments {
		if !im.ofSchool(e.SchoolSourcedID) || e.Role != "student" {
			continue
		}
		fail := func(col, format string, args ...any) error {
			return &roster.Error{File: "enrollments.csv", Line: e.Line, Column: col, Msg: fmt.Sprintf(format, args...)}
		}
		if why := skippedBecause(skippedRecords, e); why != "" {
			im.skipped = append(im.skipped, roster.Skipped{File: "enrollments.csv", Line: e.Line, SourcedID: e.SourcedID, Reason: why})
			continue
		}
		if _, ok := im.titles[e.ClassSourcedID]; !ok {
			if im.inBundle[e.ClassSourcedID] && e.Deleted() {
				continue // the class is deleted, and its members with it
			}
			return fail("classSourcedId", "no class %q in classes.csv or the group", e.ClassSourcedID)
		}
		u, inFile := im.users[e.UserSourcedID]
		if _, isStudent := im.names[e.UserSourcedID]; !inFile && !isStudent {
			return fail("userSourcedId", "no user %q in users.csv or the group's students", e.UserSourcedID)
		}
		if im.members[e.ClassSourcedID] == nil {
			im.members[e.ClassSourcedID] = map[string]bool{}
		}
		im.changed[e.ClassSourcedID] = true
		if e.Deleted() || u.Deleted() {
			delete(im.members[e.ClassSourcedID], e.UserSourcedID)
			continue
		}
		im.enrol(e.UserSourcedID)
		im.members[e.ClassSourcedID][e.UserSourcedID] = true
	}
	return nil
}

// enrol makes the user a student, named as users.csv names them, unless
// they are one already and users.csv does not name them.
func (im *importer) enrol(id string) {
	u, inFile := im.users[id]
	if _, ok := im.names[id]; !ok || inFile {
		im.updates[id] = u.Name()
		im.names[id] = cmp.Or(u.Name(), id)
	}
}

// readUserChanges renames the students users.csv names, and takes those
// it deletes out of every class.
func (im *importer) readUserChanges() {
	for _, u := range im.b.Users {
		if _, isStudent := im.names[u.SourcedID]; !isStudent {
			continue
		}
		if u.Deleted() {
			for id, m := range im.members {
				if m[u.SourcedID] {
					delete(m, u.SourcedID)
					im.changed[id] = true
				}
			}
			continue
		}
		if u.Name() != "" {
			im.updates[u.SourcedID] = u.Name()
		}
	}
}

// result is the change worked out, and the rows skipped in file and line
// order.
func (im *importer) result() analytics.RosterChange {
	slices.SortStableFunc(im.skipped, func(a, b roster.Skipped) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	c := analytics.RosterChange{DeletedClasses: im.deleted, Staff: im.staff}
	for _, id := range slices.Sorted(maps.Keys(im.updates)) {
		c.Students = append(c.Students, analytics.StudentUpdate{ID: id, Name: im.updates[id]})
	}
	for _, id := range slices.Sorted(maps.Keys(im.changed)) {
		if _, ok := im.titles[id]; ok {
			c.Classes = append(c.Classes, analytics.Class{ID: id, Name: im.titles[id], Members: slices.Sorted(maps.Keys(im.members[id]))})
		}
	}
	return c
}

// skippedBecause says why an enrollment is skipped with the record it
// enrols (its class or user, skipped), or "" when neither was.
func skippedBecause(skipped map[string]bool, e roster.Enrollment) string {
	switch {
	case skipped["classes.csv/"+e.ClassSourcedID]:
		return fmt.Sprintf("its class %s is %s", e.ClassSourcedID, roster.SkippedDeleted)
	case skipped["users.csv/"+e.UserSourcedID]:
		return fmt.Sprintf("its user %s is %s", e.UserSourcedID, roster.SkippedDeleted)
	}
	return ""
}

// count fills in res from the change and the group as it was (its
// students' names and its classes), and leaves out of the change the
// classes it would not change.
func count(c *analytics.RosterChange, names map[string]string, classes []analytics.Class, res *RosterResult) {
	for _, s := range c.Students {
		switch name, ok := names[s.ID]; {
		case !ok:
			res.StudentsAdded++
		case s.Name != "" && s.Name != name:
			res.StudentsRenamed++
		}
	}
	was := map[string]analytics.Class{}
	for _, cl := range classes {
		was[cl.ID] = cl
	}
	res.ClassesDeleted = len(c.DeletedClasses)
	c.Classes = slices.DeleteFunc(c.Classes, func(cl analytics.Class) bool {
		old, existed := was[cl.ID]
		if !existed {
			res.ClassesAdded++
			res.MembersAdded += len(cl.Members)
			return false
		}
		added, removed := diffSorted(old.Members, cl.Members)
		res.MembersAdded += added
		res.MembersRemoved += removed
		if added+removed == 0 && old.Name == cl.Name {
			return true // as it is
		}
		res.ClassesChanged++
		return false
	})
}

// diffSorted counts what only b and only a of two sorted lists hold.
func diffSorted(a, b []string) (onlyB, onlyA int) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch strings.Compare(a[i], b[j]) {
		case 0:
			i, j = i+1, j+1
		case -1:
			onlyA, i = onlyA+1, i+1
		default:
			onlyB, j = onlyB+1, j+1
		}
	}
	return onlyB + len(b) - j, onlyA + len(a) - i
}
