package httpapi

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/dashboard"
	"groupanalytics/internal/lti"
)

// The LTI 1.3 tool (docs/decisions.md, LTI): a learning management system
// registered for a school or a district launches it from a course; the
// launch opens, in the LMS's frame, the dashboard of what the person's
// role there may see: the course's class for an instructor, the school
// or the district for an administrator, nothing for a learner.

// ltiLoginMaxAge bounds the time from a launch's login to its id_token.
const ltiLoginMaxAge = 10 * time.Minute

// ltiBrowserCookie ties a launch's login to the browser that began it.
const ltiBrowserCookie = "ga_lti"

// LTISessionPrefix begins the token of a launch's session, which the
// dashboard sends as its key (x-api-key): it needs no cookie, so that it
// works in an LMS's frame where the browser blocks third-party cookies.
const LTISessionPrefix = "gal_"

func (s *Server) launchURL() string { return s.publicURL + "/lti/launch" }

// ltiLogin serves the third-party-initiated login (GET or POST
// /lti/login): the platform of the issuer (and client id) the request
// names, and its deployment, must be registered; the browser is sent to
// the platform's authorization endpoint with a state tied to it and a
// nonce.
func (s *Server) ltiLogin(w http.ResponseWriter, r *http.Request) {
	if !s.signInReady(w, r) {
		return
	}
	if err := r.ParseForm(); err != nil {
		s.writeSignInPage(w, http.StatusBadRequest, "This launch cannot go on", "Its request could not be read. Open the tool again from your course.", nil)
		return
	}
	req := lti.LoginRequestOf(r.Form)
	p, err := s.engine.Directory.LTIPlatformOf(r.Context(), req.Issuer, req.ClientID)
	if analytics.ErrorCode(err) == analytics.NotFound || err == nil && req.DeploymentID != "" && !p.TakesDeployment(req.DeploymentID) {
		s.failedAuth(w, s.limits.clientAddress(r), s.now())
		s.writeSignInPage(w, http.StatusBadRequest, "This LMS is not registered here",
			"The learning management system that sent you here, or this deployment of it, is not registered with this service. Ask your school's administrator.", nil)
		return
	} else if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	state, nonce, browser := randomToken(), randomToken(), randomToken()
	again := url.Values{}
	for name, values := range r.Form {
		if name != "lti_storage_target" {
			again[name] = values
		}
	}
	login := analytics.LTILogin{StateHash: analytics.HashSecret(state), BrowserHash: analytics.HashSecret(browser), PlatformID: p.ID, Nonce: nonce,
		StorageTarget: req.StorageTarget, Query: again.Encode(), Created: s.now()}
	if err := s.engine.Directory.StartLTILogin(r.Context(), login, ltiLoginMaxAge); err != nil {
		s.signInFailed(w, r, err)
		return
	}
	s.setLaunchCookie(w, r, browser)
	w.Header().Set("Cache-Control", "no-store")
	auth := lti.AuthRedirect(p, req, s.launchURL(), state, nonce)
	if req.StorageTarget != "" {
		s.ltiStoragePage(w, r, p, auth, lti.StorageKey(state), browser, login)
		return
	}
	http.Redirect(w, r, auth, http.StatusFound)
}

// setLaunchCookie sets the cookie that ties a launch's login to its
// browser. The id_token comes back in a post from the LMS's site, across
// sites, often in its frame: the cookie is SameSite=None and, where the
// browser allows no third-party cookie but partitioned ones (CHIPS),
// Partitioned. SameSite=None needs a secure cookie, which browsers take
// over https and on localhost.
func (s *Server) setLaunchCookie(w http.ResponseWriter, r *http.Request, value string) {
	c := &http.Cookie{Name: ltiBrowserCookie, Value: value, Path: "/lti/", HttpOnly: true, MaxAge: int(ltiLoginMaxAge.Seconds()),
		Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode}
	if u, err := url.Parse(s.publicURL); c.Secure || err == nil && analytics.Loopback(u.Hostname()) {
		c.Secure, c.SameSite, c.Partitioned = true, http.SameSiteNoneMode, true
	}
	http.SetCookie(w, c)
}

