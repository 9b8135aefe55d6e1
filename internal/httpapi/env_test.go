package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	reportengine "groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
)

// testNow is the fixed time the tests run at, unless they move the clock.
var testNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// clock is a movable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// testEnv is a real server on a real store, over real HTTP.
type testEnv struct {
	t        *testing.T
	store    analytics.Directory
	platform *platform.Platform
	server   *httptest.Server
	clock    *clock
	logs     *syncBuffer
	nextID   int
}

func newEnv(t *testing.T, stores storetest.Stores) *testEnv {
	return newEnvWith(t, stores, func(*httpapi.Config) {})
}

// newEnvWith is newEnv with the server's configuration changed by tune.
func newEnvWith(t *testing.T, stores storetest.Stores, tune func(*httpapi.Config)) *testEnv {
	e := &testEnv{t: t, store: stores.Directory, clock: &clock{t: testNow}, logs: &syncBuffer{}}
	e.platform = platform.New(stores.Directory, stores.Usage)
	e.platform.Now = e.clock.Now
	cfg := httpapi.Config{
		Engine:   reportengine.NewEngine(stores.Directory, stores.Usage),
		Platform: e.platform,
		Ready:    stores.Ping,
		Log:      slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:      e.clock.Now,
	}
	// The server's address is its public one, where sign-in's providers
	// send people back.
	e.server = httptest.NewUnstartedServer(nil)
	cfg.PublicURL = "http://" + e.server.Listener.Addr().String()
	tune(&cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", e.logs.String())
		}
	})
	e.server.Config.Handler = httpapi.New(cfg)
	e.server.Start()
	t.Cleanup(e.server.Close)
	return e
}

// forEachStore runs a test once per store kind, each with a fresh store.
func forEachStore(t *testing.T, fn func(t *testing.T, e *testEnv)) {
	storetest.Each(t, func(t *testing.T, s storetest.Stores) { fn(t, newEnv(t, s)) })
}

var ctx = context.Background()

// school creates a group in zone with a plan valid since 2024 and returns
// a key of it.
func (e *testEnv) school(id, zone string) string {
	e.t.Helper()
	if _, err := e.platform.CreateGroup(ctx, id, "School "+id, zone); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.platform.AddPlan(ctx, id, "2024-01-01", "", 0); err != nil {
		e.t.Fatal(err)
	}
	return e.key(id)
}

func (e *testEnv) key(groupID string) string {
	e.t.Helper()
	_, secret, err := e.platform.CreateKey(ctx, groupID, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

func (e *testEnv) enrol(groupID, studentID, name string) {
	e.t.Helper()
	if _, err := e.platform.AddStudent(ctx, groupID, studentID, name); err != nil {
		e.t.Fatal(err)
	}
}

// session is a live_lecture.session_created event.
func session(group, student, at string) platform.EventInput {
	return platform.EventInput{GroupID: group, StudentID: student, OccurredAt: at, Kind: analytics.KindSessionCreated}
}

// message is a chat.message_sent event.
func message(group, student, chatType, at string) platform.EventInput {
	return platform.EventInput{GroupID: group, StudentID: student, OccurredAt: at, Kind: analytics.KindMessageSent, ChatType: chatType}
}

// send ingests events, giving each without an id a fresh one, and fails
// the test on any rejection.
func (e *testEnv) send(events ...platform.EventInput) platform.IngestResult {
	e.t.Helper()
	batch := make([]json.RawMessage, len(events))
	for i, ev := range events {
		if ev.ID == "" {
			e.nextID++
			ev.ID = fmt.Sprintf("ev-%06d", e.nextID)
		}
		batch[i], _ = json.Marshal(ev)
	}
	res, err := e.platform.Ingest(ctx, batch, false)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(res.Rejected) > 0 {
		e.t.Fatalf("events rejected: %+v", res.Rejected)
	}
	return res
}

// response is what the server answered.
type response struct {
	status int
	header http.Header
	body   []byte // decoded
	sent   int    // bytes on the wire
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, r.body)
	}
	return v
}

// errorMessage returns the error of a {"error": ...} body, failing the test
// if the body is anything else.
func (r response) errorMessage(t *testing.T) string {
	t.Helper()
	v := r.json(t)
	msg, ok := v["error"].(string)
	if !ok || len(v) != 1 {
		t.Fatalf("error body is not {\"error\": string}: %s", r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q, want application/json", ct)
	}
	return msg
}

// do sends a request with an optional x-api-key (empty: none).
func (e *testEnv) do(method, path, key string, body string, header ...string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.server.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: b, sent: len(b)}
	if r.body, err = decode(resp.Header.Get("Content-Encoding"), b); err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	openAPI().check(e.t, method, req.URL.Path, r)
	return r
}

// decode undoes a Content-Encoding: none, gzip or zstd.
func decode(encoding string, b []byte) ([]byte, error) {
	var r io.Reader
	switch encoding {
	case "":
		return b, nil
	case "gzip":
		gz, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		r = gz
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("unexpected Content-Encoding %q", encoding)
	}
	return io.ReadAll(r)
}

// reportRequest posts to a report endpoint ("live-lecture" or "chat").
func (e *testEnv) reportRequest(endpoint, key, query, body string) response {
	e.t.Helper()
	path := "/api/groups/" + endpoint
	if query != "" {
		path += "?" + query
	}
	return e.do("POST", path, key, body)
}

// report is one decoded report.
type report struct {
	StartDate       string   `json:"startDate"`
	EndDate         string   `json:"endDate"`
	NumStudentsUsed *int     `json:"numStudentsUsed,omitempty"`
	StudentName     *string  `json:"studentName,omitempty"`
	StudentID       *string  `json:"studentId,omitempty"`
	Data            []metric `json:"data"`
}

type metric struct {
	Title string `json:"title"`
	Value int64  `json:"value"`
}

// value returns the value of the metric titled title.
func (r report) value(title string) int64 {
	for _, m := range r.Data {
		if m.Title == title {
			return m.Value
		}
	}
	panic("no metric " + title)
}

// reports asks for reports and fails the test unless it gets a 200.
func (e *testEnv) reports(endpoint, key, query string) []report {
	e.t.Helper()
	resp := e.reportRequest(endpoint, key, query, "")
	return decodeReports(e.t, resp)
}

func decodeReports(t *testing.T, resp response) []report {
	t.Helper()
	if resp.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", resp.status, resp.body)
	}
	var env struct {
		Success bool     `json:"success"`
		Reports []report `json:"reports"`
	}
	dec := json.NewDecoder(bytes.NewReader(resp.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("bad envelope: %v\n%s", err, resp.body)
	}
	if !env.Success || env.Reports == nil {
		t.Fatalf("envelope without success or reports: %s", resp.body)
	}
	return env.Reports
}
