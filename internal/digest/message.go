package digest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// MaxInactiveNames is how many inactive students a digest names; it
// counts the rest.
const MaxInactiveNames = 10

// Links are a digest's links: to the dashboard on the digest's week, and
// to unsubscribe its recipient (none in a trial sent by digest send to an
// address that is not a recipient).
type Links struct {
	Dashboard, Unsubscribe string
}

// LinksFor makes the links of a digest of days for a service at
// publicURL, for a recipient with this unsubscribe token ("": none).
func LinksFor(publicURL string, days analytics.DayRange, token string) Links {
	base := strings.TrimRight(publicURL, "/")
	q := url.Values{"startDate": {days.First.String()}, "endDate": {days.Last.String()}, "interval": {"day"}}
	links := Links{Dashboard: base + "/?" + q.Encode()}
	if token != "" {
		links.Unsubscribe = base + "/unsubscribe?" + url.Values{"token": {token}}.Encode()
	}
	return links
}

// Subject is the digest's subject line.
func (d Digest) Subject() string {
	return fmt.Sprintf("%s: the week of %s", d.Audience(), d.Span())
}

// Audience names whose digest it is: the school, or a class of it.
func (d Digest) Audience() string {
	if d.Class != nil {
		return fmt.Sprintf("%s (%s)", d.Class.Name, d.Group.Name)
	}
	return d.Group.Name
}

// Span names the week's days: "9-15 November 2026", or across months
// and years as needed.
func (d Digest) Span() string { return span(d.Days) }

func span(days analytics.DayRange) string {
	fy, fm, fd := days.First.Date()
	ly, lm, ld := days.Last.Date()
	switch {
	case fy != ly:
		return fmt.Sprintf("%d %s %d – %d %s %d", fd, fm, fy, ld, lm, ly)
	case fm != lm:
		return fmt.Sprintf("%d %s – %d %s %d", fd, fm, ld, lm, ly)
	}
	return fmt.Sprintf("%d–%d %s %d", fd, ld, lm, ly)
}

// letter is a digest as Message mails it: a group's (Digest) or a
// district's (DistrictDigest).
type letter interface {
	Subject() string
	writeText(w *bytes.Buffer, links Links)
	writeHTML(w *bytes.Buffer, links Links) error
	// messageKey names the digest in its Message-ID: its owner and week.
	messageKey() string
}

// Message is the digest as an email from from to to, made at now: a
// plain text part and an HTML part, with no image nor anything else from
// another host. The Message-ID is the same each time the digest is made
// for the same recipient, so that a copy sent again after a crash is
// known as the same message.
func Message(d letter, from, to string, links Links, now time.Time) ([]byte, error) {
	var text, html bytes.Buffer
	d.writeText(&text, links)
	if err := d.writeHTML(&html, links); err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}

	var msg bytes.Buffer
	parts := multipart.NewWriter(&msg)
	header := func(name, value string) { fmt.Fprintf(&msg, "%s: %s\r\n", name, value) }
	header("From", from)
	header("To", to)
	header("Subject", mime.QEncoding.Encode("utf-8", d.Subject()))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", messageID(d, to, from))
	header("MIME-Version", "1.0")
	header("Auto-Submitted", "auto-generated")
	if links.Unsubscribe != "" {
		// RFC 8058: a mail client's own unsubscribe button posts here.
		header("List-Unsubscribe", "<"+links.Unsubscribe+">")
		header("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
	}
	header("Content-Type", "multipart/alternative; boundary="+parts.Boundary())
	msg.WriteString("\r\n")
	for _, part := range []struct {
		contentType string
		body        []byte
	}{{"text/plain; charset=utf-8", text.Bytes()}, {"text/html; charset=utf-8", html.Bytes()}} {
		w, err := parts.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.contentType},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		qp := quotedprintable.NewWriter(w)
		qp.Write(bytes.ReplaceAll(part.body, []byte("\n"), []byte("\r\n")))
		if err := qp.Close(); err != nil {
			return nil, err
		}
	}
	if err := parts.Close(); err != nil {
		return nil, err
	}
	return msg.Bytes(), nil
}

// messageID names the digest of d to a recipient, at the sender's domain.
func messageID(d letter, to, from string) string {
	sum := sha256.Sum256([]byte(to))
	domain := from[strings.LastIndex(from, "@")+1:]
	return fmt.Sprintf("<digest.%s.%s@%s>", d.messageKey(), hex.EncodeToString(sum[:8]), strings.Trim(domain, "<>"))
}

func (d Digest) messageKey() string { return d.Group.ID + "." + d.Week.String() }

func (d Digest) writeHTML(w *bytes.Buffer, links Links) error {
	return htmlTemplate.Execute(w, htmlData{d, links})
}

func (d Digest) writeText(w *bytes.Buffer, links Links) {
	fmt.Fprintf(w, "Weekly digest of %s, %s (%s)\n", d.Audience(), d.Span(), d.Group.TimeZone)
	for _, s := range d.Sections {
		fmt.Fprintf(w, "\n%s\n", s.Title)
		for _, r := range s.Rows {
			change, _ := Change(r.Value, r.Previous)
			fmt.Fprintf(w, "  %-24s %9s  %s (%s the week before)\n", r.Title, thousands(r.Value), change, thousands(r.Previous))
		}
	}
	fmt.Fprintf(w, "\n%s\n", d.InactiveLine())
	if names := d.InactiveNames(); names != "" {
		fmt.Fprintf(w, "  %s\n", names)
	}
	fmt.Fprintf(w, "\n%s\n", d.StoppedLine())
	if len(d.Stopped) > 0 {
		fmt.Fprintf(w, "  %s\n", stoppedNames(d.Stopped))
	}
	fmt.Fprintf(w, "\nThe dashboard on this week: %s\n", links.Dashboard)
	if links.Unsubscribe != "" {
		fmt.Fprintf(w, "\nYou receive this digest as a recipient of %s's. To stop it: %s\n", d.Audience(), links.Unsubscribe)
	}
}