// ltiLaunch serves the platform's post of the id_token (POST /lti/launch):
// the login of its state, once, from this browser; the id_token checked
// (lti.Verifier) and its nonce the login's, used once; then what the
// person's role opens, as a session whose token the dashboard's page
// carries.
func (s *Server) ltiLaunch(w http.ResponseWriter, r *http.Request) {
	if !s.signInReady(w, r) {
		return
	}
	now := s.now()
	dir := s.engine.Directory
	login, err := dir.TakeLTILogin(r.Context(), analytics.HashSecret(r.PostFormValue("state")), now, ltiLoginMaxAge)
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	// The browser that began the login: its cookie; or, where it keeps no
	// cookie of the tool, whoever can read its secret from the platform's
	// storage, to whom the page goes sealed.
	browser, _ := r.Cookie(ltiBrowserCookie)
	sealed := browser == nil && login.StorageTarget != ""
	if !sealed && (browser == nil || subtle.ConstantTimeCompare(analytics.HashSecret(browser.Value), login.BrowserHash) != 1) {
		s.ltiRefused(w, r, &lti.Refusal{Reason: "This launch was begun in another browser, or this browser keeps no cookie of it in your LMS's page",
			NewWindow: s.publicURL + "/lti/login?" + login.Query})
		return
	}
	p, err := dir.LTIPlatform(r.Context(), login.PlatformID)
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	launch, err := s.ltiVerifier.Verify(r.Context(), p, r.PostFormValue("id_token"), now)
	if err == nil && launch.Nonce != login.Nonce {
		err = &lti.Refusal{Reason: "The launch's id_token is another launch's (its nonce differs)"}
	}
	if err == nil {
		if err = dir.UseLTINonce(r.Context(), p.ID, launch.Nonce, now, launch.Expires); analytics.ErrorCode(err) == analytics.Conflict {
			err = &lti.Refusal{Reason: "This launch was used before: open the tool again from your course", Err: err}
		}
	}
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	m, err := s.ltiSessionOf(r, p, launch, now)
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	if launch.MessageType == lti.MessageDeepLink {
		s.ltiDeepLink(w, r, p, launch, m)
		return
	}
	token := LTISessionPrefix + strings.TrimPrefix(randomToken(), "gas_")
	m.TokenHash = analytics.HashSecret(token)
	if err := dir.OpenLTISession(r.Context(), m); err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	if sealed {
		s.ltiSealedLaunch(w, r, p, login, token, launch.View)
		return
	}
	dashboard.Launched(w, r, dashboard.Launch{Token: token, View: launch.View}, frameAncestors(p))
}

// errLearner refuses the launch of a learner, or of anyone neither an
// instructor nor an administrator.
var errLearner = &lti.Refusal{Reason: "These usage reports are for your school's staff: your course's instructors and the school's administrators"}

// ltiSessionOf is the session a checked launch opens (docs/decisions.md,
// LTI): an administrator's, of the platform's school or district; an
// instructor's, of the course's class (the roster's class the course is
// a section of, in the platform's school or one of its district's; else
// a class of the school made for the course, its members the course's
// learners); a learner's, none.
func (s *Server) ltiSessionOf(r *http.Request, p analytics.LTIPlatform, launch lti.Launch, now time.Time) (analytics.LTISession, error) {
	m := analytics.LTISession{PlatformID: p.ID, Subject: launch.Subject, Name: launch.Name, Email: launch.Email, Role: launch.Role(),
		Created: now, Expires: now.Add(s.sessions.Lifetime), Idle: s.sessions.Idle}
	if m.Role == "" {
		return m, errLearner
	}
	staff, err := s.ltiStaff(r, p, launch)
	if err != nil {
		return m, err
	}
	if staff != nil {
		m.StaffID, m.Name, m.Email = staff.ID, cmp.Or(staff.Name, m.Name), cmp.Or(staff.Email, m.Email)
		if m.Role == analytics.LTIAdministrator && staff.Role == analytics.RoleTeacher {
			return m, &lti.Refusal{Reason: "Your school's records list you as a teacher: open the tool from one of your courses, to see its class"}
		}
	}
	switch m.Role {
	case analytics.LTIAdministrator:
		m.GroupID, m.DistrictID = p.GroupID, p.DistrictID
		return m, nil
	case analytics.LTIInstructor:
		m.GroupID, m.ClassID, err = s.courseClass(r, p, launch)
		return m, err
	}
	return m, errLearner
}

