package chstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
)

// TestWriteBehindLog: an acknowledged event waits in the directory's log
// until a read of its group (Settle) or the applier writes it to
// ClickHouse; sent again, it is a duplicate whether logged or applied;
// erasing its student takes it out of the log; past the log's bound, a
// call is refused at once.
func TestWriteBehindLog(t *testing.T) {
	chstore.SetApplyEvery(t, time.Hour) // only reads apply
	f := newFixture(t)
	f.group("north")
	msg := func(id, student string) analytics.Event {
		return event("north", id, student, day, analytics.MainChatMessages)
	}
	appended := func(events ...analytics.Event) string {
		t.Helper()
		res, err := f.usage.AppendEvents(ctx, events)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d accepted, %d duplicates", res.Accepted, res.Duplicates)
	}
	stored := func() []string {
		t.Helper()
		raw, err := f.usage.RawEvents(ctx, "north")
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(raw))
	}

	if got := appended(msg("e1", "s1"), msg("e2", "s2"), msg("e1", "s1")); got != "2 accepted, 1 duplicates" {
		t.Errorf("first call: %s, want 2 accepted, 1 duplicates", got)
	}
	if got := stored(); len(got) != 0 {
		t.Errorf("stored before any read: %v, want nothing (the events wait in the log)", got)
	}
	if n, _ := f.usage.LogStats(); n != 2 {
		t.Errorf("log depth %d, want 2", n)
	}
	if got := appended(msg("e1", "s1"), msg("e3", "s3")); got != "1 accepted, 1 duplicates" {
		t.Errorf("an id sent again while logged: %s, want 1 accepted, 1 duplicates", got)
	}
	if _, err := f.usage.EraseStudent(ctx, "north", "s2"); err != nil {
		t.Errorf("erasing a student whose only event is logged: %v", err)
	}
	if _, err := f.usage.Settle(ctx, "north"); err != nil {
		t.Fatal(err)
	}
	if got := stored(); !slices.Equal(got, []string{"e1", "e3"}) {
		t.Errorf("stored after Settle: %v, want e1 and e3 (e2 erased)", got)
	}
	students, err := f.dir.Students(ctx, "north")
	if err != nil || fmt.Sprint(students) != "[{north s1 s1} {north s3 s3}]" {
		t.Errorf("students after Settle: %v %v, want s1 and s3", students, err)
	}
	if got := appended(msg("e1", "s1")); got != "0 accepted, 1 duplicates" {
		t.Errorf("an id sent again once applied: %s, want a duplicate", got)
	}

	appended(msg("e4", "s1"))
	chstore.SetMaxLogged(t, 0)
	start := time.Now()
	if _, err := f.usage.AppendEvents(ctx, []analytics.Event{msg("e5", "s1")}); analytics.ErrorCode(err) != analytics.Unavailable || time.Since(start) > time.Second {
		t.Errorf("a call past the log's bound: %v after %v, want unavailable at once", err, time.Since(start))
	}
}

