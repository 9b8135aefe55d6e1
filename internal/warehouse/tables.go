// Package warehouse writes a school's daily usage as files a data
// warehouse loads (Parquet or CSV, laid out in Hive-style partitions, with
// a manifest a run), made by the report engine so that they add up to the
// reports, and delivers them to a district's object store or a folder, on
// a schedule, on request, and again after an erasure.
package warehouse

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// SchemaVersion is the version of the tables' schema, in every file's
// path and manifest: a change of a column is a new version.
const SchemaVersion = 1

// The tables, as their partitions name them.
const (
	StudentDays  = "student_days"
	ClassMembers = "class_members"
	SchoolDays   = "school_days"
)

// Tables are the tables of a school's day, in the order they are written.
var Tables = []string{StudentDays, ClassMembers, SchoolDays}

// StudentDay is a student's use of a day: one row per student who used
// either endpoint. The metric columns are the report endpoints' titles,
// snake_cased (TestColumnsAreTheTitles).
type StudentDay struct {
	Date       int32   `parquet:"date,date"`
	SchoolID   string  `parquet:"school_id,dict"`
	SchoolName string  `parquet:"school_name,dict"`
	StudentID  string  `parquet:"student_id"`
	SourcedID  *string `parquet:"student_sourced_id,optional"`
	Metrics
	UsedLiveLecture bool `parquet:"used_live_lecture"`
	UsedChat        bool `parquet:"used_chat"`
}

// Metrics are both endpoints' metrics, a column each, in title order.
type Metrics struct {
	// Live lectures'.
	SessionsMade int64 `parquet:"sessions_made"`
	ChatMessages int64 `parquet:"chat_messages"`
	// Chat's.
	TotalMessages       int64 `parquet:"total_messages"`
	TutorMeMessages     int64 `parquet:"tutor_me_messages"`
	TestMessages        int64 `parquet:"test_messages"`
	FlashcardMessages   int64 `parquet:"flashcard_messages"`
	MaterialMessages    int64 `parquet:"material_messages"`
	LiveLectureMessages int64 `parquet:"live_lecture_messages"`
	MainChatMessages    int64 `parquet:"main_chat_messages"`
}

// set sets the metrics of ep from a report's values, in title order.
func (m *Metrics) set(ep *report.Endpoint, v []int64) {
	if ep == report.LiveLecture {
		m.SessionsMade, m.ChatMessages = v[0], v[1]
		return
	}
	m.TotalMessages, m.TutorMeMessages, m.TestMessages, m.FlashcardMessages = v[0], v[1], v[2], v[3]
	m.MaterialMessages, m.LiveLectureMessages, m.MainChatMessages = v[4], v[5], v[6]
}

// ClassMember is a student's membership of a class on a day.
type ClassMember struct {
	Date      int32   `parquet:"date,date"`
	SchoolID  string  `parquet:"school_id,dict"`
	ClassID   string  `parquet:"class_id,dict"`
	SourcedID *string `parquet:"class_sourced_id,optional,dict"`
	ClassName string  `parquet:"class_name,dict"`
	StudentID string  `parquet:"student_id"`
}

// SchoolDay is a school's figures of a day: its group reports' (small
// cells never hide a school's own figures), with how many students used
// each endpoint, and its size.
type SchoolDay struct {
	Date       int32  `parquet:"date,date"`
	SchoolID   string `parquet:"school_id"`
	SchoolName string `parquet:"school_name"`
	Metrics
	LiveLectureStudents int64 `parquet:"live_lecture_students_used"`
	ChatStudents        int64 `parquet:"chat_students_used"`
	StudentsEnrolled    int64 `parquet:"students_enrolled"`
	Seats               int64 `parquet:"seats"`
}

// SchoolDayFiles are the rows of one school's day, one slice a table.
type SchoolDayFiles struct {
	Day      analytics.Day
	Students []StudentDay
	Members  []ClassMember
	School   SchoolDay
}

// Rows returns the number of rows of table.
func (f *SchoolDayFiles) Rows(table string) int {
	switch table {
	case StudentDays:
		return len(f.Students)
	case ClassMembers:
		return len(f.Members)
	}
	return 1
}

// SnakeCase is a metric's title as a column's name: "Tutor Me Messages"
// is tutor_me_messages.
func SnakeCase(title string) string {
	return strings.ReplaceAll(strings.ToLower(title), " ", "_")
}

// lmsClassPrefix begins the ids of the classes made for an LMS's course
// (docs/decisions.md, the course's class): not a roster's.
const lmsClassPrefix = "lms-"

