package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
)

// BenchmarkBulkAppend appends time-ordered batches of 100,000 events of
// 10,000 students, ten per active student-day, as the bulk loader does.
func BenchmarkBulkAppend(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			store := withGroup(b, storetest.Open(b, d))
			ctx := context.Background()
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			n := 0
			b.ResetTimer()
			for range b.N {
				batch := make([]analytics.Event, 100_000)
				for i := range batch {
					student := (n / 10) % 10_000
					at := start.Add(time.Duration(n/30_000) * 24 * time.Hour).Add(time.Duration(n%86_400) * time.Second)
					batch[i] = analytics.Event{GroupID: "g", ID: fmt.Sprintf("e%010d", n), StudentID: fmt.Sprintf("s%06d", student),
						OccurredAt: at, Metric: analytics.Metric(n % int(analytics.NumMetrics)), Day: analytics.DayOf(at, time.UTC)}
					n++
				}
				if _, err := store.AppendEvents(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkAppendOne appends one event at a time, one call after the
// other, to a group of 1,000 students that has a day of usage: what a
// batch of one costs the writer (go test -cpuprofile tells where).
func BenchmarkAppendOne(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			store := withGroup(b, storetest.Open(b, d))
			ctx := context.Background()
			at := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
			event := func(n int) analytics.Event {
				return analytics.Event{GroupID: "g", ID: fmt.Sprintf("e%010d", n), StudentID: fmt.Sprintf("s%06d", n%1000),
					OccurredAt: at, Metric: analytics.Metric(n % int(analytics.NumMetrics)), Day: analytics.DayOf(at, time.UTC)}
			}
			var day []analytics.Event
			for n := range 5000 {
				day = append(day, event(n))
			}
			if _, err := store.AppendEvents(ctx, day); err != nil {
				b.Fatal(err)
			}
			n := len(day)
			for b.Loop() {
				if _, err := store.AppendEvents(ctx, []analytics.Event{event(n)}); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}

// BenchmarkAppendFirehose appends one event a call from 256 goroutines
// at once, to 1,000 groups, each event a student's first, as the bench's
// firehose sends them but without HTTP: what the merged writes cost the
// writer (go test -cpuprofile tells where).
func BenchmarkAppendFirehose(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			store := storetest.Open(b, d)
			ctx := context.Background()
			const groups, callers = 1000, 256
			for g := range groups {
				if err := store.CreateGroup(ctx, analytics.Group{ID: fmt.Sprintf("g%04d", g), Name: "g", TimeZone: "UTC"}); err != nil {
					b.Fatal(err)
				}
			}
			at := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					for {
						n := next.Add(1) - 1
						if n >= int64(b.N) {
							return
						}
						e := analytics.Event{GroupID: fmt.Sprintf("g%04d", n%groups), ID: fmt.Sprintf("e%010d", n), StudentID: fmt.Sprintf("s%07d", n/groups),
							OccurredAt: at, Metric: analytics.Metric(n % int64(analytics.NumMetrics)), Day: analytics.DayOf(at, time.UTC)}
						if _, err := store.AppendEvents(ctx, []analytics.Event{e}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