// ltiStaff finds the staff member a launch's person is, of the platform's
// school or district (or its schools): by their roster id
// (lis.person_sourcedid), or else by their email where the platform lets
// it match; nil for none.
func (s *Server) ltiStaff(r *http.Request, p analytics.LTIPlatform, launch lti.Launch) (*analytics.Staff, error) {
	owner := analytics.Provider{GroupID: p.GroupID, DistrictID: p.DistrictID}
	for _, by := range []struct{ email, sourcedID string }{{"", launch.PersonSourcedID}, {launch.Email, ""}} {
		if by.sourcedID == "" && (by.email == "" || !p.MatchEmail) {
			continue
		}
		staff, err := s.engine.Directory.StaffOfProvider(r.Context(), owner, by.email, by.sourcedID)
		if err != nil {
			return nil, err
		}
		if len(staff) > 0 {
			return &staff[0], nil
		}
	}
	return nil, nil
}

// courseClass finds the class of a course: the roster's class of its
// section id in the platform's school, or in one of its district's
// schools; or, for a school's platform, the class made for the course
// before, or made now (named by the course, its id from the platform's
// and the course's, "lms-" first).
func (s *Server) courseClass(r *http.Request, p analytics.LTIPlatform, launch lti.Launch) (groupID, classID string, err error) {
	dir := s.engine.Directory
	schools := []string{p.GroupID}
	if p.DistrictID != "" {
		d, err := dir.District(r.Context(), p.DistrictID)
		if err != nil {
			return "", "", err
		}
		schools = d.Schools
	}
	if section := launch.CourseSectionSourcedID; section != "" {
		for _, g := range schools {
			if _, err := dir.Class(r.Context(), g, section); err == nil {
				return g, section, nil
			} else if analytics.ErrorCode(err) != analytics.NotFound {
				return "", "", err
			}
		}
	}
	if p.DistrictID != "" {
		return "", "", &lti.Refusal{Reason: "This course is not a class of the district's schools: its section is not in their rosters. Ask the district's administrator"}
	}
	sum := sha256.Sum256([]byte(p.ID + "\x00" + launch.ContextID))
	classID = "lms-" + hex.EncodeToString(sum[:8])
	_, err = dir.Class(r.Context(), p.GroupID, classID)
	if analytics.ErrorCode(err) == analytics.NotFound {
		_, err = s.platform.CreateClass(r.Context(), analytics.Class{GroupID: p.GroupID, ID: classID, Name: launch.ContextTitle + " (from " + p.Name + ")"})
		if analytics.ErrorCode(err) == analytics.Conflict {
			err = nil // made by a launch beside this one
		}
	}
	if err == nil {
		s.syncCourseMembers(r.Context(), p, launch, p.GroupID, classID)
	}
	return p.GroupID, classID, err
}

// frameAncestors are the origins that may frame the launch's page: the
// platform's, of its issuer and its login.
func frameAncestors(p analytics.LTIPlatform) []string {
	var origins []string
	for _, address := range []string{p.Issuer, p.AuthURL} {
		if u, err := url.Parse(address); err == nil && u.Host != "" {
			origins = append(origins, u.Scheme+"://"+u.Host)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(origins)))
}

// ltiRefused answers a launch that cannot go on with a page that says why
// (the cause is logged), and opens nothing.
func (s *Server) ltiRefused(w http.ResponseWriter, r *http.Request, err error) {
	s.ltiRefusedPage(w, r, "launch", "It was finished already, or began too long ago. Open the tool again from your course.", err)
}

// ltiRefusedPage answers an LTI exchange (what: a launch, a registration)
// that cannot go on: a refusal's reason, or why what it names is not
// known (gone), counted against the address's failed checks; what the
// service would not take, as it says; else a page that asks to try again.
func (s *Server) ltiRefusedPage(w http.ResponseWriter, r *http.Request, what, gone string, err error) {
	var refusal *lti.Refusal
	switch code := analytics.ErrorCode(err); {
	case errors.As(err, &refusal):
		s.failedAuth(w, s.limits.clientAddress(r), s.now())
		s.log.WarnContext(r.Context(), "LTI "+what+" refused", "error", refusal.Error())
		writePage(w, http.StatusForbidden, signInPage, signInPageData{Title: "This " + what + " cannot go on", Message: refusal.Reason + ".", NewWindow: refusal.NewWindow})
	case code == analytics.NotFound:
		s.failedAuth(w, s.limits.clientAddress(r), s.now())
		s.writeSignInPage(w, http.StatusBadRequest, "This "+what+" is not known", gone, nil)
	case code == analytics.Invalid || code == analytics.Conflict:
		s.writeSignInPage(w, statusOf[code], "This "+what+" cannot go on", analytics.ErrorMessage(err), nil)
	default:
		s.log.ErrorContext(r.Context(), "LTI "+what+" failed", "error", err.Error())
		s.writeSignInPage(w, http.StatusServiceUnavailable, "The "+what+" is unavailable", "Try again in a moment.", nil)
	}
}

