package analytics

import "time"

// Role is what a staff member sees once signed in: as much as the key of
// the same reach.
type Role string

const (
	// RoleTeacher sees the students of their classes, as a teacher's key.
	RoleTeacher Role = "teacher"
	// RoleSchoolAdmin sees their school, as a school's key.
	RoleSchoolAdmin Role = "school-admin"
	// RoleDistrictAdmin sees their district, as a district's key.
	RoleDistrictAdmin Role = "district-admin"
)

// Roles are the roles, in the order the documentation names them.
var Roles = []Role{RoleTeacher, RoleSchoolAdmin, RoleDistrictAdmin}

// Staff is a person sign-in recognises by their email: one of a school's
// staff (GroupID: a teacher, with the classes they teach, or an
// administrator) or a district's administrator (DistrictID). An email is
// once per school or district; a person on the staff of two schools has a
// record in each.
type Staff struct {
	ID         string
	Email      string
	Name       string
	Role       Role
	GroupID    string
	DistrictID string
	// ClassIDs are a teacher's classes, in byte order.
	ClassIDs []string
	// SourcedID is the roster's id of a member a roster import brought
	// (its imports keep them), empty for one the operator added.
	SourcedID string
	Created   time.Time
}
