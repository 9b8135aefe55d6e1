package platform

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// AddStaff adds a member to a school's staff (m.GroupID: a teacher, with
// the classes they teach, or a school administrator) or a district's
// (m.DistrictID: a district administrator). The email is kept in lower
// case, as sign-in compares it; the name defaults to the email.
func (p *Platform) AddStaff(ctx context.Context, m analytics.Staff) (analytics.Staff, error) {
	if err := p.knownOwner(ctx, m.GroupID, m.DistrictID); err != nil {
		return m, err
	}
	if err := checkRole(m); err != nil {
		return m, err
	}
	email, err := CheckAddress(m.Email)
	if err != nil {
		return m, err
	}
	m.Email = strings.ToLower(email)
	if m.Name == "" {
		m.Name = m.Email
	} else if err := checkText("name", m.Name, 200); err != nil {
		return m, err
	}
	m.ClassIDs = slices.Compact(slices.Sorted(slices.Values(m.ClassIDs)))
	for _, id := range m.ClassIDs {
		if !storable(id) {
			return m, invalid("Invalid classIds: no class %q in group %q", id, m.GroupID)
		}
	}
	m.ID, m.Created = newStaffID(), p.Now().UTC().Truncate(time.Millisecond)
	return m, p.Directory.AddStaff(ctx, m)
}

// checkRole checks that the role fits where the member is: a teacher and
// a school administrator on a school's staff, a teacher with classes
// (and only a teacher); a district administrator on a district's.
func checkRole(m analytics.Staff) error {
	roles := func() string {
		names := make([]string, len(analytics.Roles))
		for i, r := range analytics.Roles {
			names[i] = string(r)
		}
		return strings.Join(names, ", ")
	}
	switch {
	case m.Role == "":
		return invalid("Missing role")
	case !slices.Contains(analytics.Roles, m.Role):
		return invalid("Invalid role %q: expected one of %s", m.Role, roles())
	case m.DistrictID != "" && m.Role != analytics.RoleDistrictAdmin:
		return invalid("Invalid role %q: a district's staff are its administrators (district-admin); a teacher or a school administrator is on a school's staff", m.Role)
	case m.DistrictID == "" && m.Role == analytics.RoleDistrictAdmin:
		return invalid("Invalid role %q: a district administrator is on a district's staff", m.Role)
	case m.Role == analytics.RoleTeacher && len(m.ClassIDs) == 0:
		return invalid("Invalid classIds: a teacher needs at least one class")
	case m.Role != analytics.RoleTeacher && len(m.ClassIDs) > 0:
		return invalid("Invalid classIds: only a teacher has classes; an administrator sees all of theirs")
	case len(m.ClassIDs) > MaxKeyClasses:
		return invalid("Invalid classIds: at most %d classes a teacher, got %d", MaxKeyClasses, len(m.ClassIDs))
	}
	return nil
}

// StaffOf lists a school's staff (groupID) or a district's (districtID),
// by email.
func (p *Platform) StaffOf(ctx context.Context, groupID, districtID string) ([]analytics.Staff, error) {
	if err := p.knownOwner(ctx, groupID, districtID); err != nil {
		return nil, err
	}
	return p.Directory.StaffOf(ctx, groupID, districtID)
}

// knownOwner answers NotFound unless the district (districtID), or else
// the group, exists.
func (p *Platform) knownOwner(ctx context.Context, groupID, districtID string) error {
	if districtID != "" {
		_, err := p.District(ctx, districtID)
		return err
	}
	_, err := p.Group(ctx, groupID)
	return err
}

// RemoveStaff takes a staff member away.
func (p *Platform) RemoveStaff(ctx context.Context, staffID string) error {
	if !strings.HasPrefix(staffID, "stf_") || !storable(staffID) {
		return analytics.Errorf(analytics.NotFound, "Staff member %q not found", staffID)
	}
	return p.Directory.RemoveStaff(ctx, staffID)
}

// newStaffID is a new staff member's id.
func newStaffID() string { return "stf_" + strings.ToLower(rand.Text()[:12]) }
