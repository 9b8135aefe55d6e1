package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
)

// TestAccessEntriesWrittenTogether: many answers record their entries at
// once, so that the writer puts several in one write, each naming a
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

// TestAccessLogWALSyncedSoon: on SQLite an entry's commit is not synced,
// and the writer syncs the WAL within a second of it. A sync that fails
// (here: the WAL hidden from the writer's open, which SQLite keeps
// writing through its own descriptor) fails the entries that follow, and
// once the WAL can be synced again they are written.
func TestAccessLogWALSyncedSoon(t *testing.T) {
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
	if err := record(); err != nil {
		t.Fatal(err)
	}
	wal, hidden := dsn+"-wal", dsn+"-wal.hidden"
	if err := os.Rename(wal, hidden); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // the sync due a second after the entry fails (a second to spare for a busy machine)
	err := record()
	if renameErr := os.Rename(hidden, wal); renameErr != nil {
		t.Fatal(renameErr)
	}
	if analytics.ErrorCode(err) != analytics.Unavailable {
		t.Fatalf("an entry after a failed sync: %v, want unavailable", err)
	}
	if err := record(); err != nil {
		t.Fatalf("an entry once the WAL syncs again: %v", err)
	}
	if got, err := store.AccessLog(ctx, "g", analytics.AccessFilter{Limit: 10}); err != nil || len(got) != 2 {
		t.Fatalf("the log: %d entries, %v; want 2", len(got), err)
	}
}

func studentOf(i int) string { return fmt.Sprintf("s%02d", i) }

func clientOf(i int) string { return fmt.Sprintf("10.0.0.%d", i) }
