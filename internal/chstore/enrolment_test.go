package chstore

import (
	"reflect"
	"testing"

	"groupanalytics/internal/analytics"
)

// TestEnrolment: one update a student, in the order they first appear,
// with the last name an event gave them; an event without a name keeps
// the one before.
func TestEnrolment(t *testing.T) {
	event := func(student, name string) analytics.Event {
		return analytics.Event{StudentID: student, StudentName: name}
	}
	for _, tc := range []struct {
		name   string
		events []analytics.Event
		want   []analytics.StudentUpdate
	}{
		{"none", nil, nil},
		{"each once", []analytics.Event{event("b", "Bo"), event("a", "")},
			[]analytics.StudentUpdate{{ID: "b", Name: "Bo"}, {ID: "a"}}},
		{"the last name wins", []analytics.Event{event("a", "Ann"), event("b", ""), event("a", "Anna")},
			[]analytics.StudentUpdate{{ID: "a", Name: "Anna"}, {ID: "b"}}},
		{"no name keeps the one before", []analytics.Event{event("a", "Ann"), event("a", "")},
			[]analytics.StudentUpdate{{ID: "a", Name: "Ann"}}},
		{"a name after none", []analytics.Event{event("a", ""), event("a", "Ann"), event("a", "")},
			[]analytics.StudentUpdate{{ID: "a", Name: "Ann"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := enrolment(tc.events); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("enrolment = %+v, want %+v", got, tc.want)
			}
		})
	}
}
