package sqlstore_test

import (
	"context"
	"database/sql"
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
			store := withGroup(t, storetest.OpenDSN(t, storetest.NewDSN(t, dialect)))
			for i := range callers {
				if err := store.AddStudent(ctx, analytics.Student{GroupID: "g", ID: studentOf(i), Name: "n"}); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					e := entryOf(i, studentOf(i), "not-enrolled", studentOf(i))
					e.Interval, e.ClassIDs = "week", []string{fmt.Sprintf("c%02d", i)}
					if err := store.RecordAccess(ctx, e); err != nil {
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
	store := withGroup(t, storetest.OpenDSN(t, dsn))
	record := func() error {
		return store.RecordAccess(ctx, entryOf(1))
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

// TestAccessFoldsShared: two processes serving one store (two stores open
// on its file or database) record entries at once for longer than the
// entries wait between folds, each folding them as it does. Every entry
// either recorded is in the log once, read through either.
func TestAccessFoldsShared(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.NewDSN(t, dialect)
			stores := []*sqlstore.Store{withGroup(t, storetest.OpenDSN(t, dsn)), storetest.OpenDSN(t, dsn)}
			until := time.Now().Add(1500 * time.Millisecond)
			var recorded atomic.Int64
			var wg sync.WaitGroup
			for i := range 8 {
				store := stores[i%2]
				wg.Go(func() {
					for time.Now().Before(until) {
						if err := store.RecordAccess(ctx, entryOf(i)); err != nil {
							t.Error(err)
							return
						}
						recorded.Add(1)
						time.Sleep(time.Millisecond) // answers apart: thousands of entries, not a million to read back
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
		})
	}
}

// TestAccessEntryFoldedAfterErasure: an entry recorded before one of its
// students is erased, and folded into the log after (or before: the fold
// comes within a second), counts the student as erased and names the
// others. On PostgreSQL an entry left in access_pending by a group
// deleted since is dropped by the next fold, and nothing is left waiting.
func TestAccessEntryFoldedAfterErasure(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.NewDSN(t, dialect)
			store := withGroup(t, storetest.OpenDSN(t, dsn))
			for i := range 2 {
				if err := store.AddStudent(ctx, analytics.Student{GroupID: "g", ID: studentOf(i), Name: "n"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := store.RecordAccess(ctx, entryOf(1, studentOf(0), studentOf(1))); err != nil {
				t.Fatal(err)
			}
			if _, err := store.EraseStudent(ctx, "g", studentOf(0)); err != nil {
				t.Fatal(err)
			}
			got, err := store.AccessLog(ctx, "g", analytics.AccessFilter{Limit: 10})
			if err != nil || len(got) != 1 || !slices.Equal(got[0].StudentIDs, []string{studentOf(1)}) || got[0].ErasedStudents != 1 {
				t.Fatalf("the log after %s's erasure: %+v, %v; want one entry naming %s, one student erased", studentOf(0), got, err, studentOf(1))
			}
			if dialect != "postgres" {
				return // the journal's entry of a deleted group: TestAccessJournalFoldsOnce
			}
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, `INSERT INTO access_pending (group_id, entry) VALUES
				('gone', '["gone", 1790000000000, "k", "10.0.0.9", "/api/groups/chat", "json", "2026-01-01", "2026-01-31", "day", "[]", 0, "[]"]')`); err != nil {
				t.Fatal(err)
			}
			if got, err := store.AccessLog(ctx, "g", analytics.AccessFilter{Limit: 10}); err != nil || len(got) != 1 {
				t.Fatalf("the log after a fold of a deleted group's entry: %+v, %v; want g's one entry", got, err)
			}
			var left, logged int
			if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM access_pending), (SELECT COUNT(*) FROM access_log)`).Scan(&left, &logged); err != nil || left != 0 || logged != 1 {
				t.Errorf("after the fold: %d entries waiting, %d logged, %v; want none waiting and g's one logged", left, logged, err)
			}

			// An erasure that commits while a fold names its student: the
			// fold, failing the foreign key, folds again without them.
			erasure, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer erasure.Rollback()
			if _, err := erasure.ExecContext(ctx, `DELETE FROM students WHERE group_id = 'g' AND student_id = $1`, studentOf(1)); err != nil {
				t.Fatal(err)
			}
			if err := store.RecordAccess(ctx, entryOf(2, studentOf(1))); err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(300 * time.Millisecond) // the fold waits for the erasure, on the student's row
				erasure.Commit()
			}()
			got, err = store.AccessLog(ctx, "g", analytics.AccessFilter{Limit: 10})
			if err != nil || len(got) != 2 || len(got[0].StudentIDs) != 0 || got[0].ErasedStudents != 1 || len(got[1].StudentIDs) != 0 {
				t.Errorf("the log after an erasure racing its fold: %+v, %v; want two entries naming no one", got, err)
			}
		})
	}
}

// withGroup creates group g in store and returns the store.
func withGroup(tb testing.TB, store *sqlstore.Store) *sqlstore.Store {
	tb.Helper()
	if err := store.CreateGroup(context.Background(), analytics.Group{ID: "g", Name: "g", TimeZone: "UTC"}); err != nil {
		tb.Fatal(err)
	}
	return store
}

// entryOf is an entry of group g's log: client i's answer of January by
// day, naming the students given (none: all of them).
func entryOf(i int, students ...string) analytics.AccessEntry {
	return analytics.AccessEntry{GroupID: "g", At: time.Now(), KeyID: "k", Client: clientOf(i), Endpoint: "/api/groups/chat",
		Format: "json", StartDate: "2026-01-01", EndDate: "2026-01-31", Interval: "day", StudentIDs: students}
}

func studentOf(i int) string { return fmt.Sprintf("s%02d", i) }

func clientOf(i int) string { return fmt.Sprintf("10.0.0.%d", i) }
