package httpapi_test

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/sqlstore/storetest"
)

// tcpProxy forwards a local address to a target, and can cut every
// connection and refuse new ones, as a database outage would.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func (p *tcpProxy) start(t *testing.T) {
	t.Helper()
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { io.Copy(server, client); server.Close() }()
			go func() { io.Copy(client, server); client.Close() }()
		}
	}()
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestPostgresOutage: while the database is unreachable every request gets
// a quick 503 and /readyz fails; when it is back the service answers again
// by itself, with nothing lost.
func TestPostgresOutage(t *testing.T) {
	dbURL, err := url.Parse(storetest.NewPostgresDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := &tcpProxy{target: dbURL.Host}
	proxy.start(t)
	t.Cleanup(proxy.cut)
	dbURL.Host = proxy.addr
	store, err := sqlstore.Open(ctx, dbURL.String(), sqlstore.Options{CallTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, store)
	key := e.school("north", "UTC")
	token := e.token()
	e.send(session("north", "s1", "2026-11-20T10:00:00Z"))
	if got := e.reports("live-lecture", key, "")[0].value("Sessions Made"); got != 1 {
		t.Fatalf("before the outage: %d sessions", got)
	}

	proxy.cut()
	for _, req := range []struct{ method, path, key, token, body string }{
		{"POST", "/api/groups/live-lecture", key, "", ""},
		{"POST", "/api/groups/chat", key, "", ""},
		{"POST", "/v1/events", "", token, eventsJSON(session("north", "s1", "2026-11-20T11:00:00Z"))},
		{"GET", "/v1/admin/groups", "", token, ""},
		{"GET", "/readyz", "", "", ""},
	} {
		start := time.Now()
		var header []string
		if req.token != "" {
			header = []string{"Authorization", "Bearer " + req.token}
		}
		resp := e.do(req.method, req.path, req.key, req.body, header...)
		if resp.status != http.StatusServiceUnavailable {
			t.Errorf("%s %s during the outage: %d %s, want 503", req.method, req.path, resp.status, resp.body)
		}
		if msg := resp.errorMessage(t); msg != "Service unavailable" && msg != "Not ready: the store cannot be reached" {
			t.Errorf("%s %s: message %q", req.method, req.path, msg)
		}
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("%s %s took %s: a 503 must come quickly, not after a hang", req.method, req.path, d)
		}
	}
	if resp := e.do("GET", "/healthz", "", ""); resp.status != http.StatusOK {
		t.Errorf("/healthz during the outage: %d; the process itself is alive", resp.status)
	}

	proxy.start(t)
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
