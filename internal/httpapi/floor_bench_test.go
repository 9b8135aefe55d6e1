package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/metrics"
	"groupanalytics/internal/platform"
	reportengine "groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
)

// BenchmarkFloor times the floor request (a report of a group without
// usage) through real HTTP on loopback, without and with the production
// rate limits (too high to refuse) and metrics, to tell what they cost:
//
//	go test ./internal/httpapi -run XXX -bench Floor -count 6
func BenchmarkFloor(b *testing.B) {
	store := storetest.Open(b, "sqlite")
	p := platform.New(store, store)
	if _, err := p.CreateGroup(ctx, "north", "North", "UTC"); err != nil {
		b.Fatal(err)
	}
	if _, err := p.AddPlan(ctx, "north", "2024-01-01", "", 0); err != nil {
		b.Fatal(err)
	}
	_, key, err := p.CreateKey(ctx, "north", "bench")
	if err != nil {
		b.Fatal(err)
	}
	limits := httpapi.DefaultLimits
	limits.Key = httpapi.Rate{N: 1_000_000, Per: time.Second}
	for _, c := range []struct {
		name    string
		limits  httpapi.Limits
		metrics *metrics.Metrics
	}{
		{"plain", httpapi.Limits{}, nil},
		{"limits+metrics", limits, metrics.New()},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: reportengine.NewEngine(store, store), Platform: platform.New(store, store),
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Limits: c.limits, Metrics: c.metrics}))
			defer srv.Close()
			for b.Loop() {
				req, _ := http.NewRequest("POST", srv.URL+"/api/groups/chat?startDate=2025-01-01&endDate=2025-12-31", nil)
				req.Header.Set("x-api-key", key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatal(resp, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
