package platform

import (
	"context"
	"fmt"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
)

// AddStudent enrols a student in a group.
func (p *Platform) AddStudent(ctx context.Context, groupID, studentID, name string) (analytics.Student, error) {
	s := analytics.Student{GroupID: groupID, ID: studentID, Name: name}
	if err := knownGroup(groupID); err != nil {
		return s, err
	}
	if err := checkStudent(studentID, name); err != nil {
		return s, err
	}
	// Settle first: an event acknowledged before this call names the
	// student first, and this call must come after it.
	if _, err := p.Usage.Settle(ctx, groupID); err != nil {
		return s, err
	}
	return s, p.Directory.AddStudent(ctx, s)
}

func checkStudent(id, name string) error {
	if err := checkText("studentId", id, 128); err != nil {
		return err
	}
	return checkText("studentName", name, 200)
}

// RenameStudent changes a student's display name.
func (p *Platform) RenameStudent(ctx context.Context, groupID, studentID, name string) (analytics.Student, error) {
	s := analytics.Student{GroupID: groupID, ID: studentID, Name: name}
	if err := knownGroup(groupID); err != nil {
		return s, err
	}
	if err := checkStudent(studentID, name); err != nil {
		return s, err
	}
	// Settle first: an event acknowledged before this call names the
	// student first, and this call must come after it.
	if _, err := p.Usage.Settle(ctx, groupID); err != nil {
		return s, err
	}
	return s, p.Directory.RenameStudent(ctx, s)
}

// Students lists a group's students.
func (p *Platform) Students(ctx context.Context, groupID string) ([]analytics.Student, error) {
	if _, err := p.Group(ctx, groupID); err != nil {
		return nil, err
	}
	if _, err := p.Usage.Settle(ctx, groupID); err != nil {
		return nil, err
	}
	return p.Directory.Students(ctx, groupID)
}

// DeleteStudent erases a student: their enrolment, events and share of
// every rollup, at once, whatever ingestion is racing it (docs/decisions.md, R7).
func (p *Platform) DeleteStudent(ctx context.Context, groupID, studentID string) error {
	group, err := p.Group(ctx, groupID)
	if err != nil {
		return err
	}
	if !storable(studentID) {
		return analytics.Errorf(analytics.NotFound, "Student %q not found in group %q", studentID, groupID)
	}
	began := p.Now()
	// The warehouses' days that held the student are written again
	// without them: queued before the erasure, so that the intent
	// survives a failure after it, and again after, since a run between
	// the two would have written them with the student.
	days, err := p.studentDays(ctx, group, studentID)
	if err != nil {
		return err
	}
	if err := p.queueRewrites(ctx, groupID, days); err != nil {
		return err
	}
	deleted, err := p.Usage.EraseStudent(ctx, groupID, studentID)
	if err == nil {
		err = p.queueRewrites(ctx, groupID, days)
	}
	if analytics.ErrorCode(err) == analytics.NotFound {
		// Asked again once done (its answer lost on the way), the erasure
		// answers as it did: its receipt stands, and no second is written.
		if erased, rerr := p.erasedBefore(ctx, groupID, studentID); rerr != nil || erased {
			return rerr
		}
	}
	if err != nil {
		return err
	}
	return p.addReceipt(ctx, &analytics.Receipt{GroupID: groupID, StudentID: studentID, Action: analytics.ActionStudentErased,
		Began: began, Deleted: deleted})
}

// studentDays returns the days, in the group's zone, of the student's
// events.
func (p *Platform) studentDays(ctx context.Context, group analytics.Group, studentID string) ([]analytics.Day, error) {
	loc, err := group.Location()
	if err != nil {
		return nil, err
	}
	ctx, err = p.Usage.Settle(ctx, group.ID)
	if err != nil {
		return nil, err
	}
	events, err := p.Usage.StudentEvents(ctx, group.ID, studentID)
	if err != nil {
		return nil, err
	}
	var days []analytics.Day
	for _, e := range events {
		if d := analytics.DayOf(e.OccurredAt, loc); len(days) == 0 || days[len(days)-1] != d {
			days = append(days, d)
		}
	}
	return slices.Compact(days), nil
}

// queueRewrites queues, for each warehouse that delivered some of the
// group's days, those days again, for an erasure.
func (p *Platform) queueRewrites(ctx context.Context, groupID string, days []analytics.Day) error {
	delivered, err := p.Directory.DeliveredWarehouseDays(ctx, groupID, days)
	if err != nil {
		return err
	}
	for warehouseID, days := range delivered {
		queued := make([]analytics.WarehouseDay, len(days))
		for i, d := range days {
			queued[i] = analytics.WarehouseDay{GroupID: groupID, Day: d, Reason: analytics.ReasonErasure}
		}
		if err := p.Directory.QueueWarehouseDays(ctx, warehouseID, queued, p.Now()); err != nil {
			return err
		}
	}
	return nil
}

