package report

import (
	"context"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"groupanalytics/internal/analytics"
)

// Every answer of a district adds up its schools' figures of each period
// asked, and reading them is reading every school's rollups: at 1,000
// schools, about 20,000 rows a request. So the engine keeps each school's
// figures of each period under the school's usage version, which every
// write of its rollups changes in any process (UsageStore.UsageVersions),
// read for all the schools at once: only the schools written since are
// read again. A school's figures of a period are cut in its own zone: a
// change of zone rebuilds its rollups, and so changes its version. A
// school deleted and made again under its id is another school, told
// apart by its creation.

// schoolPeriod is what a district's answers take of a school's rollups of
// one period: its counts, and how many of its students used live
// lectures, chat and either (indexed by usedLiveLecture, usedChat and
// usedEither).
type schoolPeriod struct {
	counts analytics.Counts
	used   [usedFigures]int
}

// schoolPeriodCost is about what a kept period costs, its key and the
// cache's entry included.
const schoolPeriodCost = int(unsafe.Sizeof(schoolPeriod{})) + 160

// maxKeptSchoolPeriods bounds the bytes of the schools' periods an engine
// keeps: a district of 1,000 schools asked for one period keeps about
// 0.3 MB, for 90 days by day about 25 MB (the most recent kept).
const maxKeptSchoolPeriods = 16 << 20

// schoolPeriods returns each school's figures of each period,
// periods[s][p], those kept under the school's current usage version as
// they are, the others' read together (a read of each database for each
// core's part of them).
func (e *Engine) schoolPeriods(ctx context.Context, schools []analytics.Group, periods []analytics.DayRange) ([][]schoolPeriod, error) {
	ids := make([]string, len(schools))
	for i, g := range schools {
		ids[i] = g.ID
	}
	ctx, err := e.Usage.SettleGroups(analytics.ReadsOnly(ctx), ids)
	if err != nil {
		return nil, err
	}
	// The versions before the rows: rows read after a write are at least
	// as new as the version read before it, and kept under a version
	// older than they are, they are only read again.
	versions, err := e.Usage.UsageVersions(ctx, ids)
	if err != nil {
		return nil, err
	}
	figures := make([][]schoolPeriod, len(schools))
	var stale []analytics.Group
	var staleVersions []string
	var staleAt []int
	for si := range ids {
		figures[si] = make([]schoolPeriod, len(periods))
		for pi, p := range periods {
			f, ok := e.keptPeriods.Get(schoolPeriodKey(schools[si], p), versions[si])
			if !ok {
				stale, staleVersions, staleAt = append(stale, schools[si]), append(staleVersions, versions[si]), append(staleAt, si)
				break
			}
			figures[si][pi] = f
		}
	}
	if len(stale) == 0 {
		return figures, nil
	}
	var segs []analytics.Segment
	for _, p := range periods {
		segs = append(segs, analytics.GroupSegments(p)...)
	}
	reads := analytics.Runs(segs)
	// A first answer after a start adds up every school's rows: the cores
	// share the schools, each reading together the rows not kept.
	parts := min(runtime.GOMAXPROCS(0), len(stale))
	var addingUp errgroup.Group
	for part := range parts {
		from, to := part*len(stale)/parts, (part+1)*len(stale)/parts
		addingUp.Go(func() error {
			return e.addUp(ctx, stale[from:to], staleVersions[from:to], staleAt[from:to], periods, reads, figures)
		})
	}
	if err := addingUp.Wait(); err != nil {
		return nil, err
	}
	return figures, nil
}

// addUp reads the schools' rows of reads, and adds up each school's
// figures of each period into figures[at[i]], keeping them under the
// school's version.
func (e *Engine) addUp(ctx context.Context, schools []analytics.Group, versions []string, at []int, periods []analytics.DayRange,
	reads []analytics.Segment, figures [][]schoolPeriod) error {
	for _, si := range at {
		clear(figures[si]) // what was kept of it too
	}
	// A school's rows come one after another: its students are counted
	// when the next school's begin, and once the last's have come.
	var used periodsUsed
	current := -1
	counted := func() {
		if current >= 0 {
			si := at[current]
			for pi := range periods {
				figures[si][pi].used = used[pi].figures()
			}
		}
	}
	err := e.Usage.GroupsRollups(ctx, schools, versions, reads, func(i, _ int, r *analytics.GroupRollup) {
		if i != current {
			counted()
			current = i
			used.reset(len(periods))
		}
		// Each row lies in one period, whose segments read it.
		if pi := analytics.PeriodAt(periods, r.Key); pi >= 0 {
			figures[at[i]][pi].counts.Add(&r.Counts)
			used[pi].liveLecture.Union(r.LiveLectureUsers)
			used[pi].chat.Union(r.ChatUsers)
		}
	})
	if err != nil {
		return err
	}
	counted()
	for i, si := range at {
		if versions[i] == "" {
			continue
		}
		for pi, p := range periods {
			e.keptPeriods.Put(schoolPeriodKey(schools[i], p), versions[i], figures[si][pi], schoolPeriodCost)
		}
	}
	return nil
}

// schoolPeriodKey names a school's period in the engine's cache.
func schoolPeriodKey(school analytics.Group, p analytics.DayRange) string {
	b := make([]byte, 0, len(school.ID)+40)
	b = append(b, school.ID...)
	b = append(b, 0)
	b = strconv.AppendInt(b, school.Created.UnixMilli(), 10)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(p.First), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(p.Last), 10)
	return string(b)
}

// usedSets are the students of a school who used live lectures and chat
// in a period.
type usedSets struct{ liveLecture, chat analytics.StudentSet }

// figures returns how many used live lectures, chat and either, indexed
// by usedLiveLecture, usedChat and usedEither; it changes the chat set.
func (u *usedSets) figures() (f [usedFigures]int) {
	f[usedLiveLecture], f[usedChat] = u.liveLecture.Len(), u.chat.Len()
	u.chat.Union(u.liveLecture)
	f[usedEither] = u.chat.Len()
	return f
}

// periodsUsed are a school's usedSets of each period, their sets reused
// from school to school.
type periodsUsed []usedSets

// reset empties the sets of n periods.
func (u *periodsUsed) reset(n int) {
	if cap(*u) < n {
		*u = make(periodsUsed, n)
	}
	*u = (*u)[:n]
	for i := range *u {
		(*u)[i].liveLecture, (*u)[i].chat = (*u)[i].liveLecture[:0], (*u)[i].chat[:0]
	}
}
