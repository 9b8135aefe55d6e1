package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/metrics"
	"groupanalytics/internal/stores/storetest"
)

// TestCountersFromZero: a fresh server's metrics hold every counter an
// alert takes the rate of, at zero, before anything happened.
func TestCountersFromZero(t *testing.T) {
	m := metrics.New()
	newEnvWith(t, storetest.SQL(storetest.Open(t, "sqlite")), func(c *httpapi.Config) { c.Metrics = m })
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`groupanalytics_events_total{result="accepted"} 0`, `groupanalytics_events_total{result="rejected"} 0`,
		`groupanalytics_store_errors_total{kind="unavailable"} 0`, `groupanalytics_store_errors_total{kind="internal"} 0`,
		`groupanalytics_rate_limited_total{limit="failed_auth"} 0`, `groupanalytics_digests_total{result="given_up"} 0`,
		`groupanalytics_warehouse_runs_total{result="failed"} 0`,
		`groupanalytics_http_requests_total{method="POST",route="/api/groups/chat",status="503"} 0`,
		`groupanalytics_http_requests_total{method="POST",route="/v1/events",status="500"} 0`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("a fresh server's metrics lack %s", want)
		}
	}
}

// TestStoreErrorsCounted: a store that cannot answer is a 503 and a count
// in the metrics.
func TestStoreErrorsCounted(t *testing.T) {
	store := storetest.Open(t, "sqlite")
	m := metrics.New()
	e := newEnvWith(t, storetest.SQL(store), func(c *httpapi.Config) { c.Metrics = m })
	key := e.school("north", "UTC")
	store.Close()
	if resp := e.reportRequest("chat", key, "", ""); resp.status != http.StatusServiceUnavailable {
		t.Fatalf("closed store: %d %s", resp.status, resp.body)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`groupanalytics_store_errors_total{kind="unavailable"} 1`,
		`groupanalytics_http_requests_total{method="POST",route="/api/groups/chat",status="503"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
