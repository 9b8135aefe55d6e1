package chstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
	"groupanalytics/internal/writebehind"
)

var ctx = context.Background()

// fixture is a directory on PostgreSQL and a ClickHouse usage store on the
// test cluster's two shards.
type fixture struct {
	t     *testing.T
	dir   analytics.Directory
	locks writebehind.Coordinator
	usage *chstore.Store
	dsn   string // the directory's
	url   string
}

func newFixture(t *testing.T) *fixture {
	dsn, url := storetest.NewPostgresDatabase(t), storetest.NewClickHouseURL(t)
	s := storetest.OpenClickHouse(t, dsn, url)
	return &fixture{t: t, dir: s.Directory, locks: s.Directory, usage: s.Usage.(*chstore.Store), dsn: dsn, url: url}
}

func (f *fixture) group(id string) {
	f.t.Helper()
	if err := f.dir.CreateGroup(ctx, analytics.Group{ID: id, Name: id, TimeZone: "UTC", Created: time.Now()}); err != nil {
		f.t.Fatal(err)
	}
}

// appendEvents is AppendEvents, then Settle of each group written, as a
// report does before it reads: the tests look at what ClickHouse holds.
func (f *fixture) appendEvents(events []analytics.Event) (analytics.AppendResult, error) {
	res, err := f.usage.AppendEvents(ctx, events)
	for _, e := range events {
		if err == nil {
			_, err = f.usage.Settle(ctx, e.GroupID)
		}
	}
	return res, err
}

func event(group, id, student string, at time.Time, m analytics.Metric) analytics.Event {
	return analytics.Event{GroupID: group, ID: id, StudentID: student, OccurredAt: at, Metric: m, Day: analytics.DayOf(at, time.UTC)}
}

var day = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func (f *fixture) dayRollup(group string) analytics.GroupRollup {
	f.t.Helper()
	d := analytics.DayOf(day, time.UTC)
	rows, err := f.usage.GroupRollups(ctx, group, analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: d, Last: d}})
	if err != nil {
		f.t.Fatal(err)
	}
	if len(rows) != 1 {
		f.t.Fatalf("%d day rollups of %s, want 1", len(rows), group)
	}
	return rows[0]
}

// TestNewGroupsSpreadOverShards: new groups go to the least loaded shard,
// so that groups fill both shards, and each group's events sit on its own
// shard only.
func TestNewGroupsSpreadOverShards(t *testing.T) {
	f := newFixture(t)
	for i := range 4 {
		g := fmt.Sprintf("g%d", i)
		f.group(g)
		if _, err := f.appendEvents([]analytics.Event{event(g, "e1", "s1", day, analytics.SessionsCreated)}); err != nil {
			t.Fatal(err)
		}
	}
	placements, err := f.locks.Placements(ctx)
	if err != nil {
		t.Fatal(err)
	}
	perShard := map[string]int{}
	for _, p := range placements {
		perShard[p.Shard]++
	}
	if len(placements) != 4 || len(perShard) != 2 || perShard[f.usage.Shards()[0]] != 2 {
		t.Errorf("placements %v: want two groups on each shard", perShard)
	}
	for i := range 4 {
		if raw, err := f.usage.RawEvents(ctx, fmt.Sprintf("g%d", i)); err != nil || len(raw) != 1 {
			t.Errorf("g%d: %v %v, want one event on one shard", i, raw, err)
		}
	}
}

