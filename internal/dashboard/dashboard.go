// Package dashboard holds the schools' dashboard: a page and its assets,
// embedded in the binary, that read the public report endpoints with the
// key a school enters. Chart.js is its one third-party asset, vendored
// from npm (see web/package.json).
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// files are the page and its assets.
var files, _ = fs.Sub(static, "static")

// securityHeaders keep the page to its own assets and its own origin: no
// inline script, no third-party connection, no framing.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Embedded files have no dates: ask the browser to check each time.
	h.Set("Cache-Control", "no-cache")
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
