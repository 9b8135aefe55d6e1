package httpapi

import (
	"html/template"
	"net/http"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/dashboard"
	"groupanalytics/internal/lti"
)

// Where the LMS offers its storage (lti_storage_target) the login keeps
// its browser's secret there as well as in the cookie, which the browser
// may not keep in the LMS's page; a launch that comes without the cookie
// gets its session sealed by that secret (lti/storage.go).

// ltiStoragePage answers a login offered the platform's storage: a page
// (lti-login.js) that keeps the browser's secret in the storage under
// key, then goes on to the platform's authorization endpoint auth; where
// neither the storage nor a cookie works, it offers to begin again in a
// new window.
func (s *Server) ltiStoragePage(w http.ResponseWriter, r *http.Request, p analytics.LTIPlatform, auth, key, secret string, login analytics.LTILogin) {
	// A cookie lti-login.js can read, to tell whether the browser keeps
	// the tool's cookies here.
	probe := &http.Cookie{Name: "ga_lti_probe", Value: "1", Path: "/lti/", MaxAge: int(ltiLoginMaxAge.Seconds()), Secure: true,
		SameSite: http.SameSiteNoneMode, Partitioned: true}
	http.SetCookie(w, probe)
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors "+
		strings.Join(frameAncestors(p), " "))
	writePage(w, http.StatusOK, storagePage, map[string]string{"Auth": auth, "Target": login.StorageTarget, "Origin": lti.StorageOrigin(p.AuthURL),
		"Key": key, "Value": secret, "NewWindow": s.publicURL + "/lti/login?" + login.Query})
}

var storagePage = template.Must(template.New("storage").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Opening · Group analytics</title><link rel="stylesheet" href="/assets/style.css">
<script src="/assets/lti.js" defer></script><script src="/assets/lti-login.js" defer></script></head>
<body><main class="signin-page" id="lti-login" data-auth="{{.Auth}}" data-target="{{.Target}}" data-origin="{{.Origin}}" data-key="{{.Key}}" data-value="{{.Value}}">
<h1>Opening the usage reports</h1>
<div id="lti-new-window" hidden><p id="signin-message">Your browser keeps nothing of this tool inside your LMS's page.</p>
<p><a class="button" href="{{.NewWindow}}" target="_blank" rel="noopener">Open it in a new window</a></p></div>
</main></body></html>
`))

// ltiSealedLaunch answers a launch that came without the login's cookie
// from a login that kept its secret in the platform's storage: the
// dashboard, its session's token sealed by that secret.
func (s *Server) ltiSealedLaunch(w http.ResponseWriter, r *http.Request, p analytics.LTIPlatform, login analytics.LTILogin, token, view string) {
	sealed, err := lti.Seal(token, login.BrowserHash)
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	dashboard.Launched(w, r, dashboard.Launch{View: view, Sealed: sealed, StorageKey: lti.StorageKey(r.PostFormValue("state")),
		StorageTarget: login.StorageTarget, StorageOrigin: lti.StorageOrigin(p.AuthURL)}, frameAncestors(p))
}