// TestUnfinishedWriteIsRepaired: a write that died after storing events
// but before its rollups and enrolment (its intent left in the directory)
// is repaired by the next read, from the raw events: they count once, and
// their students are enrolled.
func TestUnfinishedWriteIsRepaired(t *testing.T) {
	f := newFixture(t)
	f.group("north")
	ev := event("north", "e1", "s1", day, analytics.TutorMeMessages)
	ev.StudentName = "Ada"
	if _, err := f.appendEvents([]analytics.Event{ev}); err != nil {
		t.Fatal(err)
	}
	p, _, err := f.locks.Placement(ctx, "north")
	if err != nil {
		t.Fatal(err)
	}
	// The dead write: intent recorded, two events stored, then nothing.
	died := errors.New("died")
	err = f.locks.WithGroupLock(ctx, "north", func(tx writebehind.GroupLock) error {
		intent := fmt.Sprintf(`{"months":[%d],"students":[{"ID":"s2","Name":"Grace"},{"ID":"s3","Name":"Never stored"}]}`,
			analytics.DayOf(day, time.UTC).MonthStart())
		if _, err := tx.MarkIntent(ctx, []byte(intent)); err != nil {
			return err
		}
		err := f.usage.InsertRawEvents(ctx, p, []analytics.Event{
			event("north", "e2", "s2", day, analytics.TutorMeMessages),
			event("north", "e3", "s2", day.Add(time.Hour), analytics.SessionsCreated),
		})
		return errors.Join(err, died)
	})
	if !errors.Is(err, died) {
		t.Fatal(err)
	}
	if p, _, _ := f.locks.Placement(ctx, "north"); p.Intent == nil {
		t.Fatal("the dead write left no intent")
	}
	r := f.dayRollup("north")
	if r.Counts[analytics.TutorMeMessages] != 2 || r.Counts[analytics.SessionsCreated] != 1 ||
		r.ChatUsers.Len() != 2 || r.LiveLectureUsers.Len() != 1 {
		t.Errorf("after repair: %+v, want 2 tutor_me, 1 session, 2 chat users, 1 live lecture user", r)
	}
	if p, _, _ := f.locks.Placement(ctx, "north"); p.Intent != nil {
		t.Errorf("intent %s left after repair", p.Intent)
	}
	students, err := f.dir.Students(ctx, "north")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(students) != "[{north s1 Ada} {north s2 Grace}]" {
		t.Errorf("students %v: want s1 Ada and s2 Grace (s3's events never landed)", students)
	}
	res, err := f.appendEvents([]analytics.Event{event("north", "e2", "s2", day, analytics.TutorMeMessages),
		event("north", "e4", "s1", day, analytics.TutorMeMessages)})
	if err != nil || res.Accepted != 1 || res.Duplicates != 1 {
		t.Errorf("re-sent: %+v %v, want 1 accepted, 1 duplicate", res, err)
	}
	if got := f.dayRollup("north").Counts[analytics.TutorMeMessages]; got != 3 {
		t.Errorf("tutor_me %d, want 3", got)
	}
}