// Build makes the files of the school's days (in its zone) from the
// report engine at now: each student's daily reports of both endpoints,
// the school's daily group reports without small cells, its classes as
// they are now, its students enrolled now and the seats of its plans
// valid each day. emit gets each day's files in order; they are reused
// for the next day.
func Build(ctx context.Context, engine *report.Engine, group analytics.Group, days analytics.DayRange, now time.Time,
	emit func(*SchoolDayFiles) error) error {
	loc, err := group.Location()
	if err != nil {
		return fmt.Errorf("warehouse build %s: %w", group.ID, err)
	}
	own := group
	own.MinCellSize = 0
	classes, err := engine.Directory.Classes(ctx, group.ID)
	if err != nil {
		return fmt.Errorf("warehouse build %s: %w", group.ID, err)
	}
	rostered := map[string]bool{}
	for _, c := range classes {
		if !strings.HasPrefix(c.ID, lmsClassPrefix) {
			for _, m := range c.Members {
				rostered[m] = true
			}
		}
	}
	plans, err := engine.Directory.Plans(ctx, group.ID)
	if err != nil {
		return fmt.Errorf("warehouse build %s: %w", group.ID, err)
	}
	students, err := engine.Directory.Students(ctx, group.ID)
	if err != nil {
		return fmt.Errorf("warehouse build %s: %w", group.ID, err)
	}
	per := max(len(students), 1)
	step := analytics.Day(max(engine.MaxReports/per, 1))
	files := &SchoolDayFiles{}
	for first := days.First; first <= days.Last; first += step {
		chunk := analytics.DayRange{First: first, Last: min(first+step-1, days.Last)}
		byDay, err := studentDays(ctx, engine, own, chunk, now)
		if err != nil {
			return err
		}
		schoolDays, err := schoolFigures(ctx, engine, own, chunk, now)
		if err != nil {
			return err
		}
		for d := chunk.First; d <= chunk.Last; d++ {
			files.Day = d
			files.Students = byDay[d]
			for i := range files.Students {
				s := &files.Students[i]
				s.SchoolName = group.Name
				if rostered[s.StudentID] {
					s.SourcedID = &s.StudentID
				}
			}
			files.Members = members(files.Members[:0], group, classes, d)
			files.School = schoolDays[d-chunk.First]
			files.School.StudentsEnrolled = int64(len(students))
			files.School.Seats = seatsOn(plans, d.Start(loc))
			if err := emit(files); err != nil {
				return err
			}
		}
	}
	return nil
}

// studentDays runs both endpoints' daily student reports of the days
// and keeps the students who used either, by day, in report order.
func studentDays(ctx context.Context, engine *report.Engine, group analytics.Group, days analytics.DayRange, now time.Time) (map[analytics.Day][]StudentDay, error) {
	byDay := map[analytics.Day][]StudentDay{}
	// index finds a student's row of a day by their place in the reports.
	index := map[analytics.Day]map[int]int{}
	q := report.Query{Students: true, Interval: analytics.Daily}
	start, end := analytics.OnDay(days.First), analytics.OnDay(days.Last)
	q.Start, q.End = &start, &end
	for _, ep := range []*report.Endpoint{report.LiveLecture, report.Chat} {
		err := engine.Run(ctx, group, ep, q, now, func(r *report.Report) error {
			if !slices.ContainsFunc(r.Values, func(v int64) bool { return v != 0 }) {
				return nil
			}
			d := analytics.DayOf(r.Start, r.Start.Location())
			if index[d] == nil {
				index[d] = map[int]int{}
			}
			i, ok := index[d][r.StudentIndex]
			if !ok {
				i = len(byDay[d])
				index[d][r.StudentIndex] = i
				byDay[d] = append(byDay[d], StudentDay{Date: int32(d), SchoolID: group.ID, StudentID: r.Student.ID})
			}
			row := &byDay[d][i]
			row.set(ep, r.Values)
			if ep == report.LiveLecture {
				row.UsedLiveLecture = true
			} else {
				row.UsedChat = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("warehouse build %s %s: %w", group.ID, ep.Name, err)
		}
	}
	for d := range byDay {
		slices.SortFunc(byDay[d], func(a, b StudentDay) int { return strings.Compare(a.StudentID, b.StudentID) })
	}
	return byDay, nil
}

// schoolFigures runs both endpoints' daily group reports of the days:
// one row a day, in order.
func schoolFigures(ctx context.Context, engine *report.Engine, group analytics.Group, days analytics.DayRange, now time.Time) ([]SchoolDay, error) {
	rows := make([]SchoolDay, 0, days.Last-days.First+1)
	for d := days.First; d <= days.Last; d++ {
		rows = append(rows, SchoolDay{Date: int32(d), SchoolID: group.ID, SchoolName: group.Name})
	}
	q := report.Query{Interval: analytics.Daily}
	start, end := analytics.OnDay(days.First), analytics.OnDay(days.Last)
	q.Start, q.End = &start, &end
	for _, ep := range []*report.Endpoint{report.LiveLecture, report.Chat} {
		i := 0
		err := engine.Run(ctx, group, ep, q, now, func(r *report.Report) error {
			row := &rows[i]
			i++
			row.set(ep, r.Values)
			if ep == report.LiveLecture {
				row.LiveLectureStudents = int64(r.NumStudentsUsed)
			} else {
				row.ChatStudents = int64(r.NumStudentsUsed)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("warehouse build %s %s: %w", group.ID, ep.Name, err)
		}
	}
	return rows, nil
}

// members are the rows of the classes' memberships on day d.
func members(rows []ClassMember, group analytics.Group, classes []analytics.Class, d analytics.Day) []ClassMember {
	for i := range classes {
		c := &classes[i]
		var sourced *string
		if !strings.HasPrefix(c.ID, lmsClassPrefix) {
			sourced = &c.ID
		}
		for _, m := range c.Members {
			rows = append(rows, ClassMember{Date: int32(d), SchoolID: group.ID, ClassID: c.ID, SourcedID: sourced, ClassName: c.Name, StudentID: m})
		}
	}
	return rows
}

// seatsOn adds up the seats of the plans valid at t.
func seatsOn(plans []analytics.Plan, t time.Time) int64 {
	var seats int64
	for _, p := range plans {
		if p.ValidAt(t) {
			seats += int64(p.Seats)
		}
	}
	return seats
}
