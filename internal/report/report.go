// Package report computes the group and student reports of the two report
// endpoints from the rollups of a usage store, whichever database holds
// them.
package report

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
)

// Endpoint is one report endpoint: its metric titles, how to read their
// values from counts, and which students count as having used it.
type Endpoint struct {
	Name   string // the last part of its path
	Titles []string
	values func(c *analytics.Counts, into []int64)
	users  func(r *analytics.GroupRollup) analytics.StudentSet
}

// LiveLecture is POST /api/groups/live-lecture.
var LiveLecture = &Endpoint{
	Name:   "live-lecture",
	Titles: []string{"Sessions Made", "Chat Messages"},
	values: func(c *analytics.Counts, into []int64) {
		into[0], into[1] = c[analytics.SessionsCreated], c[analytics.LiveLectureMessages]
	},
	users: func(r *analytics.GroupRollup) analytics.StudentSet { return r.LiveLectureUsers },
}

// Chat is POST /api/groups/chat.
var Chat = &Endpoint{
	Name: "chat",
	Titles: []string{"Total Messages", "Tutor Me Messages", "Test Messages", "Flashcard Messages",
		"Material Messages", "Live Lecture Messages", "Main Chat Messages"},
	values: func(c *analytics.Counts, into []int64) {
		into[0] = 0
		for i, m := range []analytics.Metric{analytics.TutorMeMessages, analytics.TestMessages, analytics.FlashcardMessages,
			analytics.MaterialMessages, analytics.LiveLectureMessages, analytics.MainChatMessages} {
			into[i+1] = c[m]
			into[0] += c[m]
		}
	},
	users: func(r *analytics.GroupRollup) analytics.StudentSet { return r.ChatUsers },
}

// Report is one entry of a response: a group report when Student is nil,
// else that student's.
type Report struct {
	Start, End      time.Time
	Student         *analytics.Student
	NumStudentsUsed int
	Values          []int64 // one per title of the endpoint, in order
}

// Engine answers report queries.
type Engine struct {
	Directory analytics.Directory
	Usage     analytics.UsageStore
	// MaxReports caps the reports of one response (docs/decisions.md, R2).
	MaxReports int
}

// DefaultMaxReports is the documented cap on reports per response.
const DefaultMaxReports = 200_000

// NewEngine returns an engine on the stores, with the documented cap.
func NewEngine(dir analytics.Directory, usage analytics.UsageStore) *Engine {
	return &Engine{Directory: dir, Usage: usage, MaxReports: DefaultMaxReports}
}

// Run computes the reports q asks of group at time now and passes them to
// emit in response order. Every error about q is returned before the first
// emit; an error after it means the response cannot be completed.
func (e *Engine) Run(ctx context.Context, group analytics.Group, ep *Endpoint, q Query, now time.Time, emit func(*Report) error) error {
	loc, err := group.Location()
	if err != nil {
		return fmt.Errorf("report: group %s: %w", group.ID, err)
	}
	r := q.Range(now, loc)
	if r.First > r.Last {
		return analytics.Errorf(analytics.Invalid, "Invalid range: startDate %s is after endDate %s", r.First, r.Last)
	}
	var students []analytics.Student
	if q.Students {
		if students, err = e.Directory.Students(ctx, group.ID); err != nil {
			return err
		}
		analytics.SortStudents(students)
	}
	if err := e.checkSize(r, q, len(students)); err != nil {
		return err
	}
	periods := r.Periods(q.Interval)
	if q.Students {
		return e.studentReports(ctx, group.ID, loc, ep, periods, students, emit)
	}
	return e.groupReports(ctx, group.ID, loc, ep, periods, emit)
}

// studentTotals sums each student's usage over p. The segments of p are
// read at once and merged.
func (e *Engine) studentTotals(ctx context.Context, groupID string, p analytics.DayRange) (map[string]*analytics.Counts, error) {
	segs := analytics.Segments(p)
	parts := make([]map[string]*analytics.Counts, len(segs))
	err := inParallel(len(segs), func(i int) error {
		parts[i] = map[string]*analytics.Counts{}
		return e.Usage.StudentTotals(ctx, groupID, segs[i], parts[i])
	})
	if err != nil {
		return nil, err
	}
	totals := parts[0]
	for _, part := range parts[1:] {
		for id, c := range part {
			analytics.AddTotal(totals, id, c)
		}
	}
	return totals, nil
}