// erasedBefore reports whether a receipt says the group's student was
// erased.
func (p *Platform) erasedBefore(ctx context.Context, groupID, studentID string) (bool, error) {
	receipts, err := p.Directory.Receipts(ctx, groupID)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(receipts, func(r analytics.Receipt) bool {
		return r.Action == analytics.ActionStudentErased && r.StudentID == studentID
	}), nil
}

// Rebuild recomputes the rollups of one group, or of all groups when
// groupID is empty, from the raw events. progress, if set, is told of
// each group before it is rebuilt.
func (p *Platform) Rebuild(ctx context.Context, groupID string, progress func(done, total int, next string)) ([]analytics.Group, error) {
	var groups []analytics.Group
	if groupID == "" {
		var err error
		if groups, err = p.Directory.Groups(ctx); err != nil {
			return nil, err
		}
	} else {
		g, err := p.Group(ctx, groupID)
		if err != nil {
			return nil, err
		}
		groups = []analytics.Group{g}
	}
	for i, g := range groups {
		if progress != nil {
			progress(i, len(groups), g.ID)
		}
		if err := p.Usage.Rebuild(ctx, g.ID, g.TimeZone); err != nil {
			return nil, fmt.Errorf("rebuild %s: %w", g.ID, err)
		}
	}
	return groups, nil
}

// MaxAccessEntries caps the entries of one page of an access log.
const MaxAccessEntries = 1000

// AccessLog returns a page of the group's access log, newest first, as f
// picks (Limit 0: 100), and the Before of the next page (0: none).
func (p *Platform) AccessLog(ctx context.Context, groupID string, f analytics.AccessFilter) ([]analytics.AccessEntry, int64, error) {
	if _, err := p.Group(ctx, groupID); err != nil {
		return nil, 0, err
	}
	switch {
	case f.Limit == 0:
		f.Limit = 100
	case f.Limit < 0 || f.Limit > MaxAccessEntries:
		return nil, 0, analytics.Errorf(analytics.Invalid, "Invalid limit: expected 1 to %d, got %d", MaxAccessEntries, f.Limit)
	}
	entries, err := p.Directory.AccessLog(ctx, groupID, f)
	if err != nil || len(entries) < f.Limit {
		return entries, 0, err
	}
	return entries, entries[len(entries)-1].ID, nil
}

// PruneAccessLog deletes every group's access log entries kept longer
// than kept (none when off), at now, and returns how many.
func (p *Platform) PruneAccessLog(ctx context.Context, now time.Time, kept analytics.Days) (int64, error) {
	if kept == 0 {
		return 0, nil
	}
	return p.Directory.PruneAccessLog(ctx, kept.Before(now))
}

// StudentData is everything the service holds about one student: a copy
// for the student, or their parents, on request.
type StudentData struct {
	Student analytics.Student
	Classes []analytics.Class // those they are in, without members
	Events  []analytics.Event // oldest first
	// Access are the access log's entries about them: naming them, or of
	// all students (of the group or of classes), newest first.
	Access []analytics.AccessEntry
}

// StudentData gathers what the service holds about a student of the
// group; NotFound for one it does not have (an erased one included).
func (p *Platform) StudentData(ctx context.Context, groupID, studentID string) (StudentData, error) {
	students, err := p.Students(ctx, groupID) // settles the group's usage first
	if err != nil {
		return StudentData{}, err
	}
	i := slices.IndexFunc(students, func(s analytics.Student) bool { return s.ID == studentID })
	if i < 0 {
		return StudentData{}, analytics.Errorf(analytics.NotFound, "Student %q not found in group %q", studentID, groupID)
	}
	d := StudentData{Student: students[i]}
	classes, err := p.Directory.Classes(ctx, groupID)
	if err != nil {
		return d, err
	}
	for _, c := range classes {
		if slices.Contains(c.Members, studentID) {
			c.Members = nil
			d.Classes = append(d.Classes, c)
		}
	}
	if d.Events, err = p.Usage.StudentEvents(ctx, groupID, studentID); err != nil {
		return d, err
	}
	for before := int64(0); ; {
		page, err := p.Directory.AccessLog(ctx, groupID, analytics.AccessFilter{StudentID: studentID, Before: before, Limit: MaxAccessEntries})
		if err != nil {
			return d, err
		}
		d.Access = append(d.Access, page...)
		if len(page) < MaxAccessEntries {
			return d, nil
		}
		before = page[len(page)-1].ID
	}
}
