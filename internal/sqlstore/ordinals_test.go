package sqlstore_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/stores/storetest"
)

// TestStudentsNumberedOnFirstEvent: a student's ordinal is handed out by
// their first event (in the order the students come), in the row that enrols them or, for a student
// enrolled before, on their enrolment (their name kept unless the event
// names them); numbers are never handed out twice, not even after an
// erasure; and each numbering changes the group's roster version, where a
// later day of use does not.
func TestStudentsNumberedOnFirstEvent(t *testing.T) {
	storetest.EachSQL(t, func(t *testing.T, store *sqlstore.Store) {
		ctx := context.Background()
		withGroup(t, store)
		at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
		seq := 0
		send := func(students ...analytics.StudentUpdate) {
			t.Helper()
			var events []analytics.Event
			for _, s := range students {
				seq++
				events = append(events, analytics.Event{GroupID: "g", ID: studentOf(seq), StudentID: s.ID, StudentName: s.Name,
					OccurredAt: at, Day: analytics.DayOf(at, time.UTC), Metric: analytics.MainChatMessages})
			}
			if res, err := store.AppendEvents(ctx, events); err != nil || res.Accepted != len(events) {
				t.Fatalf("%+v %v", res, err)
			}
		}
		version := func() string {
			t.Helper()
			v, err := store.RosterVersion(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		expect := func(after string, want map[string]int, names map[string]string) {
			t.Helper()
			got, err := store.Ordinals(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Errorf("after %s: ordinals %v, want %v", after, got, want)
			}
			students, err := store.Students(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			enrolled := map[string]string{}
			for _, s := range students {
				enrolled[s.ID] = s.Name
			}
			if !maps.Equal(enrolled, names) {
				t.Errorf("after %s: students %v, want %v", after, enrolled, names)
			}
		}

		if err := store.AddStudent(ctx, analytics.Student{GroupID: "g", ID: "ann", Name: "Ann"}); err != nil {
			t.Fatal(err)
		}
		if err := store.AddStudent(ctx, analytics.Student{GroupID: "g", ID: "bob", Name: "Bob"}); err != nil {
			t.Fatal(err)
		}
		expect("two enrolments", map[string]int{}, map[string]string{"ann": "Ann", "bob": "Bob"})

		before := version()
		send(analytics.StudentUpdate{ID: "ann"})
		expect("an enrolled student's first event", map[string]int{"ann": 0}, map[string]string{"ann": "Ann", "bob": "Bob"})
		if version() == before {
			t.Error("numbering a student left the roster version as it was")
		}

		send(analytics.StudentUpdate{ID: "cy"}, analytics.StudentUpdate{ID: "bob", Name: "Robert"}, analytics.StudentUpdate{ID: "cy"})
		expect("a new student's first events, and an enrolled one's naming them", map[string]int{"ann": 0, "cy": 1, "bob": 2},
			map[string]string{"ann": "Ann", "bob": "Robert", "cy": "cy"})

		before = version()
		send(analytics.StudentUpdate{ID: "ann"}, analytics.StudentUpdate{ID: "cy"})
		if version() != before {
			t.Error("events of numbered students changed the roster version")
		}
		// A later day moves the student's last days, kept on their
		// enrolment, and leaves the roster as it was.
		at = at.AddDate(0, 0, 3)
		send(analytics.StudentUpdate{ID: "ann"})
		if version() != before {
			t.Error("a numbered student's later day changed the roster version")
		}
		last := [][]analytics.Counts{nil}
		if err := store.StudentTotals(ctx, "g", []analytics.Segment{analytics.LastDaysSegment}, last); err != nil {
			t.Fatal(err)
		}
		if got, want := analytics.LastUseOf(&last[0][0]).Chat, analytics.DayOf(at, time.UTC); got != want {
			t.Errorf("ann's last day of chat %s, want %s", got, want)
		}

		if _, err := store.EraseStudent(ctx, "g", "bob"); err != nil {
			t.Fatal(err)
		}
		send(analytics.StudentUpdate{ID: "bob"}, analytics.StudentUpdate{ID: "dee", Name: "Dee"})
		expect("an erasure and two new students", map[string]int{"ann": 0, "cy": 1, "bob": 3, "dee": 4},
			map[string]string{"ann": "Ann", "bob": "bob", "cy": "cy", "dee": "Dee"})
	})
}
