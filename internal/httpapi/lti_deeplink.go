package httpapi

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/dashboard"
	"groupanalytics/internal/lti"
)

// ltiDeepLink answers a deep linking request (LTI Deep Linking 2.0) of a
// person who may see the session m would open: a page offering the links
// the tool places in the course, the usage report and the students who
// stopped, of the course's class (or the school, or the district), each a
// form that posts its signed LtiDeepLinkingResponse to the platform.
func (s *Server) ltiDeepLink(w http.ResponseWriter, r *http.Request, p analytics.LTIPlatform, launch lti.Launch, m analytics.LTISession) {
	if !launch.AcceptsLinks() {
		s.ltiRefused(w, r, &lti.Refusal{Reason: "The course takes no link of the kind this tool places (an LTI resource link)"})
		return
	}
	place, err := s.ltiPlaceName(r, m)
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	key, _, err := s.ltiToolKeys(r.Context())
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	var choices []deepLinkChoice
	for _, link := range []struct {
		lti.Link
		Text string
	}{
		{lti.Link{Title: "Usage: " + place}, "How " + place + " used live lectures and chat, day by day, and each student's figures."},
		{lti.Link{Title: "Students who stopped: " + place, View: dashboard.ViewStopped}, "Who has not used the platform lately, or never, first."},
	} {
		jwt, err := lti.DeepLinkResponse(p, launch, key, link.Link, s.launchURL(), s.now())
		if err != nil {
			s.ltiRefused(w, r, err)
			return
		}
		choices = append(choices, deepLinkChoice{Title: link.Title, Text: link.Text, JWT: jwt})
	}
	returnTo, _ := url.Parse(launch.DeepLinkReturnURL) // checked by lti.Verifier
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; base-uri 'none'; form-action "+
		returnTo.Scheme+"://"+returnTo.Host+"; frame-ancestors "+strings.Join(frameAncestors(p), " "))
	writePage(w, http.StatusOK, deepLinkPage, struct {
		ReturnURL string
		Choices   []deepLinkChoice
	}{launch.DeepLinkReturnURL, choices})
}

type deepLinkChoice struct{ Title, Text, JWT string }

// ltiPlaceName names what a session sees: the class, the school or the
// district.
func (s *Server) ltiPlaceName(r *http.Request, m analytics.LTISession) (string, error) {
	dir := s.engine.Directory
	switch {
	case m.ClassID != "":
		c, err := dir.Class(r.Context(), m.GroupID, m.ClassID)
		return c.Name, err
	case m.DistrictID != "":
		d, err := dir.District(r.Context(), m.DistrictID)
		return d.Name, err
	}
	g, err := dir.Group(r.Context(), m.GroupID)
	return g.Name, err
}

var deepLinkPage = template.Must(template.New("deeplink").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Place a link in your course · Group analytics</title><link rel="stylesheet" href="/assets/style.css"></head>
<body><main class="signin-page"><h1>Place a link in your course</h1>
<p>Choose what the link opens. Whoever follows it sees only what their role in the course allows.</p>
<ul class="providers">{{range .Choices}}<li><form method="post" action="{{$.ReturnURL}}"><input type="hidden" name="JWT" value="{{.JWT}}">
<button type="submit" class="button">{{.Title}}</button></form><p>{{.Text}}</p></li>{{end}}</ul>
</main></body></html>
`))
