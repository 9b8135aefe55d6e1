package digest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// StopWindow is how many days after a student stopped the word of it may
// still go out (a service down on the day tells it the next): a stop
// older than that, such as those the service found when it first ran, is
// left to the weekly digest's list.
const StopWindow = 7

// Stops is the word to a class's teacher that students of the class
// stopped: each used the service before, and not in the last
// InactiveAfter days.
type Stops struct {
	Group         analytics.Group
	Class         analytics.Class
	InactiveAfter int
	Today         analytics.Day
	Students      []report.StudentUse
}

// StopRound tells each class's digest recipients of the students of the
// class who stopped in the last StopWindow days and were not told of yet:
// one message per recipient and round naming them, from SendHour in the
// group's zone. Each stop is claimed in the directory before it goes out,
// as a digest is, so that it goes out once whatever the processes and
// restarts; a student who comes back and stops again is told again.
func (s *Sender) StopRound(ctx context.Context) error {
	recipients, err := s.Directory.Recipients(ctx, "")
	if err != nil {
		return fmt.Errorf("stop round: %w", err)
	}
	recipients = slices.DeleteFunc(recipients, func(r analytics.Recipient) bool { return r.ClassID == "" })
	var errs []error
	for _, group := range byOwner(recipients) {
		errs = append(errs, s.tellStops(ctx, group))
	}
	return errors.Join(errs...)
}

// tellStops tells a group's class recipients of their classes' stops.
func (s *Sender) tellStops(ctx context.Context, recipients []analytics.Recipient) error {
	now := s.Now()
	group, ok, err := s.plannedGroup(ctx, recipients[0].GroupID, now)
	if err != nil || !ok {
		return err
	}
	loc, err := group.Location()
	if err != nil {
		return err
	}
	if now.In(loc).Hour() < SendHour {
		return nil
	}
	found := map[string]*Stops{} // by class
	for _, r := range recipients {
		stops := found[r.ClassID]
		if stops == nil {
			if stops, err = s.recentStops(ctx, group, r.ClassID, now); err != nil {
				return err
			}
			found[r.ClassID] = stops
		}
		if err := s.tellStopsTo(ctx, stops, r, now); err != nil {
			return err
		}
	}
	return nil
}

// recentStops returns the class's students who stopped in the last
// StopWindow days.
func (s *Sender) recentStops(ctx context.Context, group analytics.Group, classID string, now time.Time) (*Stops, error) {
	class, err := s.Directory.Class(ctx, group.ID, classID)
	if err != nil {
		return nil, err
	}
	list, err := s.Engine.LastUses(ctx, group, report.UseQuery{Query: report.Query{ClassID: classID},
		Statuses: []analytics.UseStatus{analytics.StatusStopped}}, now)
	if err != nil {
		return nil, err
	}
	stops := &Stops{Group: group, Class: class, InactiveAfter: list.InactiveAfter, Today: list.Today}
	for _, u := range list.Students {
		if stopped := u.Either() + analytics.Day(list.InactiveAfter); list.Today-stopped < StopWindow {
			stops.Students = append(stops.Students, u)
		}
	}
	return stops, nil
}

