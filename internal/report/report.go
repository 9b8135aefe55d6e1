// Package report computes the group and student reports of the two report
// endpoints from the rollups of a usage store, whichever database holds
// them.
package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/cache"
)

// Endpoint is one report endpoint: its metric titles, how to read their
// values from counts, and which students count as having used it.
type Endpoint struct {
	Name   string // the last part of its path
	Titles []string
	total  bool // the first value adds up the others
	values func(c *analytics.Counts, into []int64)
	users  func(r *analytics.GroupRollup) analytics.StudentSet
	used   int // its figure of a school's period (schoolperiods.go)
}

// LiveLecture is POST /api/groups/live-lecture.
var LiveLecture = &Endpoint{
	Name:   "live-lecture",
	Titles: []string{"Sessions Made", "Chat Messages"},
	values: func(c *analytics.Counts, into []int64) {
		into[0], into[1] = c[analytics.SessionsCreated], c[analytics.LiveLectureMessages]
	},
	users: func(r *analytics.GroupRollup) analytics.StudentSet { return r.LiveLectureUsers },
	used:  usedLiveLecture,
}

// Chat is POST /api/groups/chat.
var Chat = &Endpoint{
	Name:  "chat",
	total: true,
	Titles: []string{"Total Messages", "Tutor Me Messages", "Test Messages", "Flashcard Messages",
		"Material Messages", "Live Lecture Messages", "Main Chat Messages"},
	values: func(c *analytics.Counts, into []int64) {
		into[0] = 0
		for i, m := range chatMetrics {
			into[i+1] = c[m]
			into[0] += c[m]
		}
	},
	users: func(r *analytics.GroupRollup) analytics.StudentSet { return r.ChatUsers },
	used:  usedChat,
}

// chatMetrics are the chat endpoint's metrics after its total, in title
// order.
var chatMetrics = [...]analytics.Metric{analytics.TutorMeMessages, analytics.TestMessages, analytics.FlashcardMessages,
	analytics.MaterialMessages, analytics.LiveLectureMessages, analytics.MainChatMessages}

// Report is one entry of a response: a group report when Student is nil,
// else that student's; of a school of a district when School is set.
type Report struct {
	Start, End time.Time
	Student    *analytics.Student
	School     *analytics.Group
	// StudentIndex is the student's place in the response's order of
	// students, the same in every period, so that a writer can keep what
	// it makes of a student for the next period.
	StudentIndex    int
	NumStudentsUsed int
	Values          []int64 // one per title of the endpoint, in order
}

// Engine answers report queries.
type Engine struct {
	Directory analytics.Directory
	Usage     analytics.UsageStore
	// MaxReports caps the reports of one response (docs/decisions.md, R2).
	MaxReports int
	// KeepSumsFrom is the fewest students (numbered by the usage store) a
	// group has whose student reports' sums are kept (sums.go).
	KeepSumsFrom int
	// rosters keeps each group's students in report order under the
	// directory's roster version, so that student reports read only the
	// counts while no student is enrolled, renamed or erased.
	rosters *cache.Versioned[[]analytics.Student]
	// classes keeps each group's classes under its roster version.
	classes *cache.Versioned[[]analytics.Class]
	// sums keeps the students' counts of student reports' periods
	// (sums.go).
	sums *cache.Versioned[[]analytics.Counts]
	// classCounts keeps classes' counts of the group's rollup rows
	// (classcounts.go).
	classCounts *cache.Versioned[*classCounts]
	// keptPeriods keeps the figures of schools' periods that districts'
	// answers add up (schoolperiods.go).
	keptPeriods *cache.Versioned[schoolPeriod]
	// keptPlaces keeps each group's students' places in the totals, by
	// the roster and ordinals they were made for (members.go).
	keptPlaces *cache.Versioned[*rosterPlaces]
}

// maxKeptRosters bounds the bytes of the students an engine keeps: 2,000
// schools of 150 students take about 25 MB, one of 10,000 about 1 MB.
const maxKeptRosters = 32 << 20

// maxKeptClasses bounds the bytes of the classes an engine keeps: a
// school of 3,000 students in 300 classes of 30 takes about 0.4 MB.
const maxKeptClasses = 16 << 20

// DefaultMaxReports is the documented cap on reports per response.
const DefaultMaxReports = 200_000

// NewEngine returns an engine on the stores, with the documented cap.
func NewEngine(dir analytics.Directory, usage analytics.UsageStore) *Engine {
	return &Engine{Directory: dir, Usage: usage, MaxReports: DefaultMaxReports, KeepSumsFrom: DefaultKeepSumsFrom, rosters: cache.New[[]analytics.Student](maxKeptRosters),
		classes: cache.New[[]analytics.Class](maxKeptClasses), classCounts: cache.New[*classCounts](maxKeptClassCounts),
		sums: cache.New[[]analytics.Counts](maxKeptSums), keptPeriods: cache.New[schoolPeriod](maxKeptSchoolPeriods),
		keptPlaces: cache.New[*rosterPlaces](maxKeptRosters)}
}

