package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/stores/storetest"
)

// bearer is the header of a platform token, or none for "".
func bearer(token string) []string {
	if token == "" {
		return nil
	}
	return []string{"Authorization", "Bearer " + token}
}

// behindProxy returns a server on a fresh PostgreSQL database reached
// through a proxy, with a call timeout of 3 s.
func behindProxy(t *testing.T) (*testEnv, *storetest.Proxy) {
	dbURL, err := url.Parse(storetest.NewPostgresDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := storetest.NewProxy(t, dbURL.Host)
	dbURL.Host = proxy.Addr()
	return newEnv(t, storetest.SQL(storetest.OpenWith(t, dbURL.String(), 3*time.Second))), proxy
}

// TestPostgresOutage: while the database is unreachable every request gets
// a quick 503 and /readyz fails; when it is back the service answers again
// by itself, with nothing lost.
func TestPostgresOutage(t *testing.T) {
	e, proxy := behindProxy(t)
	key := e.school("north", "UTC")
	token := e.token()
	e.send(session("north", "s1", "2026-11-20T10:00:00Z"))
	if got := e.reports("live-lecture", key, "")[0].value("Sessions Made"); got != 1 {
		t.Fatalf("before the outage: %d sessions", got)
	}

	proxy.Cut()
	for _, req := range []struct{ method, path, key, token, body string }{
		{"POST", "/api/groups/live-lecture", key, "", ""},
		{"POST", "/api/groups/chat", key, "", ""},
		{"POST", "/v1/events", "", token, eventsJSON(session("north", "s1", "2026-11-20T11:00:00Z"))},
		{"GET", "/v1/admin/groups", "", token, ""},
		{"GET", "/readyz", "", "", ""},
	} {
		start := time.Now()
		resp := e.do(req.method, req.path, req.key, req.body, bearer(req.token)...)
		if resp.status != http.StatusServiceUnavailable {
			t.Errorf("%s %s during the outage: %d %s, want 503", req.method, req.path, resp.status, resp.body)
		}
		if msg := resp.errorMessage(t); msg != "Service unavailable" && msg != "Not ready: the store cannot be reached" {
			t.Errorf("%s %s: message %q", req.method, req.path, msg)
		}
		if h := resp.header.Get("WWW-Authenticate"); h != "" {
			t.Errorf("%s %s: a 503 with WWW-Authenticate %q: the token was not at fault", req.method, req.path, h)
		}
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("%s %s took %s: a 503 must come quickly, not after a hang", req.method, req.path, d)
		}
	}
	if resp := e.do("GET", "/healthz", "", ""); resp.status != http.StatusOK {
		t.Errorf("/healthz during the outage: %d; the process itself is alive", resp.status)
	}

	proxy.Start(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp := e.do("GET", "/readyz", "", ""); resp.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the service did not recover within 20s of the database coming back")
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.send(session("north", "s1", "2026-11-20T12:00:00Z"))
	if got := e.reports("live-lecture", key, "")[0].value("Sessions Made"); got != 2 {
		t.Errorf("after the outage: %d sessions, want 2 (the one before, the one after)", got)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "store unavailable") {
		t.Errorf("the outage was not logged:\n%s", logs)
	}

}

// TestPostgresSilentDrop: when the path to the database drops packets
// rather than refusing them, every request still answers within a bounded
// time (a 503, after the store's call timeout), and the service recovers
// by itself when the path comes back, with nothing acknowledged lost.
func TestPostgresSilentDrop(t *testing.T) {
	e, proxy := behindProxy(t)
	key := e.school("north", "UTC")
	token := e.token()
	e.send(session("north", "s1", "2026-11-20T10:00:00Z"))

	proxy.Drop()
	var wg sync.WaitGroup
	for _, req := range []struct{ method, path, key, token, body string }{
		{"POST", "/api/groups/live-lecture", key, "", ""},
		{"POST", "/api/groups/chat", key, "", "{\"students\": true}"},
		{"POST", "/v1/events", "", token, eventsJSON(session("north", "s1", "2026-11-20T11:00:00Z"))},
		{"GET", "/v1/admin/groups", "", token, ""},
		{"DELETE", "/v1/admin/groups/north/students/s1", "", token, ""},
		{"GET", "/readyz", "", "", ""},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp := e.do(req.method, req.path, req.key, req.body, bearer(req.token)...)
			if resp.status != http.StatusServiceUnavailable {
				t.Errorf("%s %s while packets drop: %d %s, want 503", req.method, req.path, resp.status, resp.body)
			}
			// The store's call timeout is 3s; the answer must come with it.
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("%s %s took %s", req.method, req.path, d)
			}
		}()
	}
	wg.Wait()
	proxy.Restore()
	deadline := time.Now().Add(30 * time.Second)
	for e.do("GET", "/readyz", "", "").status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the service did not recover within 30s of the path coming back")
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.send(session("north", "s1", "2026-11-20T11:00:00Z"), session("north", "s1", "2026-11-20T12:00:00Z"))
	if got := e.reports("live-lecture", key, "")[0].value("Sessions Made"); got != 3 {
		t.Errorf("after the drop: %d sessions, want 3", got)
	}
}
