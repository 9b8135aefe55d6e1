// Package dashboard holds the schools' dashboard: a page and its assets,
// embedded in the binary, that read the public report endpoints with the
// key a school enters. Chart.js is its one third-party asset, vendored
// from npm (see web/package.json).
package dashboard

import (
	"bytes"
	"embed"
	"html"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// files are the page and its assets.
var files, _ = fs.Sub(static, "static")

// securityHeaders keep the page to its own assets and its own origin: no
// inline script, no third-party connection, no framing.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", policy("'none'"))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Embedded files have no dates: ask the browser to check each time.
	h.Set("Cache-Control", "no-cache")
}

// policy is the pages' Content-Security-Policy, framed by these
// ancestors.
func policy(frameAncestors string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors " + frameAncestors
}

// Views a launch may open on, besides the report: the students who
// stopped.
const ViewStopped = "stopped"

// Launch is what an LTI launch's page carries: the session's token, or
// the token sealed (lti.Seal) with what opens it in the platform's
// storage (its key, frame and origin); and the view a placed link names.
type Launch struct {
	Token, View                                      string
	Sealed, StorageKey, StorageTarget, StorageOrigin string
}

// Launched serves the page that an LTI launch opens: the dashboard, with
// the launch's session token in it (which the page keeps in its tab and
// sends as its key), on the view a placed link names, framed only by the
// LMS's origins, and never cached.
func Launched(w http.ResponseWriter, r *http.Request, l Launch, frameAncestors []string) {
	page, err := fs.ReadFile(files, "index.html")
	if err != nil {
		http.Error(w, "Internal error", http.StatusInternalServerError)
		return
	}
	meta := `<meta name="groupanalytics-session" content="` + html.EscapeString(l.Token) + `"`
	for _, a := range []struct{ name, value string }{{"view", l.View}, {"sealed", l.Sealed}, {"key", l.StorageKey},
		{"target", l.StorageTarget}, {"origin", l.StorageOrigin}} {
		if a.value != "" && (a.name != "view" || a.value == ViewStopped) {
			meta += ` data-` + a.name + `="` + html.EscapeString(a.value) + `"`
		}
	}
	meta += ">\n"
	page = bytes.Replace(page, []byte("<meta charset=\"utf-8\">\n"), []byte("<meta charset=\"utf-8\">\n"+meta), 1)
	securityHeaders(w.Header())
	ancestors := strings.Join(frameAncestors, " ")
	if ancestors == "" {
		ancestors = "'none'"
	}
	w.Header().Set("Content-Security-Policy", policy(ancestors))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

// Page serves the dashboard's page.
func Page(w http.ResponseWriter, r *http.Request) {
	Asset(w, r, "index.html")
}

// Asset serves the asset named name, and reports false, having written
// nothing, when there is none.
func Asset(w http.ResponseWriter, r *http.Request, name string) bool {
	if st, err := fs.Stat(files, name); err != nil || st.IsDir() {
		return false
	}
	securityHeaders(w.Header())
	http.ServeFileFS(w, r, files, name)
	return true
}