// checkSize refuses a query whose response would pass MaxReports, saying
// what would fit.
func (e *Engine) checkSize(r analytics.DayRange, q Query, students int) error {
	perPeriod := 1
	if q.Students {
		perPeriod = max(students, 1)
	}
	n := r.CountPeriods(q.Interval) * perPeriod
	if n <= e.MaxReports {
		return nil
	}
	var fits []string
	for iv := q.Interval + 1; iv <= analytics.Monthly; iv++ {
		if r.CountPeriods(iv)*perPeriod <= e.MaxReports {
			fits = append(fits, "interval="+iv.String())
			break
		}
	}
	if unit, ok := map[analytics.Interval]string{analytics.Daily: "day", analytics.Weekly: "week", analytics.Monthly: "month"}[q.Interval]; ok && e.MaxReports >= perPeriod {
		fits = append(fits, fmt.Sprintf("a range of at most %s with interval=%s", analytics.Plural(e.MaxReports/perPeriod, unit), q.Interval))
	}
	if len(fits) == 0 {
		fits = append(fits, "fewer students")
	}
	return analytics.Errorf(analytics.Invalid, "Too many reports: %s would give %d reports, more than the limit of %d. Ask for %s.",
		describe(r, q.Interval, q.Students, students), n, e.MaxReports, strings.Join(fits, ", or "))
}

func describe(r analytics.DayRange, iv analytics.Interval, perStudent bool, students int) string {
	s := fmt.Sprintf("interval=%s from %s to %s (%d periods)", iv, r.First, r.Last, r.CountPeriods(iv))
	if perStudent {
		s += fmt.Sprintf(" for %d students", students)
	}
	return s
}

func (e *Engine) groupReports(ctx context.Context, groupID string, loc *time.Location, ep *Endpoint,
	periods []analytics.DayRange, emit func(*Report) error) error {
	rollups, err := e.fetchGroupRollups(ctx, groupID, periods)
	if err != nil {
		return err
	}
	for _, p := range periods {
		var counts analytics.Counts
		var users analytics.StudentSet
		for _, seg := range analytics.Segments(p) {
			for key := seg.Keys.First; key <= seg.Keys.Last; key = seg.Span.Next(key) {
				if r := rollups[seg.Span][key]; r != nil {
					counts.Add(&r.Counts)
					users.Union(ep.users(r))
				}
			}
		}
		rep := &Report{Start: p.First.Start(loc), End: p.Last.End(loc), NumStudentsUsed: users.Len(), Values: make([]int64, len(ep.Titles))}
		ep.values(&counts, rep.Values)
		if err := emit(rep); err != nil {
			return err
		}
	}
	return nil
}

// fetchGroupRollups reads every rollup the periods need, merging the
// segments of neighbouring periods into one read, and the reads at once.
func (e *Engine) fetchGroupRollups(ctx context.Context, groupID string, periods []analytics.DayRange) (map[analytics.Span]map[analytics.Day]*analytics.GroupRollup, error) {
	var reads []analytics.Segment
	for _, p := range periods {
		for _, seg := range analytics.Segments(p) {
			if n := len(reads); n > 0 && reads[n-1].Span == seg.Span && seg.Span.Next(reads[n-1].Keys.Last) >= seg.Keys.First {
				reads[n-1].Keys.Last = seg.Keys.Last
				continue
			}
			reads = append(reads, seg)
		}
	}
	results := make([][]analytics.GroupRollup, len(reads))
	err := inParallel(len(reads), func(i int) (err error) {
		results[i], err = e.Usage.GroupRollups(ctx, groupID, reads[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	rollups := map[analytics.Span]map[analytics.Day]*analytics.GroupRollup{analytics.SpanDay: {}, analytics.SpanMonth: {}}
	for i, rows := range results {
		for j := range rows {
			rollups[reads[i].Span][rows[j].Key] = &rows[j]
		}
	}
	return rollups, nil
}

// inParallel runs fn(0) … fn(n-1) at once, each read on a connection of its
// own, and returns their errors joined. A panic in one is raised again in
// the caller, where the server's recovery handles it.
func inParallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	panics := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	for _, v := range panics {
		if v != nil {
			panic(v)
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) studentReports(ctx context.Context, groupID string, loc *time.Location, ep *Endpoint,
	periods []analytics.DayRange, students []analytics.Student, emit func(*Report) error) error {
	if len(students) == 0 {
		return nil
	}
	var zero analytics.Counts
	for _, p := range periods {
		totals, err := e.studentTotals(ctx, groupID, p)
		if err != nil {
			return err
		}
		start, end := p.First.Start(loc), p.Last.End(loc)
		values := make([]int64, len(ep.Titles))
		for i := range students {
			counts := totals[students[i].ID]
			if counts == nil {
				counts = &zero
			}
			ep.values(counts, values)
			if err := emit(&Report{Start: start, End: end, Student: &students[i], Values: values}); err != nil {
				return err
			}
		}
	}
	return nil
}