// TestReadWhileAWriteIsUnfinished: a read that cannot repair an
// unfinished write in time reads as of the write before it, also after an
// attempt to repair it died too (which numbered it anew): the dead write's
// rows are not counted until it is repaired, and then from the raw events.
func TestReadWhileAWriteIsUnfinished(t *testing.T) {
	f := newFixture(t)
	f.group("north")
	if _, err := f.appendEvents([]analytics.Event{event("north", "e1", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Fatal(err)
	}
	p, _, err := f.locks.Placement(ctx, "north")
	if err != nil {
		t.Fatal(err)
	}
	// The dead write: intent recorded, group rows of e2 stored, then
	// nothing; then a repair that died after numbering it anew.
	died := errors.New("died")
	err = f.locks.WithGroupLock(ctx, "north", func(tx writebehind.GroupLock) error {
		intent := fmt.Sprintf(`{"months":[%d],"whole":%d}`, analytics.DayOf(day, time.UTC).MonthStart(), p.Seq)
		seq, err := tx.MarkIntent(ctx, []byte(intent))
		if err != nil {
			return err
		}
		err = f.usage.InsertGroupRows(ctx, p, seq, []analytics.Event{event("north", "e2", "s2", day, analytics.MainChatMessages)})
		return errors.Join(err, died)
	})
	if !errors.Is(err, died) {
		t.Fatal(err)
	}
	err = f.locks.WithGroupLock(ctx, "north", func(tx writebehind.GroupLock) error {
		dead, _, err := tx.Placement(ctx)
		if err != nil {
			return err
		}
		_, err = tx.MarkIntent(ctx, dead.Intent)
		return errors.Join(err, died)
	})
	if !errors.Is(err, died) {
		t.Fatal(err)
	}

	chstore.SetReadRepairWait(t, 0) // no time to repair
	if r := f.dayRollup("north"); r.Counts[analytics.MainChatMessages] != 1 || r.ChatUsers.Len() != 1 {
		t.Errorf("read without repair: %+v, want 1 message of 1 chat user (the dead write's rows not counted)", r)
	}
	chstore.SetReadRepairWait(t, 2*time.Second)
	if r := f.dayRollup("north"); r.Counts[analytics.MainChatMessages] != 1 || r.ChatUsers.Len() != 1 {
		t.Errorf("read after repair: %+v, want 1 message of 1 chat user (e2 never stored)", r)
	}
}

// TestStudentNumberedByADeadWriteIsEnrolled: a write that died after
// numbering a new student, before storing their events, leaves an ordinal
// and no enrolment; the student's events, sent again, enrol them.
func TestStudentNumberedByADeadWriteIsEnrolled(t *testing.T) {
	f := newFixture(t)
	f.group("west")
	if _, err := f.appendEvents([]analytics.Event{event("west", "e1", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Fatal(err)
	}
	p, _, err := f.locks.Placement(ctx, "west")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.usage.NumberStudents(ctx, p, []string{"s2"}); err != nil {
		t.Fatal(err)
	}
	res, err := f.appendEvents([]analytics.Event{event("west", "e2", "s2", day, analytics.MainChatMessages)})
	if err != nil || res.Accepted != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	students, err := f.dir.Students(ctx, "west")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(students) != "[{west s1 s1} {west s2 s2}]" {
		t.Errorf("students %v: want s1 and s2 enrolled", students)
	}
}

// TestCountsReadWhenNeeded: a group report keeps a state without the
// students' counts; a write on it, and a student report after, read them
// whole: every student's counts are there, once.
func TestCountsReadWhenNeeded(t *testing.T) {
	f := newFixture(t)
	f.group("north")
	d := analytics.DayOf(day, time.UTC)
	seg := []analytics.Segment{{Span: analytics.SpanDay, Keys: analytics.DayRange{First: d, Last: d}}}
	totals := func() []analytics.Counts {
		t.Helper()
		sum := [][]analytics.Counts{nil}
		if err := f.usage.StudentTotals(ctx, "north", seg, sum); err != nil {
			t.Fatal(err)
		}
		return sum[0]
	}
	if _, err := f.appendEvents([]analytics.Event{event("north", "e1", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Fatal(err)
	}
	f.dayRollup("north") // a group report: the state without counts
	if _, err := f.appendEvents([]analytics.Event{event("north", "e2", "s2", day, analytics.MainChatMessages),
		event("north", "e3", "s1", day, analytics.MainChatMessages)}); err != nil {
		t.Fatal(err)
	}
	f.dayRollup("north")
	var sum int64
	got := totals()
	for _, c := range got {
		sum += c[analytics.MainChatMessages]
	}
	if sum != 3 || len(got) < 2 {
		t.Errorf("students' counts %v: %d messages, want 3 of two students", got, sum)
	}
	if r := f.dayRollup("north"); r.Counts[analytics.MainChatMessages] != 3 || r.ChatUsers.Len() != 2 {
		t.Errorf("day rollup %+v, want 3 messages of 2 chat users", r)
	}
}

func TestParseURL(t *testing.T) {
	cfg, err := chstore.ParseURL("clickhouse://ops:s3cret@ch1:9000,ch2:9000/usage")
	if err != nil || cfg.Database != "usage" || cfg.User != "ops" || cfg.Password != "s3cret" || len(cfg.Shards) != 2 || cfg.Shards[1] != "ch2:9000" {
		t.Errorf("ParseURL: %+v, %v", cfg, err)
	}
	cfg, err = chstore.ParseURL("clickhouse://ops:p%7Cw@a1:9000|a2:9000,b1:9000|b2:9000/usage")
	if err != nil || cfg.Password != "p|w" || !slices.Equal(cfg.Shards, []string{"a1:9000|a2:9000", "b1:9000|b2:9000"}) {
		t.Errorf("ParseURL of replicated shards: %+v, %v", cfg, err)
	}
	for raw, want := range map[string]string{
		"clickhouse://ch1:9000":            "name the database",
		"clickhouse://ch1:9000/":           "name the database",
		"clickhouse://ch1:9000/a-b":        `database name "a-b"`,
		"clickhouse://ch1/usage":           `shard "ch1": want host:port`,
		"clickhouse://ch1:9000,ch1:9000/u": "server ch1:9000 named twice",
		"clickhouse://a:1|b:1,a:1|c:1/u":   "server a:1 named twice",
		"clickhouse://a:1|b:1,c:1/u":       "shard c:1 names 1 replicas, the first shard 2",
		"clickhouse://a:1|/u":              `shard "": want host:port`,
		"postgres://ch1:9000/usage":        "want clickhouse://",
	} {
		if _, err := chstore.ParseURL(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseURL(%q): %v, want an error saying %q", raw, err, want)
		}
	}
}

// TestErasureRepairedLeavesItsReceipt: an erasure that dies after its
// intent (a replica down answers 503, and its caller writes no receipt)
// is finished by the group's next write, or by the erasure asked again
// (which then finds the student gone, as a retry of a finished erasure
// does, and its caller writes no second receipt), and the finish writes
// the receipt the caller could not: one, naming who asked and when; the
// student is gone from the rollups and the directory, and later writes
// and reads write none. (A read finishes it too when it can within its
// time; on a replicated shard the deletion may take longer, and the read
// answers as of the write before.)
func TestErasureRepairedLeavesItsReceipt(t *testing.T) {
	for _, finish := range []struct {
		by       string
		do       func(f *fixture) error
		sessions int64 // s2's, after it
	}{
		{"the next write", func(f *fixture) error {
			_, err := f.appendEvents([]analytics.Event{event("north", "e3", "s2", day, analytics.SessionsCreated)})
			return err
		}, 2},
		{"the erasure asked again", func(f *fixture) error {
			if _, err := f.usage.EraseStudent(ctx, "north", "s1"); analytics.ErrorCode(err) != analytics.NotFound {
				return fmt.Errorf("the erasure asked again: %v, want not found", err)
			}
			return nil
		}, 1},
	} {
		t.Run(finish.by, func(t *testing.T) {
			f := newFixture(t)
			f.group("north")
			if _, err := f.appendEvents([]analytics.Event{event("north", "e1", "s1", day, analytics.TutorMeMessages),
				event("north", "e2", "s2", day, analytics.SessionsCreated)}); err != nil {
				t.Fatal(err)
			}
			began := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
			died := errors.New("died")
			err := f.locks.WithGroupLock(ctx, "north", func(tx writebehind.GroupLock) error {
				intent := fmt.Sprintf(`{"months":[%d],"erase":"s1","erasedBy":"token tok_1 (platform)","eraseBegan":%d}`,
					analytics.DayOf(day, time.UTC).MonthStart(), began.UnixMilli())
				if _, err := tx.MarkIntent(ctx, []byte(intent)); err != nil {
					return err
				}
				return died
			})
			if !errors.Is(err, died) {
				t.Fatal(err)
			}
			if err := finish.do(f); err != nil {
				t.Fatal(err)
			}
			if r := f.dayRollup("north"); r.Counts[analytics.TutorMeMessages] != 0 || r.Counts[analytics.SessionsCreated] != finish.sessions ||
				r.ChatUsers.Len() != 0 || r.LiveLectureUsers.Len() != 1 {
				t.Errorf("after the repair: %+v, want s1's usage gone and s2's %d sessions", r, finish.sessions)
			}
			receipts, err := f.dir.Receipts(ctx, "north")
			if err != nil {
				t.Fatal(err)
			}
			if len(receipts) != 1 || receipts[0].StudentID != "s1" || receipts[0].Action != analytics.ActionStudentErased ||
				receipts[0].RequestedBy != "token tok_1 (platform)" || !receipts[0].Began.Equal(began) || receipts[0].Finished.Before(began) {
				t.Fatalf("receipts %+v, want one of s1's erasure, asked by tok_1 at %s", receipts, began)
			}
			if students, err := f.dir.Students(ctx, "north"); err != nil || fmt.Sprint(students) != "[{north s2 s2}]" {
				t.Errorf("students %v (%v), want s2 alone", students, err)
			}
			if _, err := f.appendEvents([]analytics.Event{event("north", "e4", "s2", day, analytics.SessionsCreated)}); err != nil {
				t.Fatal(err)
			}
			f.dayRollup("north")
			if again, _ := f.dir.Receipts(ctx, "north"); len(again) != 1 {
				t.Errorf("%d receipts after another write and read, want 1", len(again))
			}
		})
	}
}