// Run computes the reports q asks of group at time now and passes them to
// emit in response order. Every error about q is returned before the first
// emit; an error after it means the response cannot be completed. The
// report passed to emit is reused for the next: emit must not keep it.
func (e *Engine) Run(ctx context.Context, group analytics.Group, ep *Endpoint, q Query, now time.Time, emit func(*Report) error) error {
	loc, err := group.Location()
	if err != nil {
		return fmt.Errorf("report: group %s: %w", group.ID, err)
	}
	r, err := keptRange(group, q, now, loc)
	if err != nil {
		return err
	}
	if ctx, err = e.Usage.Settle(analytics.ReadsOnly(ctx), group.ID); err != nil {
		return err
	}
	// A group with a minCellSize hides the small figures of its group
	// reports (docs/decisions.md, small cells): they are made from its
	// students' counts, and a class's are decided on all the reports of
	// its classes. The group's own is hidden for its few makers only, so
	// it needs no classes.
	cellsRule := group.MinCellSize > 0 && !q.Students
	sc, err := e.scopeOf(ctx, group.ID, q, cellsRule)
	if err != nil {
		return err
	}
	var students []analytics.Student
	var ordinals map[string]int
	// A class's group reports without small cells read the ordinals
	// after the rows (classGroupReports).
	if q.Students || cellsRule {
		if students, ordinals, err = e.studentsAsked(ctx, group.ID, q, sc); err != nil {
			return err
		}
	}
	each := ""
	if q.Students {
		each = "students"
	}
	if err := e.checkSize(r, q.Interval, len(students), each); err != nil {
		return err
	}
	periods := r.Periods(q.Interval)
	switch {
	case q.Students:
		if q.Disclosing != nil && len(students) > 0 {
			q.Disclosing()
		}
		return e.studentReports(ctx, group, loc, ep, periods, students, ordinals, emit)
	case cellsRule:
		cells := newSmallCells(group.MinCellSize, sc.classes, sc.keys, q.asked(), !sc.restricted, ordinals, len(ep.Titles), ep.total)
		return e.classReports(ctx, group.ID, loc, ep, periods, sc.members, !sc.restricted, ordinals, cells, emit)
	case sc.restricted:
		return e.classGroupReports(ctx, group, loc, ep, periods, sc.roster, q.asked(), sc.members, emit)
	}
	return e.groupReports(ctx, group.ID, loc, ep, periods, emit)
}

// keptRange is the range q asks for, refused when it is upside down or
// reaches before the first day the group keeps: those days are deleted,
// or about to be, and a report of them would count nothing
// (docs/decisions.md, retention).
func keptRange(group analytics.Group, q Query, now time.Time, loc *time.Location) (analytics.DayRange, error) {
	r := q.Range(now, loc, group.Retention)
	first := group.FirstKeptDay(now, loc)
	switch {
	case r.Last < first:
		return r, analytics.Errorf(analytics.Invalid, "Invalid endDate: %s is before %s, the first day this group keeps (its usage is kept %s)", r.Last, first, group.Retention)
	case r.First < first:
		return r, analytics.Errorf(analytics.Invalid, "Invalid startDate: %s is before %s, the first day this group keeps (its usage is kept %s)", r.First, first, group.Retention)
	case r.First > r.Last:
		return r, analytics.Errorf(analytics.Invalid, "Invalid range: startDate %s is after endDate %s", r.First, r.Last)
	}
	return r, nil
}

// scope is whom a query's reports are of: the group's classes it needs
// (and the roster version they were read under), the teachers' keys' class
// lists when small cells are decided, and the members of the class or
// classes asked for, when restricted to them.
type scope struct {
	classes    []analytics.Class
	roster     string
	keys       [][]string
	members    []string
	restricted bool
	where      string // how a student outside the scope is named in an error
}

// scopeOf reads the scope of q.
func (e *Engine) scopeOf(ctx context.Context, groupID string, q Query, cellsRule bool) (sc scope, err error) {
	if q.ClassID != "" || q.Scoped {
		if sc.classes, sc.roster, err = e.groupClasses(ctx, groupID); err != nil {
			return sc, err
		}
		if cellsRule {
			if sc.keys, err = e.teachersClasses(ctx, groupID); err != nil {
				return sc, err
			}
		}
	}
	sc.members, sc.restricted, sc.where, err = e.members(q, sc.classes)
	return sc, err
}