// ltiAccess opens what the launch's session of this token opens: as much
// as a staff member of its role would, while the school (or a school of
// the district) has a valid plan.
func (s *Server) ltiAccess(r *http.Request, token string, now time.Time) (analytics.Access, error) {
	m, err := s.engine.Directory.LTISession(r.Context(), analytics.HashSecret(token), now)
	if err != nil {
		return analytics.Access{}, err
	}
	staff := analytics.Staff{Email: m.Email, Name: m.Name, GroupID: m.GroupID, DistrictID: m.DistrictID, Role: analytics.RoleSchoolAdmin}
	switch {
	case m.Role == analytics.LTIInstructor:
		staff.Role, staff.ClassIDs = analytics.RoleTeacher, []string{m.ClassID}
	case m.DistrictID != "":
		staff.Role = analytics.RoleDistrictAdmin
	}
	access, err := s.staffAccess(r.Context(), staff, now)
	if analytics.ErrorCode(err) == analytics.NotFound {
		err = errUnauthorized // its school was deleted since
	}
	if err != nil {
		return analytics.Access{}, err
	}
	access.Person = &analytics.Person{Email: m.Email, Name: m.Name, Role: staff.Role, ProviderID: "lti:" + m.PlatformID}
	return access, nil
}

// maxLaunchBody caps a launch's post: an id_token and a state.
const maxLaunchBody = 64 << 10

// ltiPlatformJSON is a platform as the admin API shows it.
type ltiPlatformJSON struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Issuer        string   `json:"issuer"`
	ClientID      string   `json:"clientId"`
	DeploymentIDs []string `json:"deploymentIds"`
	AuthURL       string   `json:"authUrl"`
	TokenURL      string   `json:"tokenUrl"`
	JWKSURL       string   `json:"jwksUrl"`
	MatchEmail    bool     `json:"matchEmail"`
	GroupID       *string  `json:"groupId"`
	DistrictID    *string  `json:"districtId"`
	CreatedAt     string   `json:"createdAt"`
}

func toLTIPlatform(p analytics.LTIPlatform) ltiPlatformJSON {
	return ltiPlatformJSON{p.ID, p.Name, p.Issuer, p.ClientID, append([]string{}, p.DeploymentIDs...), p.AuthURL, p.TokenURL, p.JWKSURL,
		p.MatchEmail, orNull(p.GroupID), orNull(p.DistrictID), analytics.FormatTime(p.Created)}
}

// addLTIPlatform serves POST …/lti-platforms of a school or a district:
// a platform registered by hand.
func (s *Server) addLTIPlatform(r *http.Request) (int, any, error) {
	var in struct {
		ID            string   `json:"id"`
		Name          string   `json:"name"`
		Issuer        string   `json:"issuer"`
		ClientID      string   `json:"clientId"`
		DeploymentIDs []string `json:"deploymentIds"`
		AuthURL       string   `json:"authUrl"`
		TokenURL      string   `json:"tokenUrl"`
		JWKSURL       string   `json:"jwksUrl"`
		MatchEmail    bool     `json:"matchEmail"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	p, err := s.platform.AddLTIPlatform(r.Context(), analytics.LTIPlatform{GroupID: r.PathValue("groupId"), DistrictID: r.PathValue("districtId"),
		ID: in.ID, Name: in.Name, Issuer: in.Issuer, ClientID: in.ClientID, DeploymentIDs: in.DeploymentIDs, AuthURL: in.AuthURL,
		TokenURL: in.TokenURL, JWKSURL: in.JWKSURL, MatchEmail: in.MatchEmail})
	return http.StatusCreated, toLTIPlatform(p), err
}

// listLTIPlatforms serves GET …/lti-platforms of a school or a district.
func (s *Server) listLTIPlatforms(r *http.Request) (int, any, error) {
	platforms, err := s.platform.LTIPlatformsOf(r.Context(), r.PathValue("groupId"), r.PathValue("districtId"))
	return http.StatusOK, map[string]any{"platforms": listOf(platforms, toLTIPlatform)}, err
}

func (s *Server) removeLTIPlatform(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.RemoveLTIPlatform(r.Context(), r.PathValue("platformId"))
}
