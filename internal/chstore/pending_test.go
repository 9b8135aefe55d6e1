package chstore_test

import (
	"context"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
)

// TestReadsWhileTheLogCannotBeApplied: with a replica of the shard down,
// events are acknowledged into the log and cannot be applied. A read's
// Settle still answers, and its reads count the applied rows and the
// log's events once each, a new student enrolled and numbered; a
// writer's Settle waits for the replica, as before. Once it is back, the
// log is applied and the figures are the same. The first read answers
// within its deadline though the failing quorum insert waits longer: it
// gives the apply half its time, and folds the log in the rest.
func TestReadsWhileTheLogCannotBeApplied(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a replicated ClickHouse cluster and kills a replica")
	}
	cluster := storetest.NewReplicatedCluster(t, 20600, 1, 2)
	url := cluster.URL("pending")
	dsn := storetest.NewPostgresDatabase(t)
	s := storetest.OpenClickHouse(t, dsn, url)
	f := &fixture{t: t, dir: s.Directory, locks: s.Directory, usage: s.Usage.(*chstore.Store), dsn: dsn, url: url}
	f.group("g")
	if _, err := f.appendEvents([]analytics.Event{
		event("g", "e1", "s1", day, analytics.MainChatMessages), event("g", "e2", "s2", day, analytics.MainChatMessages),
		event("g", "e3", "s1", day, analytics.SessionsCreated)}); err != nil {
		t.Fatal(err)
	}

	cluster.KillReplica(1, 2)
	// The operators' probe sees the replica down, its peer up and writable.
	health := f.usage.Health(ctx)
	if len(health) != 2 || !health[0].Up || health[0].ReadonlyTables != 0 || health[1].Up {
		t.Errorf("Health with the second replica killed: %+v, want the first up and writable, the second down", health)
	}
	newcomer := event("g", "e5", "s3", day, analytics.MainChatMessages)
	newcomer.StudentName = "Cara"
	res, err := f.usage.AppendEvents(ctx, []analytics.Event{
		event("g", "e4", "s1", day, analytics.MainChatMessages), newcomer, event("g", "e1", "s1", day, analytics.MainChatMessages)})
	if err != nil || res.Accepted != 2 || res.Duplicates != 1 {
		t.Fatalf("appending with a replica down: %+v %v, want 2 accepted and 1 duplicate", res, err)
	}
	check := func(when string, within time.Duration) {
		t.Helper()
		start := time.Now()
		bounded, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		read, err := f.usage.Settle(analytics.ReadsOnly(bounded), "g")
		if err != nil {
			t.Fatalf("%s: a read's Settle: %v", when, err)
		}
		took := time.Since(start)
		if took > within {
			t.Errorf("%s: a read's Settle took %v, want its deadline (%v) at most", when, took, within)
		}
		rows, err := f.usage.GroupRollups(read, "g", daySegment())
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: %v %+v", when, err, rows)
		}
		r := rows[0]
		if r.Counts[analytics.MainChatMessages] != 4 || r.Counts[analytics.SessionsCreated] != 1 || r.ChatUsers.Len() != 3 || r.LiveLectureUsers.Len() != 1 {
			t.Errorf("%s: the day's row %+v, want 4 messages of 3 students and a session of 1", when, r)
		}
		ords, err := f.usage.Ordinals(read, "g")
		if err != nil || len(ords) != 3 {
			t.Errorf("%s: ordinals %v %v, want the 3 students'", when, ords, err)
		}
		students, err := f.dir.Students(ctx, "g")
		if err != nil || len(students) != 3 || students[2].ID != "s3" || students[2].Name != "Cara" {
			t.Errorf("%s: the directory's students %+v %v, want s3 enrolled as Cara", when, students, err)
		}
		t.Logf("%s: the read's Settle took %v", when, took)
	}
	// The quorum insert of the first read's apply waits 5 s for the
	// replica before it fails.
	check("the first read", 4*time.Second)
	check("a second read", time.Second)
	if _, err := f.usage.Settle(ctx, "g"); analytics.ErrorCode(err) != analytics.Unavailable {
		t.Errorf("a writer's Settle with a replica down: %v, want unavailable", err)
	}
	start := time.Now()
	if _, err := f.usage.Settle(analytics.ReadsOnly(ctx), "g"); err != nil || time.Since(start) > time.Second {
		t.Errorf("a read's Settle once the apply is known to fail: %v after %v, want an answer within a second", err, time.Since(start))
	}

	cluster.Start()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, err := f.usage.Settle(ctx, "g"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the log was not applied within a minute of the replica's return: %v", err)
		}
	}
	if r := f.dayRollup("g"); r.Counts[analytics.MainChatMessages] != 4 || r.ChatUsers.Len() != 3 {
		t.Errorf("once applied: %+v, want 4 messages of 3 students", r)
	}
	storetest.CheckReplicasAlike(t, url)
}