// TestAppliesDyingBeforeTheirCommits: an apply that stores the logged
// events and dies before its commit leaves them in the log; a second that
// dies too, after storing newer events, replaces the first one's intent
// with its own; the apply that commits enrols every student of the events
// it takes out of the log, stored before or not, and each counts once.
func TestAppliesDyingBeforeTheirCommits(t *testing.T) {
	chstore.SetApplyEvery(t, time.Hour) // only the test applies
	f := newFixture(t)
	f.group("north")
	for i, student := range []string{"s1", "s2"} {
		ev := event("north", fmt.Sprintf("e%d", i+1), student, day, analytics.MainChatMessages)
		ev.StudentName = strings.ToUpper(student)
		if _, err := f.usage.AppendEvents(ctx, []analytics.Event{ev}); err != nil {
			t.Fatal(err)
		}
		if err := f.usage.ApplyDying(ctx, "north"); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := f.usage.LogStats(); n != 2 {
		t.Errorf("log depth %d after two applies that died, want 2", n)
	}
	if _, err := f.usage.Settle(ctx, "north"); err != nil {
		t.Fatal(err)
	}
	students, err := f.dir.Students(ctx, "north")
	slices.SortFunc(students, func(a, b analytics.Student) int { return strings.Compare(a.ID, b.ID) })
	if err != nil || fmt.Sprint(students) != "[{north s1 S1} {north s2 S2}]" {
		t.Errorf("students %v %v, want s1 and s2", students, err)
	}
	if r := f.dayRollup("north"); r.Counts[analytics.MainChatMessages] != 2 || r.ChatUsers.Len() != 2 {
		t.Errorf("day rollup %+v, want 2 messages of 2 chat users", r)
	}
}

// TestApplierWritesBehind: without a read, the applier writes what the
// log holds to ClickHouse by itself, and the log's figures go back to
// nothing.
func TestApplierWritesBehind(t *testing.T) {
	chstore.SetApplyEvery(t, 50*time.Millisecond)
	f := newFixture(t)
	f.group("west")
	if _, err := f.usage.AppendEvents(ctx, []analytics.Event{event("west", "e1", "s1", day, analytics.SessionsCreated)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		raw, err := f.usage.RawEvents(ctx, "west")
		n, age := f.usage.LogStats()
		if err == nil && len(raw) == 1 && n == 0 && age == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: stored %v (%v), log %d events, oldest %v; want the event applied", raw, err, n, age)
		}
	}
}

// TestApplierVacuumsTheLog: every event applied leaves a dead row in the
// log's table, which each read of the log walks past; once a process has
// applied logVacuumEvents events since the last (here, the last of them),
// it vacuums the table itself, also where autovacuum is off (as on the
// test server): its dead rows are gone, and the vacuum is counted as one
// asked for.
func TestApplierVacuumsTheLog(t *testing.T) {
	chstore.SetApplyEvery(t, 20*time.Millisecond)
	chstore.SetLogVacuumEvents(t, 150)
	f := newFixture(t)
	f.group("west")
	db, err := sql.Open("pgx", f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 150 {
		e := event("west", fmt.Sprintf("e%d", i), fmt.Sprintf("s%d", i%20), day, analytics.SessionsCreated)
		if _, err := f.usage.AppendEvents(ctx, []analytics.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	// The dead rows are counted in the table's pages (pgstattuple), not
	// in pg_stat_user_tables: a backend reports the rows it deleted up to
	// 10 s late, so a vacuum's count of none may be raised after it by
	// rows it did remove (CI saw 150 "dead" after the vacuum).
	if _, err := db.Exec(`CREATE EXTENSION IF NOT EXISTS pgstattuple`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		// A transaction of its own each time: a backend keeps the
		// figures it read until its transaction ends.
		var vacuums, dead int64
		err := db.QueryRow(`SELECT s.vacuum_count, t.dead_tuple_count FROM pg_stat_user_tables s, pgstattuple('usage_log') t
			WHERE s.relname = 'usage_log'`).Scan(&vacuums, &dead)
		if err == nil && vacuums > 0 && dead == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: the log vacuumed %d times, %d dead rows (%v); want a vacuum that left none", vacuums, dead, err)
		}
	}
	if n, _ := f.usage.LogStats(); n != 0 {
		t.Errorf("%d events still logged once the log was vacuumed, want none", n)
	}
	if raw, err := f.usage.RawEvents(ctx, "west"); err != nil || len(raw) != 150 {
		t.Errorf("stored %d events (%v), want 150", len(raw), err)
	}
}

// TestOneProcessApplies: of two processes on one directory, one leads the
// appliers and writes in the background what either logged; when it
// ends, the other takes over.
func TestOneProcessApplies(t *testing.T) {
	chstore.SetApplyEvery(t, 50*time.Millisecond)
	dsn, url := storetest.NewPostgresDatabase(t), storetest.NewClickHouseURL(t)
	first, second := storetest.OpenClickHouse(t, dsn, url), storetest.OpenClickHouse(t, dsn, url)
	// Each tries to lead every 50 ms: wait until one does.
	var leader, other storetest.Stores
	for deadline := time.Now().Add(10 * time.Second); leader.Directory == nil; time.Sleep(20 * time.Millisecond) {
		for _, pair := range [][2]storetest.Stores{{first, second}, {second, first}} {
			if lead, err := pair[0].Directory.LeadApplier(ctx); err != nil {
				t.Fatal(err)
			} else if lead {
				leader, other = pair[0], pair[1]
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("after 10 s, neither process leads")
		}
	}
	if lead, err := other.Directory.LeadApplier(ctx); err != nil || lead {
		t.Fatalf("both processes lead (%v)", err)
	}
	if err := leader.Directory.CreateGroup(ctx, analytics.Group{ID: "west", Name: "west", TimeZone: "UTC", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	applied := func(reader storetest.Stores, n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			raw, err := reader.Usage.(*chstore.Store).RawEvents(ctx, "west")
			if logged, _, _, _ := reader.Directory.LoggedPlacement(ctx, "west"); err == nil && len(raw) == n && !logged {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s: stored %d events (%v), want %d applied in the background", len(raw), err, n)
			}
		}
	}
	// What the other process logs, the leader applies.
	if _, err := other.Usage.AppendEvents(ctx, []analytics.Event{event("west", "e1", "s1", day, analytics.SessionsCreated)}); err != nil {
		t.Fatal(err)
	}
	applied(leader, 1)
	// The leader ends: the other takes over, and applies what it logs.
	if err := leader.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Usage.AppendEvents(ctx, []analytics.Event{event("west", "e2", "s1", day, analytics.SessionsCreated)}); err != nil {
		t.Fatal(err)
	}
	applied(other, 2)
	if lead, err := other.Directory.LeadApplier(ctx); err != nil || !lead {
		t.Fatalf("the process left does not lead (%v)", err)
	}
}

// TestLargeCallWrittenAtOnce: a group's events past the threshold in one
// call are stored in ClickHouse when the call answers, after what the log
// held of the group, and the answer counts exactly: an id the log holds,
// or the call holds twice, is a duplicate.
func TestLargeCallWrittenAtOnce(t *testing.T) {
	chstore.SetApplyEvery(t, time.Hour) // only reads apply
	chstore.SetDirectEvents(t, 4)
	f := newFixture(t)
	f.group("east")
	msg := func(id string) analytics.Event { return event("east", id, "s-"+id, day, analytics.TestMessages) }
	if res, err := f.usage.AppendEvents(ctx, []analytics.Event{msg("e1"), msg("e2")}); err != nil || res.Accepted != 2 {
		t.Fatalf("small call: %+v %v", res, err)
	}
	res, err := f.usage.AppendEvents(ctx, []analytics.Event{msg("e2"), msg("e3"), msg("e4"), msg("e3"), msg("e5")})
	if err != nil || res.Accepted != 3 || res.Duplicates != 2 {
		t.Errorf("large call: %+v %v, want 3 accepted (e3, e4, e5), 2 duplicates (e2 logged, e3 twice)", res, err)
	}
	raw, err := f.usage.RawEvents(ctx, "east")
	if got := slices.Sorted(maps.Keys(raw)); err != nil || !slices.Equal(got, []string{"e1", "e2", "e3", "e4", "e5"}) {
		t.Errorf("stored when the large call answered: %v %v, want e1…e5 (the log's first)", got, err)
	}
	if r := f.dayRollup("east"); r.Counts[analytics.TestMessages] != 5 || r.ChatUsers.Len() != 5 {
		t.Errorf("day rollup %+v, want 5 test messages of 5 students", r)
	}
	res, err = f.usage.AppendEvents(ctx, []analytics.Event{msg("e1"), msg("e2"), msg("e3"), msg("e6")})
	if err != nil || res.Accepted != 1 || res.Duplicates != 3 {
		t.Errorf("large call again: %+v %v, want 1 accepted, 3 duplicates", res, err)
	}
}

// TestReadsStartFromSettle: the reads made with the context Settle
// returns start from the placement it read, as of its write number, and
// take a state this process keeps of a later write as it is; another
// process's write after Settle is read by the next Settle's reads; and
// reads long after Settle look for the placement again, since a move
// deletes the old copy a while after it.
func TestReadsStartFromSettle(t *testing.T) {
	chstore.SetApplyEvery(t, time.Hour) // only Settle applies
	chstore.SetReadDrain(t, 100*time.Millisecond)
	chstore.SetWarmBytes(t, 0) // the processes keep only what they read
	f := newFixture(t)
	f.group("north")
	other := storetest.OpenClickHouse(t, f.dsn, f.url)
	chats := func(usage analytics.UsageStore, settled context.Context) int64 {
		t.Helper()
		d := analytics.DayOf(day, time.UTC)
		rows, err := usage.GroupRollups(settled, "north", analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: d, Last: d}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			return 0
		}
		return rows[0].Counts[analytics.MainChatMessages]
	}
	settle := func(usage analytics.UsageStore) context.Context {
		t.Helper()
		settled, err := usage.Settle(ctx, "north")
		if err != nil {
			t.Fatal(err)
		}
		return settled
	}
	send := func(usage analytics.UsageStore, id string) {
		t.Helper()
		if _, err := usage.AppendEvents(ctx, []analytics.Event{event("north", id, "s1", day, analytics.MainChatMessages)}); err != nil {
			t.Fatal(err)
		}
	}
	empty := settle(f.usage)
	if got := chats(f.usage, empty); got != 0 {
		t.Errorf("before any event: %d chats", got)
	}
	send(f.usage, "e1")
	first := settle(f.usage)
	if got := chats(f.usage, first); got != 1 {
		t.Errorf("after e1: %d chats, want 1", got)
	}
	send(f.usage, "e2")
	settle(f.usage) // applies e2: this process keeps the state of its write
	if got := chats(f.usage, first); got != 2 {
		t.Errorf("settled before e2, read after this process applied it: %d chats, want its kept state's 2", got)
	}
	send(other.Usage, "e3")
	settle(other.Usage)
	if got := chats(f.usage, settle(f.usage)); got != 3 {
		t.Errorf("after another process applied e3: %d chats, want 3", got)
	}
	third := storetest.OpenClickHouse(t, f.dsn, f.url) // keeps nothing of north
	beforeMove := settle(third.Usage)
	if _, err := f.usage.MoveGroup(ctx, "north", f.otherShard("north")); err != nil {
		t.Fatal(err)
	}
	if got := chats(third.Usage, beforeMove); got != 3 {
		t.Errorf("settled before a move, read after the old copy went: %d chats, want 3", got)
	}
}
