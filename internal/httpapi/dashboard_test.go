package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"groupanalytics/internal/stores/storetest"
)

// TestDashboardIsServed: GET / is the dashboard's page, its assets are
// under /assets/, every answer keeps the page to its own origin, and what
// is not an asset is a JSON 404. (The page itself is tested in a browser:
// internal/cli's TestDashboardInBrowser.)
func TestDashboardIsServed(t *testing.T) {
	e := newEnv(t, storetest.OpenKind(t, "sqlite"))
	for path, contentType := range map[string]string{
		"/":                 "text/html; charset=utf-8",
		"/assets/app.js":    "text/javascript; charset=utf-8",
		"/assets/style.css": "text/css; charset=utf-8",
	} {
		resp := e.do("GET", path, "", "")
		if resp.status != http.StatusOK || resp.header.Get("Content-Type") != contentType {
			t.Errorf("%s: %d %q", path, resp.status, resp.header.Get("Content-Type"))
		}
		if csp := resp.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
	}
	resp, err := http.Get(e.server.URL + "/assets/vendor/chart.umd.min.js")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("Chart.js: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	for _, path := range []string{"/assets/", "/assets/nope.js", "/assets/vendor/", "/index.html", "/assets/../go.mod"} {
		if resp := e.do("GET", path, "", ""); resp.status != http.StatusNotFound || resp.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q, want a JSON 404", path, resp.status, resp.header.Get("Content-Type"))
		}
	}
	if resp := e.do("POST", "/", "", ""); resp.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", resp.status)
	}
}
