package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestServeMetrics: with --metrics-addr, the metrics are served on that
// listener only, in the Prometheus format, and they move with the
// requests: routes and statuses, events by result, the writer's merged
// writes and queue, the shares of the rollups waiting for a fold,
// rate-limited requests, the Go runtime and the build.
func TestServeMetrics(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	mustRun(t, "plan", "set", "--db", db, "--group", "north", "--start", "2025-01-01")
	key := regexp.MustCompile(`gak_\w+`).FindString(mustRun(t, "key", "create", "--db", db, "--group", "north"))
	token := regexp.MustCompile(`gat_\w+`).FindString(mustRun(t, "token", "create", "--db", db))
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var stderr bytes.Buffer
	go func() {
		done <- Main(ctx, []string{"serve", "--db", db, "--addr", addr, "--metrics-addr", metricsAddr,
			"--key-rate-limit", "2/m", "--log-level", "warn"}, nil, io.Discard, &stderr)
	}()
	defer func() { cancel(); <-done }()
	request := func(method, url, header, value, body string) *http.Response {
		t.Helper()
		return askUntilUp(t, method, url, header, value, body, &stderr)
	}
	events := `[{"id":"e1","groupId":"north","studentId":"s1","occurredAt":"2025-03-01T10:00:00Z","kind":"live_lecture.session_created"},
		{"id":"e1","groupId":"north","studentId":"s1","occurredAt":"2025-03-01T10:00:00Z","kind":"live_lecture.session_created"},
		{"id":"e2","groupId":"north","studentId":"s1","occurredAt":"2025-03-01T10:00:00Z","kind":"bogus"}]`
	request("POST", "http://"+addr+"/v1/events", "Authorization", "Bearer "+token, events).Body.Close()
	for range 3 {
		request("POST", "http://"+addr+"/api/groups/chat", "x-api-key", key, "").Body.Close()
	}
	if resp := request("GET", "http://"+addr+"/metrics", "", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the public listener: %d, want 404", resp.StatusCode)
	}
	resp := request("GET", "http://"+metricsAddr+"/metrics", "", "", "")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`groupanalytics_http_requests_total{method="POST",route="/api/groups/chat",status="200"} 2`,
		`groupanalytics_http_requests_total{method="POST",route="/api/groups/chat",status="429"} 1`,
		`groupanalytics_http_requests_total{method="GET",route="other",status="404"} 1`,
		`groupanalytics_http_request_duration_seconds_count{method="POST",route="/v1/events"} 1`,
		`groupanalytics_events_total{result="accepted"} 1`,
		`groupanalytics_events_total{result="duplicate"} 1`,
		`groupanalytics_events_total{result="rejected"} 1`,
		`groupanalytics_rate_limited_total{limit="key"} 1`,
		`groupanalytics_writer_merged_calls_count 1`,
		`groupanalytics_writer_merged_events_sum 2`,
		`groupanalytics_writer_queue_depth 0`,
		// The event's share of the rollups was folded by the report
		// that followed it.
		`groupanalytics_log_events 0`,
		`groupanalytics_log_oldest_event_age_seconds 0`,
		`groupanalytics_build_info{goversion="go`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}
