package platform

import (
	"context"
	"time"

	"groupanalytics/internal/analytics"
)

// MaxClassMembers caps the members of one class.
const MaxClassMembers = 10_000

// CreateClass adds a class to a group, with its members (students of
// the group). Its term, Start and End, is optional.
func (p *Platform) CreateClass(ctx context.Context, c analytics.Class) (analytics.Class, error) {
	if err := knownGroup(c.GroupID); err != nil {
		return c, err
	}
	if err := checkClass(c); err != nil {
		return c, err
	}
	if err := p.checkMembers(ctx, c.GroupID, c.Members); err != nil {
		return c, err
	}
	if err := p.Directory.CreateClass(ctx, c); err != nil {
		return c, err
	}
	return p.Directory.Class(ctx, c.GroupID, c.ID)
}

// UpdateClass sets a class's name and term.
func (p *Platform) UpdateClass(ctx context.Context, c analytics.Class) (analytics.Class, error) {
	if err := knownGroup(c.GroupID); err != nil {
		return c, err
	}
	if err := checkClass(c); err != nil {
		return c, err
	}
	if err := p.Directory.UpdateClass(ctx, c); err != nil {
		return c, err
	}
	return p.Directory.Class(ctx, c.GroupID, c.ID)
}

func checkClass(c analytics.Class) error {
	if err := checkText("classId", c.ID, 128); err != nil {
		return err
	}
	if err := checkText("name", c.Name, 200); err != nil {
		return err
	}
	var first time.Time
	for _, bound := range []struct{ field, value string }{{"startDate", c.Start}, {"endDate", c.End}} {
		if bound.value == "" {
			continue
		}
		day, err := time.Parse(time.DateOnly, bound.value)
		if err != nil {
			return invalid("Invalid %s: expected a date such as 2026-09-01, got %q", bound.field, bound.value)
		}
		if bound.field == "endDate" && !first.IsZero() && day.Before(first) {
			return invalid("Invalid endDate: %s is before the startDate %s", c.End, c.Start)
		}
		first = day
	}
	return nil
}

// DeleteClass deletes a class; its students stay in the group.
func (p *Platform) DeleteClass(ctx context.Context, groupID, classID string) error {
	if err := knownClass(groupID, classID); err != nil {
		return err
	}
	return p.Directory.DeleteClass(ctx, groupID, classID)
}

// SetClassMembers makes the class's members exactly these students of its
// group, and returns the class.
func (p *Platform) SetClassMembers(ctx context.Context, groupID, classID string, studentIDs []string) (analytics.Class, error) {
	if err := knownClass(groupID, classID); err != nil {
		return analytics.Class{}, err
	}
	if err := p.checkMembers(ctx, groupID, studentIDs); err != nil {
		return analytics.Class{}, err
	}
	if err := p.Directory.SetClassMembers(ctx, groupID, classID, studentIDs); err != nil {
		return analytics.Class{}, err
	}
	return p.Directory.Class(ctx, groupID, classID)
}

// Class returns a class of a group, with its members.
func (p *Platform) Class(ctx context.Context, groupID, classID string) (analytics.Class, error) {
	if err := knownClass(groupID, classID); err != nil {
		return analytics.Class{}, err
	}
	return p.Directory.Class(ctx, groupID, classID)
}

// Classes lists a group's classes, with their members.
func (p *Platform) Classes(ctx context.Context, groupID string) ([]analytics.Class, error) {
	if _, err := p.Group(ctx, groupID); err != nil {
		return nil, err
	}
	return p.Directory.Classes(ctx, groupID)
}

// checkMembers refuses members that could not be students, and settles
// the group, so that the students of events acknowledged before are
// enrolled by then.
func (p *Platform) checkMembers(ctx context.Context, groupID string, studentIDs []string) error {
	if len(studentIDs) > MaxClassMembers {
		return invalid("Invalid studentIds: at most %d students a class, got %d", MaxClassMembers, len(studentIDs))
	}
	for _, id := range studentIDs {
		if !storable(id) {
			return invalid("Invalid studentIds: no student %q in group %q", id, groupID)
		}
	}
	if len(studentIDs) == 0 {
		return nil
	}
	_, err := p.Usage.Settle(ctx, groupID)
	return err
}

// knownClass answers NotFound for ids that could not have been stored,
// without looking them up.
func knownClass(groupID, classID string) error {
	if err := knownGroup(groupID); err != nil {
		return err
	}
	if !storable(classID) {
		return analytics.Errorf(analytics.NotFound, "Class %q not found in group %q", classID, groupID)
	}
	return nil
}
