package warehouse_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
	"groupanalytics/internal/warehouse"
)

// BenchmarkBackfill writes a year of schools of 150 students (a third
// of them active a day, three events each) to a folder: the cost of a
// school's year, which the bench's backfill multiplies by its schools.
func BenchmarkBackfill(b *testing.B) {
	b.Run("folder", func(b *testing.B) {
		backfill(b, func() warehouse.Sink { return warehouse.Folder{Root: b.TempDir()} })
	})
	b.Run("bucket", func(b *testing.B) {
		endpoint := os.Getenv("GROUPANALYTICS_TEST_S3")
		if endpoint == "" {
			b.Skip("no GROUPANALYTICS_TEST_S3")
		}
		backfill(b, func() warehouse.Sink {
			bucket, err := warehouse.OpenBucket(analytics.Warehouse{Endpoint: endpoint, Bucket: s3Bucket, AccessKey: s3AccessKey, SecretKey: s3SecretKey,
				Prefix: fmt.Sprintf("bench/%d", time.Now().UnixNano())})
			if err != nil {
				b.Fatal(err)
			}
			return bucket
		})
	})
}

func backfill(b *testing.B, sink func() warehouse.Sink) {
	const schools, students, days = 4, 150, 365
	s := storetest.SQL(storetest.Open(b, "sqlite"))
	p := platform.New(s.Directory, s.Usage)
	p.Now = func() time.Time { return now }
	rng := rand.New(rand.NewPCG(1, 1))
	var groups []analytics.Group
	first := analytics.DayOf(now, time.UTC) - days
	for i := range schools {
		id := fmt.Sprintf("school-%d", i)
		g, err := p.CreateGroup(ctx, id, "School "+id, "UTC")
		if err != nil {
			b.Fatal(err)
		}
		groups = append(groups, g)
		var batch []json.RawMessage
		flush := func() {
			if _, err := p.Ingest(ctx, batch, false); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
		for d := first; d < first+days; d++ {
			for st := range students {
				if rng.IntN(3) != 0 {
					continue
				}
				for k := range 3 {
					ev := platform.EventInput{ID: fmt.Sprintf("%d-%d-%d", d, st, k), GroupID: id, StudentID: fmt.Sprintf("s%03d", st),
						OccurredAt: d.Start(time.UTC).Add(time.Duration(rng.IntN(86400)) * time.Second).Format(time.RFC3339),
						Kind:       analytics.KindMessageSent, ChatType: "tutor_me"}
					if k == 0 {
						ev.Kind, ev.ChatType = analytics.KindSessionCreated, ""
					}
					raw, _ := json.Marshal(ev)
					batch = append(batch, raw)
				}
			}
			if len(batch) > 5000 {
				flush()
			}
		}
		flush()
	}
	engine := report.NewEngine(s.Directory, s.Usage)
	b.ResetTimer()
	for b.Loop() {
		w := warehouse.NewWriter(engine, sink(), analytics.FormatParquet, now)
		for _, g := range groups {
			if _, err := w.WriteSchool(ctx, g, analytics.DayRange{First: first, Last: first + days - 1}, now); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Finish(ctx, now); err != nil {
			b.Fatal(err)
		}
		w.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*schools), "ms/school-year")
}
