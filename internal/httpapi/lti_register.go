package httpapi

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/lti"
)

// LTI Dynamic Registration (docs/decisions.md, LTI): the operator makes a
// registration address for a school or a district (its token taken once);
// the LMS's administrator pastes it into the LMS, which opens it with its
// configuration's address and a registration token; the tool registers
// itself with the LMS and records the platform the LMS made.

// addLTIRegistration serves POST …/lti-registrations of a school or a
// district: a registration address, with when it expires.
func (s *Server) addLTIRegistration(r *http.Request) (int, any, error) {
	if s.publicURL == "" {
		return 0, nil, analytics.Errorf(analytics.Conflict,
			"This service was started without its public address (--public-url), which an LMS needs to reach it")
	}
	token, reg, err := s.platform.CreateLTIRegistration(r.Context(), r.PathValue("groupId"), r.PathValue("districtId"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"url": RegistrationURL(s.publicURL, token), "groupId": orNull(reg.GroupID), "districtId": orNull(reg.DistrictID),
		"expiresAt": analytics.FormatTime(reg.Created.Add(analytics.LTIRegistrationLifetime))}, nil
}

// RegistrationURL is the address an LMS registers the tool at, of the
// service at publicURL, with this registration's token.
func RegistrationURL(publicURL, token string) string {
	return strings.TrimRight(publicURL, "/") + "/lti/register?" + url.Values{"token": {token}}.Encode()
}

// ltiRegister serves the registration address (GET /lti/register), as the
// LMS opens it: the registration's token still unused, the tool registers
// with the LMS of openid_configuration, then records the platform for the
// token's school or district, and answers with a page that tells the LMS
// it is done (the LTI close message).
func (s *Server) ltiRegister(w http.ResponseWriter, r *http.Request) {
	if !s.signInReady(w, r) {
		return
	}
	refused := func(err error) {
		s.ltiRefusedPage(w, r, "registration", "The registration address was used already, or made more than a week ago: ask the service's operator for a new one.", err)
	}
	q := r.URL.Query()
	token := q.Get("token")
	if _, err := s.engine.Directory.LTIRegistration(r.Context(), analytics.HashSecret(token), s.now()); err != nil {
		refused(err)
		return
	}
	if q.Get("openid_configuration") == "" {
		s.writeSignInPage(w, http.StatusBadRequest, "Paste this address into your LMS",
			"It registers this tool with a learning management system: paste it where your LMS asks for a tool's registration URL (LTI Advantage dynamic registration).", nil)
		return
	}
	tool := lti.Tool{Name: "Group analytics", Description: "How your students use the study platform: live lectures and chat, by class and by student.",
		LoginURL: s.publicURL + "/lti/login", LaunchURL: s.launchURL(), JWKSURL: s.publicURL + "/lti/jwks", LogoURL: s.publicURL + "/assets/favicon.svg"}
	if _, _, err := s.ltiToolKeys(r.Context()); err != nil { // the keys the LMS will read
		refused(err)
		return
	}
	p, err := s.ltiVerifier.Register(r.Context(), q.Get("openid_configuration"), q.Get("registration_token"), tool)
	if err == nil {
		p, err = s.platform.RegisterLTIPlatform(r.Context(), token, p)
	}
	if err != nil {
		refused(err)
		return
	}
	s.log.InfoContext(r.Context(), "LTI platform registered", "platform", p.ID, "issuer", p.Issuer, "group", p.GroupID, "district", p.DistrictID)
	config, _ := url.Parse(q.Get("openid_configuration"))
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors "+
		config.Scheme+"://"+config.Host)
	writePage(w, http.StatusOK, registeredPage, p)
}

var registeredPage = template.Must(template.New("registered").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Registered · Group analytics</title><link rel="stylesheet" href="/assets/style.css"></head>
<body><main class="signin-page"><h1>Registered</h1>
<p id="signin-message">This tool is registered with {{.Name}}. Turn it on in your LMS and add it to courses: a "Usage" link appears in each.</p>
<script src="/assets/lti-registered.js"></script></main></body></html>
`))
