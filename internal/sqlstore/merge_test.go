package sqlstore_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
)

// TestMergedWritesOfManyGroups: many callers send one event each, over
// many groups, most of them naming a student the group has not seen, so
// that the writer merges calls of many groups into one transaction. Every
// group then numbers each of its students once, with numbers of its own
// (0…n-1), and enrols each under its name when an event named it.
func TestMergedWritesOfManyGroups(t *testing.T) {
	const groups, callers, perCaller = 40, 64, 25
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			store := storetest.OpenDSN(t, storetest.NewDSN(t, dialect))
			for g := range groups {
				if err := store.CreateGroup(ctx, analytics.Group{ID: fmt.Sprintf("g%02d", g), Name: "g", TimeZone: "UTC"}); err != nil {
					t.Fatal(err)
				}
			}
			at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
			var mu sync.Mutex
			named := map[[2]string]bool{} // the students an event named
			var wg sync.WaitGroup
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perCaller {
						e := analytics.Event{GroupID: fmt.Sprintf("g%02d", (c*7+i)%groups), ID: fmt.Sprintf("c%d-%d", c, i),
							StudentID: fmt.Sprintf("s%d", (c+i*3)%50), OccurredAt: at, Metric: analytics.Metric(i % 2), Day: analytics.DayOf(at, time.UTC)}
						if i%3 == 0 {
							e.StudentName = nameOf(e.GroupID, e.StudentID)
						}
						res, err := store.AppendEvents(ctx, []analytics.Event{e})
						if err == nil && e.StudentName != "" {
							mu.Lock()
							named[[2]string{e.GroupID, e.StudentID}] = true
							mu.Unlock()
						}
						if err != nil || res.Accepted != 1 {
							t.Errorf("append %s: %+v, %v", e.ID, res, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			for g := range groups {
				id := fmt.Sprintf("g%02d", g)
				ordinals, err := store.Ordinals(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				students, err := store.Students(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if len(students) != len(ordinals) || len(students) == 0 {
					t.Fatalf("%s: %d students enrolled, %d numbered", id, len(students), len(ordinals))
				}
				numbers := slices.Sorted(maps.Values(ordinals))
				for i, n := range numbers {
					if n != i {
						t.Fatalf("%s: ordinals %v, want 0…%d each once", id, numbers, len(numbers)-1)
					}
				}
				for _, st := range students {
					want := st.ID
					if named[[2]string{id, st.ID}] {
						want = nameOf(id, st.ID)
					}
					if _, ok := ordinals[st.ID]; !ok || st.Name != want {
						t.Errorf("%s: student %s named %q (numbered: %v), want %q", id, st.ID, st.Name, ok, want)
					}
				}
			}
		})
	}
}

func nameOf(groupID, studentID string) string { return "Student " + studentID + " of " + groupID }