// InactiveLine counts the students inactive all week.
func (d Digest) InactiveLine() string {
	switch {
	case d.Students == 0:
		return "The group has no students yet."
	case len(d.Inactive) == 0:
		return fmt.Sprintf("Every one of the %s used live lectures or chat this week.", analytics.Plural(d.Students, "student"))
	}
	return fmt.Sprintf("Inactive all week: %d of %s.", len(d.Inactive), analytics.Plural(d.Students, "student"))
}

// StoppedLine counts the students who stopped.
func (d Digest) StoppedLine() string {
	if len(d.Stopped) == 0 {
		return fmt.Sprintf("Nobody stopped: no student who used it has gone %s without it.", analytics.Plural(d.InactiveAfter, "day"))
	}
	return fmt.Sprintf("Stopped (used it before, not in the last %s): %s, the longest first, with their last day.",
		analytics.Plural(d.InactiveAfter, "day"), analytics.Plural(len(d.Stopped), "student"))
}

// StoppedNames names the first students who stopped and counts the
// others.
func (d Digest) StoppedNames() string { return stoppedNames(d.Stopped) }

// InactiveNames names the first inactive students, by name, and counts
// the others.
func (d Digest) InactiveNames() string {
	var names []string
	for _, s := range d.Inactive[:min(len(d.Inactive), MaxInactiveNames)] {
		names = append(names, s.Name)
	}
	text := strings.Join(names, ", ")
	if more := len(d.Inactive) - len(names); more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	return text
}

// thousands writes n with a comma between each group of three digits,
// as the dashboard does, or "hidden" for a figure the group's minCellSize
// hides.
func thousands(n int64) string {
	if n == report.Suppressed {
		return "hidden"
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

type htmlData struct {
	Digest
	Links Links
}

var htmlTemplate = template.Must(template.New("digest").Funcs(template.FuncMap{
	"thousands": thousands,
	"count":     func(n int) string { return thousands(int64(n)) },
	"span":      span,
	"change":    changeHTML,
	"changeOf":  func(value, previous int) template.HTML { return changeHTML(int64(value), int64(previous)) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1f2328;max-width:40em;margin:0 auto;padding:1em">
<h1 style="font-size:1.3em">Weekly digest of {{.Audience}}</h1>
<p style="color:#57606a">{{.Span}} ({{.Group.TimeZone}})</p>
{{template "sections" .Sections}}<h2 style="font-size:1.1em;margin-top:1.5em">Inactive students</h2>
<p>{{.InactiveLine}}{{with .InactiveNames}}<br>{{.}}{{end}}</p>
<h2 style="font-size:1.1em;margin-top:1.5em">Students who stopped</h2>
<p>{{.StoppedLine}}{{with .StoppedNames}}<br>{{.}}{{end}}</p>
<p style="margin-top:1.5em"><a href="{{.Links.Dashboard}}">Open the dashboard on this week</a></p>
{{with .Links.Unsubscribe}}<p style="color:#57606a;font-size:0.9em">You receive this digest as a recipient of {{$.Audience}}'s. <a href="{{.}}">Unsubscribe</a></p>{{end}}
</body></html>
{{define "sections"}}{{range .}}<h2 style="font-size:1.1em;margin-top:1.5em">{{.Title}}</h2>
<table style="border-collapse:collapse;width:100%;table-layout:fixed">
<tr style="color:#57606a;text-align:left"><th scope="col" style="padding:4px 8px 4px 0;width:40%">Total</th><th scope="col" style="padding:4px 8px;text-align:right">This week</th><th scope="col" style="padding:4px 8px;text-align:right">Change</th><th scope="col" style="padding:4px 0 4px 8px;text-align:right">Week before</th></tr>
{{range .Rows}}<tr style="border-top:1px solid #d0d7de"><td style="padding:4px 8px 4px 0">{{.Title}}</td><td style="padding:4px 8px;text-align:right"><strong>{{thousands .Value}}</strong></td><td style="padding:4px 8px;text-align:right">{{change .Value .Previous}}</td><td style="padding:4px 0 4px 8px;text-align:right">{{thousands .Previous}}</td></tr>
{{end}}</table>
{{end}}{{end}}`))

// changeHTML says how value moved from previous, coloured.
func changeHTML(value, previous int64) template.HTML {
	text, dir := Change(value, previous)
	if rest, up := strings.CutPrefix(text, "up "); up {
		text = "▲ " + rest
	} else if rest, down := strings.CutPrefix(text, "down "); down {
		text = "▼ " + rest
	}
	color := map[int]string{1: "#1a7f37", -1: "#b42318", 0: "#57606a"}[dir]
	return template.HTML(`<span style="color:` + color + `">` + template.HTMLEscapeString(text) + `</span>`)
}
