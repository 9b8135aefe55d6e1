package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
)

// BenchmarkRecordAccess records access log entries one after the other,
// as student reports do before their first figures: of all students, and
// of one student asked for by id.
func BenchmarkRecordAccess(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			store := storetest.Open(b, d)
			ctx := context.Background()
			if err := store.CreateGroup(ctx, analytics.Group{ID: "g", Name: "g", TimeZone: "UTC"}); err != nil {
				b.Fatal(err)
			}
			if err := store.AddStudent(ctx, analytics.Student{GroupID: "g", ID: "s1", Name: "s1"}); err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct {
				name     string
				students []string
			}{{"all", nil}, {"one", []string{"s1"}}} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						if err := store.RecordAccess(ctx, analytics.AccessEntry{GroupID: "g", At: time.Now(), KeyID: "k", Client: "127.0.0.1",
							Endpoint: "/api/groups/chat", Format: "json", StartDate: "2026-01-01", EndDate: "2026-12-31",
							Interval: "none", StudentIDs: c.students}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
