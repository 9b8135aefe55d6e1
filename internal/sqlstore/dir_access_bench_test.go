package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
)

// BenchmarkRecordAccess records access log entries one after the other,
// as student reports do before their first figures: of all students, of
// one student asked for by id, and of all students from 16 callers at
// once.
func BenchmarkRecordAccess(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			store := withGroup(b, storetest.Open(b, d))
			ctx := context.Background()
			if err := store.AddStudent(ctx, analytics.Student{GroupID: "g", ID: "s1", Name: "s1"}); err != nil {
				b.Fatal(err)
			}
			record := func(b *testing.B, students []string) {
				if err := store.RecordAccess(ctx, analytics.AccessEntry{GroupID: "g", At: time.Now(), KeyID: "k", Client: "127.0.0.1",
					Endpoint: "/api/groups/chat", Format: "json", StartDate: "2026-01-01", EndDate: "2026-12-31",
					Interval: "none", StudentIDs: students}); err != nil {
					b.Error(err)
				}
			}
			b.Run("all", func(b *testing.B) {
				for b.Loop() {
					record(b, nil)
				}
			})
			b.Run("one", func(b *testing.B) {
				for b.Loop() {
					record(b, []string{"s1"})
				}
			})
			// Many answers at once share their commits.
			b.Run("all, 16 at once", func(b *testing.B) {
				b.SetParallelism(8) // 16 goroutines on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						record(b, nil)
					}
				})
			})
		})
	}
}
