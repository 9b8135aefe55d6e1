package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

func BenchmarkIngest(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			store := storetest.Open(b, d)
			p := platform.New(store, store)
			ctx := context.Background()
			p.CreateGroup(ctx, "g", "", "UTC")
			n := 0
			b.ResetTimer()
			for range b.N {
				batch := make([]json.RawMessage, 1000)
				for i := range batch {
					batch[i], _ = json.Marshal(platform.EventInput{ID: fmt.Sprintf("i%09d", n), GroupID: "g", StudentID: fmt.Sprintf("s%04d", n%1000),
						OccurredAt: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), Kind: "chat.message_sent", ChatType: "main"})
					n++
				}
				if _, err := p.Ingest(ctx, batch, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