// studentsAsked reads the group's students (for student reports) and
// their ordinals at once, and keeps those of the scope and of the
// studentIds asked for.
func (e *Engine) studentsAsked(ctx context.Context, groupID string, q Query, sc scope) (students []analytics.Student, ordinals map[string]int, err error) {
	err = inParallel(2, func(i int) (err error) {
		if i == 0 && q.Students {
			students, err = e.students(ctx, groupID)
		} else if i == 1 {
			ordinals, err = e.Usage.Ordinals(ctx, groupID)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if sc.restricted {
		students = pick(students, sc.members)
	}
	if len(q.StudentIDs) > 0 {
		if err := pickAll(&students, q.StudentIDs, sc.where); err != nil {
			return nil, nil, err
		}
	}
	return students, ordinals, nil
}

// checkSize refuses a query whose response would pass MaxReports, saying
// what would fit: per reports a period of each (students or schools;
// each is empty for one a period).
func (e *Engine) checkSize(r analytics.DayRange, iv analytics.Interval, per int, each string) error {
	perPeriod := max(per, 1)
	if each == "" {
		perPeriod = 1
	}
	n := r.CountPeriods(iv) * perPeriod
	if n <= e.MaxReports {
		return nil
	}
	var fits []string
	for next := iv + 1; next <= analytics.Monthly; next++ {
		if r.CountPeriods(next)*perPeriod <= e.MaxReports {
			fits = append(fits, "interval="+next.String())
			break
		}
	}
	if unit, ok := map[analytics.Interval]string{analytics.Daily: "day", analytics.Weekly: "week", analytics.Monthly: "month"}[iv]; ok && e.MaxReports >= perPeriod {
		fits = append(fits, fmt.Sprintf("a range of at most %s with interval=%s", analytics.Plural(e.MaxReports/perPeriod, unit), iv))
	}
	if len(fits) == 0 {
		fits = append(fits, "fewer "+cmp.Or(each, "periods"))
	}
	described := fmt.Sprintf("interval=%s from %s to %s (%d periods)", iv, r.First, r.Last, r.CountPeriods(iv))
	if each != "" {
		described += fmt.Sprintf(" for %d %s", per, each)
	}
	return analytics.Errorf(analytics.Invalid, "Too many reports: %s would give %d reports, more than the limit of %d. Ask for %s.",
		described, n, e.MaxReports, strings.Join(fits, ", or "))
}

func (e *Engine) groupReports(ctx context.Context, groupID string, loc *time.Location, ep *Endpoint,
	periods []analytics.DayRange, emit func(*Report) error) error {
	rollups, err := e.fetchGroupRollups(ctx, groupID, periods)
	if err != nil {
		return err
	}
	for _, p := range periods {
		counts, used := sumPeriod(rollups, p, ep)
		rep := &Report{Start: p.First.Start(loc), End: p.Last.End(loc), NumStudentsUsed: used, Values: make([]int64, len(ep.Titles))}
		ep.values(&counts, rep.Values)
		if err := emit(rep); err != nil {
			return err
		}
	}
	return nil
}

// rollupIndex holds rollups by span and key.
type rollupIndex map[analytics.Span]map[analytics.Day]*analytics.GroupRollup

// sumPeriod adds up the rollups of period p: its counts, and how many
// students used the endpoint.
func sumPeriod(rollups rollupIndex, p analytics.DayRange, ep *Endpoint) (analytics.Counts, int) {
	var counts analytics.Counts
	var users analytics.StudentSet
	rollups.each(p, func(r *analytics.GroupRollup) {
		counts.Add(&r.Counts)
		users.Union(ep.users(r))
	})
	return counts, users.Len()
}

// each calls fn with each rollup that period p is made of, where it has
// usage.
func (x rollupIndex) each(p analytics.DayRange, fn func(r *analytics.GroupRollup)) {
	for _, seg := range analytics.GroupSegments(p) {
		for key := seg.Keys.First; key <= seg.Keys.Last; key = seg.Span.Next(key) {
			if r := x[seg.Span][key]; r != nil {
				fn(r)
			}
		}
	}
}

// add indexes the rows of span.
func (x rollupIndex) add(span analytics.Span, rows []analytics.GroupRollup) {
	if x[span] == nil {
		x[span] = map[analytics.Day]*analytics.GroupRollup{}
	}
	for j := range rows {
		x[span][rows[j].Key] = &rows[j]
	}
}

// fetchGroupRollups reads every group rollup the periods' group reports
// need.
func (e *Engine) fetchGroupRollups(ctx context.Context, groupID string, periods []analytics.DayRange) (rollupIndex, error) {
	var segs []analytics.Segment
	for _, p := range periods {
		segs = append(segs, analytics.GroupSegments(p)...)
	}
	return e.fetchRollups(ctx, groupID, segs)
}

// fetchRollups reads the group's rollups of segs (in order, not
// overlapping), merging neighbouring segments into one read, and the
// reads at once.
func (e *Engine) fetchRollups(ctx context.Context, groupID string, segs []analytics.Segment) (rollupIndex, error) {
	reads := analytics.Runs(segs)
	results := make([][]analytics.GroupRollup, len(reads))
	err := inParallel(len(reads), func(i int) (err error) {
		results[i], err = e.Usage.GroupRollups(ctx, groupID, reads[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	rollups := rollupIndex{}
	for i, rows := range results {
		rollups.add(reads[i].Span, rows)
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
