package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/stores/storetest"
)

// TestAccessEntriesWrittenTogether: many answers record their entries at
// once, so that PostgreSQL's writer puts several in one statement and
// SQLite's journal folds several in one transaction, each naming a
// student of its own twice and one who is not enrolled. Each entry keeps
// its own fields and names its own student, once.
func TestAccessEntriesWrittenTogether(t *testing.T) {
	const callers = 48
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			store := storetest.OpenDSN(t, storetest.NewDSN(t, dialect))
			if err := store.CreateGroup(ctx, analytics.Group{ID: "g", Name: "g", TimeZone: "UTC"}); err != nil {
				t.Fatal(err)
			}
			for i := range callers {
				if err := store.AddStudent(ctx, analytics.Student{GroupID: "g", ID: studentOf(i), Name: "n"}); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					err := store.RecordAccess(ctx, analytics.AccessEntry{GroupID: "g", At: time.Now(), KeyID: "k", Client: clientOf(i),
						Endpoint: "/api/groups/chat", Format: "json", StartDate: "2026-01-01", EndDate: "2026-01-31", Interval: "week",
						ClassIDs: []string{fmt.Sprintf("c%02d", i)}, StudentIDs: []string{studentOf(i), "not-enrolled", studentOf(i)}})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			all, err := store.AccessLog(ctx, "g", analytics.AccessFilter{Limit: 1000})
			if err != nil || len(all) != callers {
				t.Fatalf("the log: %d entries, %v; want %d", len(all), err, callers)
			}
			for i := range callers {
				got, err := store.AccessLog(ctx, "g", analytics.AccessFilter{StudentID: studentOf(i), Limit: 1000})
				if err != nil || len(got) != 1 {
					t.Fatalf("%s's entries: %+v, %v; want one", studentOf(i), got, err)
				}
				e := got[0]
				if e.Client != clientOf(i) || !slices.Equal(e.StudentIDs, []string{studentOf(i)}) || e.StudentsAsked != 2 ||
					e.ErasedStudents != 1 || !slices.Equal(e.ClassIDs, []string{fmt.Sprintf("c%02d", i)}) || e.Interval != "week" {
					t.Errorf("%s's entry: %+v", studentOf(i), e)
				}
			}
		})
	}
}

// TestAccessJournalUnwritable: on SQLite an entry is written to the
// journal beside the store; while it cannot be, answers are refused as
// unavailable, and once it can, entries are written again at once.
func TestAccessJournalUnwritable(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.NewDSN(t, "sqlite")
	store := storetest.OpenDSN(t, dsn)
	if err := store.CreateGroup(ctx, analytics.Group{ID: "g", Name: "g", TimeZone: "UTC"}); err != nil {
		t.Fatal(err)
	}
	record := func() error {
		return store.RecordAccess(ctx, analytics.AccessEntry{GroupID: "g", At: time.Now(), KeyID: "k", Client: "10.0.0.1",
			Endpoint: "/api/groups/chat", Format: "json", StartDate: "2026-01-01", EndDate: "2026-01-31", Interval: "day"})
	}
	journal := dsn + "-access"
	if err := os.Mkdir(journal, 0o700); err != nil { // a directory where the file goes: no one can write it
		t.Fatal(err)
	}
	if err := record(); analytics.ErrorCode(err) != analytics.Unavailable {
		t.Fatalf("an entry the journal cannot take: %v, want unavailable", err)
	}
	time.Sleep(1500 * time.Millisecond) // a fold comes and finds no journal to fold
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	if err := record(); err != nil {
		t.Fatalf("an entry once the journal can be written: %v", err)
	}
	if got, err := store.AccessLog(ctx, "g", analytics.AccessFilter{Limit: 10}); err != nil || len(got) != 1 {
		t.Fatalf("the log: %d entries, %v; want 1", len(got), err)
	}
}

// TestAccessJournalShared: two processes serving one SQLite store (two
// stores open on its file) record entries at once for longer than the
// journal waits between folds, each folding it as it does. Every entry
// either recorded is in the log once, read through either.
func TestAccessJournalShared(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.NewDSN(t, "sqlite")
	stores := []*sqlstore.Store{storetest.OpenDSN(t, dsn), storetest.OpenDSN(t, dsn)}
	if err := stores[0].CreateGroup(ctx, analytics.Group{ID: "g", Name: "g", TimeZone: "UTC"}); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(1500 * time.Millisecond)
	var recorded atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		store := stores[i%2]
		wg.Go(func() {
			for n := 0; n < 100_000 && time.Now().Before(until); n++ {
				if err := store.RecordAccess(ctx, analytics.AccessEntry{GroupID: "g", At: time.Now(), KeyID: "k", Client: clientOf(i),
					Endpoint: "/api/groups/chat", Format: "json", StartDate: "2026-01-01", EndDate: "2026-01-31", Interval: "day"}); err != nil {
					t.Error(err)
					return
				}
				recorded.Add(1)
			}
		})
	}
	wg.Wait()
	if recorded.Load() == 0 {
		t.Fatal("no entry recorded")
	}
	for i, store := range stores {
		seen := map[int64]bool{}
		for before := int64(0); ; {
			page, err := store.AccessLog(ctx, "g", analytics.AccessFilter{Before: before, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				seen[e.ID] = true
			}
			if len(page) < 1000 {
				break
			}
			before = page[len(page)-1].ID
		}
		if int64(len(seen)) != recorded.Load() {
			t.Errorf("read through store %d: %d entries, %d recorded", i, len(seen), recorded.Load())
		}
	}
}

func studentOf(i int) string { return fmt.Sprintf("s%02d", i) }

func clientOf(i int) string { return fmt.Sprintf("10.0.0.%d", i) }
