package httpapi

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/signin"
)

const (
	// sessionCookie holds a signed-in session's token; browserCookie ties
	// a sign-in to the browser that began it.
	sessionCookie = "ga_session"
	browserCookie = "ga_signin"
	// signInMaxAge is how long a sign-in may take at its provider.
	signInMaxAge = 10 * time.Minute
	// csrfHeader carries a session's CSRF token on every request that
	// is not a GET: /api/me gives it.
	csrfHeader = "X-CSRF-Token"
)

// Sessions are the lifetimes of a signed-in session.
type Sessions struct {
	// Lifetime is how long a session lasts at most; 0 means 12 hours.
	Lifetime time.Duration
	// Idle ends a session left this long without a request; 0 means 2
	// hours.
	Idle time.Duration
}

var errUnauthorized = analytics.Errorf(analytics.Unauthorized, "Unauthorized")

var errCSRF = analytics.Errorf(analytics.Unauthorized,
	"Missing or wrong "+csrfHeader+": a signed-in session's requests other than GET carry the csrfToken that GET /api/me gives")

// csrfToken is the session's CSRF token: derived from its token, which
// only the browser holds (the cookie is HttpOnly), so that a page of
// another site can neither read nor work it out.
func csrfToken(sessionToken string) string {
	sum := sha256.Sum256([]byte("csrf\x00" + sessionToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// carriesCSRF tells whether the request carries the CSRF token of the
// session whose token this is.
func carriesCSRF(r *http.Request, sessionToken string) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(csrfToken(sessionToken))) == 1
}

// sessionAccess opens what the session of the request's cookie opens:
// what its staff member's role opens (staffAccess), while the session
// has not ended. A request other than GET must carry the session's CSRF
// token.
func (s *Server) sessionAccess(r *http.Request, token string, now time.Time) (analytics.Access, error) {
	m, err := s.engine.Directory.Session(r.Context(), analytics.HashSecret(token), now)
	if err != nil {
		return analytics.Access{}, err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !carriesCSRF(r, token) {
		return analytics.Access{}, errCSRF
	}
	access, err := s.staffAccess(r.Context(), m.Staff, now)
	if err != nil {
		return analytics.Access{}, err
	}
	access.Person = &analytics.Person{StaffID: m.Staff.ID, Email: m.Staff.Email, Name: m.Staff.Name, Role: m.Staff.Role, ProviderID: m.ProviderID}
	return access, nil
}

// staffAccess is what a staff member's role opens at now: as much as the
// key of their role, and only while their school (or a school of their
// district) has a valid plan; Unauthorized otherwise.
func (s *Server) staffAccess(ctx context.Context, m analytics.Staff, now time.Time) (analytics.Access, error) {
	dir := s.engine.Directory
	if m.Role == analytics.RoleDistrictAdmin {
		da, err := dir.DistrictAccess(ctx, m.DistrictID, now)
		if err != nil || len(da.Schools) == 0 {
			return analytics.Access{}, cmp.Or(err, errUnauthorized)
		}
		return analytics.Access{District: da}, nil
	}
	g, err := dir.Group(ctx, m.GroupID)
	if err != nil {
		return analytics.Access{}, err
	}
	plans, err := dir.Plans(ctx, g.ID)
	if err != nil {
		return analytics.Access{}, err
	}
	if !slices.ContainsFunc(plans, func(p analytics.Plan) bool { return p.ValidAt(now) }) {
		return analytics.Access{}, errUnauthorized
	}
	return analytics.Access{Group: g, ForClasses: m.Role == analytics.RoleTeacher, Classes: m.ClassIDs}, nil
}

// signInPage is the page of a sign-in that cannot go on, or of a choice
// of providers: it says what happened and what to do, and nothing of any
// school.
var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Group analytics</title><link rel="stylesheet" href="/assets/style.css"></head>
<body><main class="signin-page"><h1>{{.Title}}</h1><p id="signin-message">{{.Message}}</p>
{{with .Providers}}<ul class="providers">{{range .}}<li><a class="button" href="{{.URL}}">Sign in with {{.Name}}</a></li>{{end}}</ul>{{end}}
{{with .NewWindow}}<p><a class="button" href="{{.}}" target="_blank" rel="noopener">Open it in a new window</a></p>{{end}}
<p><a href="/">Back to the dashboard</a></p></main></body></html>
`))

type providerLink struct{ Name, URL string }

func (s *Server) writeSignInPage(w http.ResponseWriter, status int, title, message string, providers []providerLink) {
	writePage(w, status, signInPage, signInPageData{Title: title, Message: message, Providers: providers})
}

// signInPageData is what a sign-in page says: a title and a message, and
// the providers to sign in with, or an address that begins an LTI launch
// again in a new window.
type signInPageData struct {
	Title, Message string
	Providers      []providerLink
	NewWindow      string
}

// writePage answers with a page of the service's own, never cached, its
// address (which may hold a token) never sent on.
func writePage(w http.ResponseWriter, status int, page *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_ = page.Execute(w, data)
}

// returnTo is where a sign-in sends the person after: the path asked for
// when it is the service's own (an absolute path, not //host or /\host),
// else the dashboard.
func returnTo(v string) string {
	u, err := url.Parse(v)
	if err != nil || !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") || strings.HasPrefix(v, "/\\") ||
		u.Scheme != "" || u.Host != "" || strings.ContainsAny(v, "\\\r\n") {
		return "/"
	}
	return v
}

// signInByEmail serves GET /signin?email=: the sign-in of the email's
// domain, or a choice when several providers take it.
func (s *Server) signInByEmail(w http.ResponseWriter, r *http.Request) {
	if !s.signInReady(w, r) {
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("email")))
	_, domain, ok := strings.Cut(email, "@")
	if !ok || domain == "" {
		s.writeSignInPage(w, http.StatusBadRequest, "Sign in", "Give your school email address, such as name@school.example.", nil)
		return
	}
	providers, err := s.engine.Directory.Providers(r.Context())
	if err != nil {
		s.writeSignInPage(w, http.StatusServiceUnavailable, "Sign-in is unavailable", "Try again in a moment.", nil)
		return
	}
	var links []providerLink
	for _, p := range providers {
		if slices.Contains(p.EmailDomains, domain) {
			q := url.Values{"email": {email}, "returnTo": {returnTo(r.URL.Query().Get("returnTo"))}}
			links = append(links, providerLink{p.Name, "/signin/" + url.PathEscape(p.ID) + "?" + q.Encode()})
		}
	}
	switch len(links) {
	case 0:
		s.writeSignInPage(w, http.StatusNotFound, "No sign-in for this address",
			"No school or district has set up sign-in for "+domain+" addresses here. Ask your school's administrator, or use the key they gave you.", nil)
	case 1:
		http.Redirect(w, r, links[0].URL, http.StatusSeeOther)
	default:
		s.writeSignInPage(w, http.StatusOK, "Sign in", "Choose how to sign in.", links)
	}
}

// signInReady answers for a service started without --public-url, which
// cannot tell a provider where to send the person back.
func (s *Server) signInReady(w http.ResponseWriter, r *http.Request) bool {
	if s.publicURL == "" {
		s.writeSignInPage(w, http.StatusNotFound, "Sign-in is not set up",
			"This service was started without its public address (--public-url), which sign-in needs. Use a key, or ask its operator.", nil)
		return false
	}
	_, ok := s.screenAddress(w, r, s.now())
	return ok
}

func (s *Server) callbackURL() string { return s.publicURL + "/oidc/callback" }

// secureCookies says whether cookies are to be sent over TLS only: when
// the request came over TLS, or the service's public address is https.
func (s *Server) secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.publicURL, "https://")
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode}
	if maxAge > 0 {
		c.MaxAge = int(maxAge.Seconds())
	} else {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// signInWith serves GET /signin/{providerId}: the sign-in begins, and the
// browser goes to the provider.
func (s *Server) signInWith(w http.ResponseWriter, r *http.Request) {
	if !s.signInReady(w, r) {
		return
	}
	p, err := s.engine.Directory.Provider(r.Context(), r.PathValue("providerId"))
	if analytics.ErrorCode(err) == analytics.NotFound {
		s.failedAuth(w, s.limits.clientAddress(r), s.now())
		s.writeSignInPage(w, http.StatusNotFound, "This sign-in link is not valid",
			"No sign-in here goes by "+r.PathValue("providerId")+": the link is not, or no longer, valid. Ask your school's administrator for the right one, or sign in with your school email address on the dashboard.", nil)
		return
	} else if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	begun, err := s.signIn.Begin(r.Context(), p, s.callbackURL(), r.URL.Query().Get("email"))
	if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	browser := randomToken()
	a := analytics.SignInAttempt{StateHash: analytics.HashSecret(begun.State), BrowserHash: analytics.HashSecret(browser),
		ProviderID: p.ID, Nonce: begun.Nonce, Verifier: begun.Verifier, ReturnTo: returnTo(r.URL.Query().Get("returnTo")),
		Created: s.now()}
	if err := s.engine.Directory.StartSignIn(r.Context(), a, signInMaxAge); err != nil {
		s.signInFailed(w, r, err)
		return
	}
	s.setCookie(w, r, browserCookie, browser, signInMaxAge)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, begun.URL, http.StatusSeeOther)
}

// signInCallback serves GET /oidc/callback, where the provider sends
// the person back: the attempt is taken (once), checked against the
// browser, the code redeemed and the ID token checked; a person on the
// staff the provider may sign in gets a session.
func (s *Server) signInCallback(w http.ResponseWriter, r *http.Request) {
	if !s.signInReady(w, r) {
		return
	}
	q := r.URL.Query()
	now := s.now()
	a, err := s.engine.Directory.TakeSignIn(r.Context(), analytics.HashSecret(q.Get("state")), now, signInMaxAge)
	if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	s.setCookie(w, r, browserCookie, "", 0)
	browser, _ := r.Cookie(browserCookie)
	if browser == nil || subtle.ConstantTimeCompare(analytics.HashSecret(browser.Value), a.BrowserHash) != 1 {
		s.signInFailed(w, r, &signin.Failure{Reason: "This sign-in was begun in another browser: begin it again here"})
		return
	}
	if e := q.Get("error"); e != "" {
		s.signInFailed(w, r, &signin.Failure{Reason: "The sign-in provider did not sign you in (" + e + ")"})
		return
	}
	p, err := s.engine.Directory.Provider(r.Context(), a.ProviderID)
	if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	id, err := s.signIn.Finish(r.Context(), p, s.callbackURL(), a, q.Get("code"))
	if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	staff, err := s.engine.Directory.StaffOfProvider(r.Context(), p, id.Email, id.SourcedID)
	if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	if len(staff) == 0 {
		s.failedAuth(w, s.limits.clientAddress(r), now)
		s.log.InfoContext(r.Context(), "sign-in of someone not on the staff", "provider", p.ID)
		s.writeSignInPage(w, http.StatusForbidden, "You are not on the staff here",
			"You signed in as "+cmp.Or(id.Email, id.SourcedID)+", but no school or district here lists you as its staff. Ask your school's administrator to add you.", nil)
		return
	}
	member := widestRole(staff)
	if !s.planned(w, r, member, now) {
		return
	}
	token := randomToken()
	m := analytics.Session{TokenHash: analytics.HashSecret(token), Staff: member, ProviderID: p.ID,
		Created: now, Expires: now.Add(s.sessions.Lifetime), Idle: s.sessions.Idle}
	if err := s.engine.Directory.OpenSession(r.Context(), m); err != nil {
		s.signInFailed(w, r, err)
		return
	}
	s.setCookie(w, r, sessionCookie, token, s.sessions.Lifetime)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, a.ReturnTo, http.StatusSeeOther)
}

// planned tells whether the staff member's role opens anything at now: a
// person whose school (or every school of whose district) has no valid
// plan gets a page that says so, and no session, rather than a dashboard
// that would ask for a key.
func (s *Server) planned(w http.ResponseWriter, r *http.Request, m analytics.Staff, now time.Time) bool {
	_, err := s.staffAccess(r.Context(), m, now)
	who := cmp.Or(m.Email, m.Name)
	switch {
	case err == nil:
		return true
	case analytics.ErrorCode(err) != analytics.Unauthorized:
		s.signInFailed(w, r, err)
	case m.Role == analytics.RoleDistrictAdmin:
		s.writeSignInPage(w, http.StatusForbidden, "No school of your district has a plan",
			"You signed in as "+who+", but none of your district's schools has a valid plan with this service now, so there is nothing to show you. Ask the person who arranges the service for your district.", nil)
	default:
		s.writeSignInPage(w, http.StatusForbidden, "Your school has no plan",
			"You signed in as "+who+", but your school has no valid plan with this service now, so there is nothing to show you. Ask your school's administrator.", nil)
	}
	return false
}

// widestRole picks, of the staff records of one email, the one that sees
// most: a district's administrator, then a school's, then a teacher; of
// two alike, the first by id (docs/decisions.md, Sign-in).
func widestRole(staff []analytics.Staff) analytics.Staff {
	return slices.MaxFunc(staff, func(a, b analytics.Staff) int {
		return slices.Index(analytics.Roles, a.Role) - slices.Index(analytics.Roles, b.Role)
	})
}

// signInFailed answers a sign-in that cannot go on with a page that says
// why; the cause is logged, never shown.
func (s *Server) signInFailed(w http.ResponseWriter, r *http.Request, err error) {
	var f *signin.Failure
	switch {
	case errors.As(err, &f):
		s.failedAuth(w, s.limits.clientAddress(r), s.now())
		s.log.WarnContext(r.Context(), "sign-in failed", "error", f.Error())
		s.writeSignInPage(w, http.StatusForbidden, "Sign-in failed", f.Reason+".", nil)
	case analytics.ErrorCode(err) == analytics.NotFound:
		s.failedAuth(w, s.limits.clientAddress(r), s.now())
		s.writeSignInPage(w, http.StatusBadRequest, "Sign-in failed", "This sign-in is not known: it was finished already, began too long ago, or names no provider. Begin it again.", nil)
	default:
		s.log.ErrorContext(r.Context(), "sign-in failed", "error", err.Error())
		s.writeSignInPage(w, http.StatusServiceUnavailable, "Sign-in is unavailable", "Try again in a moment.", nil)
	}
}

// signOut serves POST /signout: the session ends, here and in the store,
// and its cookie is cleared. It carries the CSRF token, as every request
// of a session that changes something does.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(sessionCookie)
	if err == nil && c.Value != "" {
		if !carriesCSRF(r, c.Value) {
			s.writeError(w, r, errCSRF)
			return
		}
		if err := s.engine.Directory.CloseSession(r.Context(), analytics.HashSecret(c.Value)); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.setCookie(w, r, sessionCookie, "", 0)
	w.WriteHeader(http.StatusNoContent)
}

// randomToken is a session's token, or a browser's sign-in cookie.
func randomToken() string { return "gas_" + rand.Text() }
