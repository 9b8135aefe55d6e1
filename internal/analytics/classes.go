package analytics

// Class is a class of a group: some of its students, under a name the
// school gives it. A student may be in any number of classes. Its
// reports count the events of its members as they are now, whenever the
// events happened (docs/decisions.md, classes).
type Class struct {
	GroupID string
	ID      string
	Name    string
	// Start and End are the class's term, as calendar dates (YYYY-MM-DD),
	// empty when not given: what a roster says, kept for the school.
	Start, End string
	// Members are the ids of its students, in byte order.
	Members []string
}

// SchoolRoster is what a district's roster import changes of one of its
// schools: the school (made when New), and its roster's change.
type SchoolRoster struct {
	Group  Group
	New    bool
	Change RosterChange
}

// RosterChange is what a roster import changes of a group, at once.
type RosterChange struct {
	Students []StudentUpdate // enrolled, or renamed
	// Classes are created or changed: their names and members as given
	// (their terms as they were).
	Classes        []Class
	DeletedClasses []string
	// Staff are the school's teachers and administrators.
	Staff StaffChange
}

// StaffChange is what a roster import changes of a school's staff, or a
// district's: Staff are the members the roster names, each with its
// SourcedID, added or updated (found by SourcedID, else by email; a
// teacher's ClassIDs nil when the import says nothing of their classes);
// Gone are the SourcedIDs of those it deletes and, with Replace (a bulk
// file), every member it brought before and does not name goes too.
type StaffChange struct {
	Staff   []Staff
	Gone    []string
	Replace bool
}