// tellStopsTo sends r the stops not told to them yet, claimed first.
func (s *Sender) tellStopsTo(ctx context.Context, stops *Stops, r analytics.Recipient, now time.Time) error {
	if len(stops.Students) == 0 {
		return nil
	}
	alert := analytics.StopAlert{GroupID: stops.Group.ID, ClassID: stops.Class.ID, Address: r.Address}
	asked := make([]analytics.Stop, len(stops.Students))
	for i, u := range stops.Students {
		asked[i] = analytics.Stop{StudentID: u.ID, LastDay: u.Either()}
	}
	claimed, err := s.Directory.ClaimStops(ctx, alert, asked, now, now.Add(Lease))
	if err != nil || len(claimed) == 0 {
		return err
	}
	told := *stops
	told.Students = slices.DeleteFunc(slices.Clone(stops.Students), func(u report.StudentUse) bool {
		return !slices.Contains(claimed, analytics.Stop{StudentID: u.ID, LastDay: u.Either()})
	})
	days := analytics.DayRange{First: told.Today - 27, Last: told.Today}
	msg, err := Message(told, s.Mailer.From, r.Address, LinksFor(s.PublicURL, days, r.Token), now)
	if err == nil {
		err = s.deliver(ctx, r.Address, msg)
	}
	attrs := []any{"group", alert.GroupID, "class", alert.ClassID, "to", r.Address, "students", len(claimed)}
	switch {
	case err == nil:
		s.Log.Info("stops told", attrs...)
		s.Metrics.Digest("sent")
		return s.Directory.StopsTold(context.WithoutCancel(ctx), alert, claimed, s.Now(), "")
	case Permanent(err):
		s.Log.Error("stops not told", append(attrs, "error", err, "outcome", "given up")...)
		s.Metrics.Digest("given_up")
		return s.Directory.StopsTold(context.WithoutCancel(ctx), alert, claimed, s.Now(), err.Error())
	}
	s.Log.Warn("stops not told", append(attrs, "error", err, "outcome", "will retry")...)
	s.Metrics.Digest("retry")
	retry := s.Now().Add(s.RetryAfter)
	if ctx.Err() != nil {
		retry = now // shutting down: the next process may try at once
	}
	return s.Directory.ReleaseStops(context.WithoutCancel(ctx), alert, claimed, retry)
}

// Subject is the message's subject line.
func (st Stops) Subject() string {
	return fmt.Sprintf("%s (%s): %s stopped using it", st.Class.Name, st.Group.Name, analytics.Plural(len(st.Students), "student"))
}

func (st Stops) messageKey() string {
	return "stops." + st.Group.ID + "." + st.Class.ID + "." + st.Today.String()
}

// line says one student's last use.
func (st Stops) line(u report.StudentUse) string {
	return fmt.Sprintf("%s (%s): last used it on %s, %s ago", u.Name, u.ID, u.Either(), analytics.Plural(u.DaysSince, "day"))
}

func (st Stops) writeText(w *bytes.Buffer, links Links) {
	fmt.Fprintf(w, "Students of %s (%s) who stopped using the service: used it before, and not in the last %s.\n\n",
		st.Class.Name, st.Group.Name, analytics.Plural(st.InactiveAfter, "day"))
	for _, u := range st.Students {
		fmt.Fprintf(w, "  %s\n", st.line(u))
	}
	fmt.Fprintf(w, "\nThe dashboard: %s\n", links.Dashboard)
	if links.Unsubscribe != "" {
		fmt.Fprintf(w, "\nYou receive this as a recipient of %s's digest. To stop it: %s\n", st.Class.Name, links.Unsubscribe)
	}
}

func (st Stops) writeHTML(w *bytes.Buffer, links Links) error {
	lines := make([]string, len(st.Students))
	for i, u := range st.Students {
		lines[i] = st.line(u)
	}
	return stopsTemplate.Execute(w, struct {
		Stops
		Lines []string
		Days  string
		Links Links
	}{st, lines, analytics.Plural(st.InactiveAfter, "day"), links})
}

var stopsTemplate = template.Must(template.New("stops").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1f2328;max-width:40em;margin:0 auto;padding:1em">
<h1 style="font-size:1.3em">Students of {{.Class.Name}} who stopped</h1>
<p style="color:#57606a">{{.Group.Name}}: they used the service before, and not in the last {{.Days}}.</p>
<ul>{{range .Lines}}<li>{{.}}</li>{{end}}</ul>
<p style="margin-top:1.5em"><a href="{{.Links.Dashboard}}">Open the dashboard</a></p>
{{with .Links.Unsubscribe}}<p style="color:#57606a;font-size:0.9em">You receive this as a recipient of {{$.Class.Name}}'s digest. <a href="{{.}}">Unsubscribe</a></p>{{end}}
</body></html>`))

// stoppedNames names the first students of a list, by name, and counts
// the others, as the digest names its inactive students.
func stoppedNames(students []report.StudentUse) string {
	var names []string
	for _, u := range students[:min(len(students), MaxInactiveNames)] {
		names = append(names, fmt.Sprintf("%s (%s)", u.Name, u.Either()))
	}
	text := strings.Join(names, ", ")
	if more := len(students) - len(names); more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	return text
}
