// Package digest makes the weekly digest of a group's usage, mails it
// through SMTP, and sends each group's to its recipients once a week,
// once per recipient whatever the number of processes.
package digest

import (
	"context"
	"fmt"
	"math"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// Digest is one group's week, or one class's: both endpoints' totals
// beside the week before's, and the students inactive all week.
type Digest struct {
	Group analytics.Group
	// Class, if set, is the class the digest is of: its members' figures
	// and students, for its teacher.
	Class    *analytics.Class
	Week     analytics.Week
	Days     analytics.DayRange
	Sections []Section
	// Students is the number of the group's students; Inactive are those
	// who used neither endpoint all week, in report order (by name).
	Students int
	Inactive []analytics.Student
	// Stopped are the students who stopped (as GET /api/last-use says
	// when the digest is made), the longest stopped first, and
	// InactiveAfter the days it takes.
	Stopped       []report.StudentUse
	InactiveAfter int
}

// Section is one endpoint's totals: its metrics, then its students who
// used it, as the report API's group report for the week gives them.
type Section struct {
	Title    string
	Endpoint string // the report endpoint, as in its path
	Rows     []Row
}

// Row is one total of the week and of the week before.
type Row struct {
	Title           string
	Value, Previous int64
}

// sections are the digest's sections, in order.
var sections = []struct {
	title    string
	endpoint *report.Endpoint
}{
	{"Live lectures", report.LiveLecture},
	{"Chat", report.Chat},
}

// UsersTitle is the title of each section's last row: the group report's
// numStudentsUsed.
const UsersTitle = "Students who used it"

// Compose makes group's digest of week from the report engine, or its
// class's when class is set: the same numbers as the report API's answers
// for the week's seven days (with classId).
func Compose(ctx context.Context, engine *report.Engine, group analytics.Group, class *analytics.Class, week analytics.Week, now time.Time) (Digest, error) {
	d := Digest{Group: group, Class: class, Week: week, Days: week.Days()}
	active := map[string]bool{}
	var students []analytics.Student
	for _, sec := range sections {
		section := newSection(sec.title, sec.endpoint)
		for _, w := range []analytics.Week{week, week.Previous()} {
			err := run(ctx, engine, group, class, sec.endpoint, w, false, now, func(r *report.Report) {
				section.fill(r, w == week)
			})
			if err != nil {
				return d, err
			}
		}
		d.Sections = append(d.Sections, section)

		students = students[:0]
		err := run(ctx, engine, group, class, sec.endpoint, week, true, now, func(r *report.Report) {
			students = append(students, *r.Student)
			for _, v := range r.Values {
				if v != 0 {
					active[r.Student.ID] = true
				}
			}
		})
		if err != nil {
			return d, err
		}
	}
	d.Students = len(students)
	for _, s := range students {
		if !active[s.ID] {
			d.Inactive = append(d.Inactive, s)
		}
	}
	uq := report.UseQuery{Statuses: []analytics.UseStatus{analytics.StatusStopped}}
	if class != nil {
		uq.ClassID = class.ID
	}
	list, err := engine.LastUses(ctx, group, uq, now)
	d.Stopped, d.InactiveAfter = list.Students, list.InactiveAfter
	return d, err
}

// newSection is an endpoint's section, its rows not yet filled: each
// metric, then the students who used it.
func newSection(title string, ep *report.Endpoint) Section {
	section := Section{Title: title, Endpoint: ep.Name}
	for _, t := range ep.Titles {
		section.Rows = append(section.Rows, Row{Title: t})
	}
	section.Rows = append(section.Rows, Row{Title: UsersTitle})
	return section
}

// fill sets the section's figures of the week (or of the week before,
// when not current) from the week's whole report r.
func (s *Section) fill(r *report.Report, current bool) {
	for i := range s.Rows {
		v := int64(r.NumStudentsUsed)
		if i < len(r.Values) {
			v = r.Values[i]
		}
		if current {
			s.Rows[i].Value = v
		} else {
			s.Rows[i].Previous = v
		}
	}
}

// run asks the engine for the week's whole-range report of ep: the
// group's (or class's), or each student's.
func run(ctx context.Context, engine *report.Engine, group analytics.Group, class *analytics.Class, ep *report.Endpoint, w analytics.Week,
	students bool, now time.Time, emit func(*report.Report)) error {
	q, err := weekQuery(w)
	if err != nil {
		return err
	}
	q.Students = students
	if class != nil {
		q.ClassID = class.ID
	}
	err = engine.Run(ctx, group, ep, q, now, func(r *report.Report) error { emit(r); return nil })
	if err != nil {
		return fmt.Errorf("digest %s %s: %w", group.ID, w, err)
	}
	return nil
}

// Change says how a total moved from the week before: "no change", "new"
// (from nothing), or up or down by a whole percentage, as the dashboard
// says it; "not compared" when either is hidden (report.Suppressed).
func Change(value, previous int64) (text string, direction int) {
	if value == report.Suppressed || previous == report.Suppressed {
		return "not compared", 0
	}
	if previous == 0 {
		if value == 0 {
			return "no change", 0
		}
		return "new", 1
	}
	// A half up, as the dashboard's Math.round: -2.5 is down 2%.
	x := float64(value-previous) / float64(previous) * 100
	percent := math.Floor(x)
	if x-percent >= 0.5 {
		percent++
	}
	switch {
	case percent > 0:
		return fmt.Sprintf("up %.0f%%", percent), 1
	case percent < 0:
		return fmt.Sprintf("down %.0f%%", -percent), -1
	}
	return "no change", 0
}

// DueWeek is the week whose digest is due at now in loc: the last week
// that has ended, from 07:00 on the Monday after it.
func DueWeek(now time.Time, loc *time.Location) analytics.Week {
	local := now.In(loc)
	day := analytics.DayOf(now, loc)
	monday := day - analytics.Day((int(local.Weekday())+6)%7)
	y, m, d := monday.Date()
	if local.Before(time.Date(y, m, d, SendHour, 0, 0, 0, loc)) {
		monday -= 7
	}
	return analytics.WeekOf(monday - 7)
}

// SendHour is the hour of Monday, in the group's time zone, from which
// the digest of the week before goes out.
const SendHour = 7
