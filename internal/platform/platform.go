// Package platform holds the operations the platform that runs
// groupanalytics performs: administering groups, plans, keys, students and
// tokens, and ingesting usage events. The CLI and the HTTP API both call
// these, so each operation has one implementation.
package platform

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// Platform performs the operations on a directory and a usage store.
type Platform struct {
	Directory analytics.Directory
	Usage     analytics.UsageStore
	Now       func() time.Time
}

// New returns a Platform on the given stores and the wall clock.
func New(d analytics.Directory, u analytics.UsageStore) *Platform {
	return &Platform{Directory: d, Usage: u, Now: time.Now}
}

var groupID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func invalid(format string, args ...any) error {
	return analytics.Errorf(analytics.Invalid, format, args...)
}

// checkText validates a free-text field: present, at most max characters,
// no control characters.
func checkText(field, value string, max int) error {
	switch {
	case value == "":
		return invalid("Missing %s", field)
	case !utf8.ValidString(value):
		return invalid("Invalid %s: not valid UTF-8", field)
	case utf8.RuneCountInString(value) > max:
		return invalid("Invalid %s: longer than %d characters", field, max)
	case strings.IndexFunc(value, unicode.IsControl) >= 0:
		return invalid("Invalid %s: contains control characters", field)
	}
	return nil
}

// CreateGroup creates a group. The time zone is an IANA name; empty means
// UTC. It cannot change later: rollups are cut into days in it.
func (p *Platform) CreateGroup(ctx context.Context, id, name, timeZone string) (analytics.Group, error) {
	if !groupID.MatchString(id) {
		return analytics.Group{}, invalid("Invalid group id %q: expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	if name == "" {
		name = id
	}
	if err := checkText("name", name, 200); err != nil {
		return analytics.Group{}, err
	}
	if timeZone == "" {
		timeZone = "UTC"
	}
	if _, err := time.LoadLocation(timeZone); err != nil || timeZone == "Local" {
		return analytics.Group{}, invalid("Invalid timeZone %q: expected an IANA time zone such as Europe/Berlin", timeZone)
	}
	g := analytics.Group{ID: id, Name: name, TimeZone: timeZone, Created: p.Now().UTC().Truncate(time.Millisecond)}
	return g, p.Directory.CreateGroup(ctx, g)
}

// AddPlan gives a group a plan from start until end. Each is a timestamp or
// a calendar date in the group's zone: a start date begins at its first
// instant, an end date ends after its last. An empty start means now; an
// empty end, open-ended.
func (p *Platform) AddPlan(ctx context.Context, groupID, start, end string) (analytics.Plan, error) {
	g, err := p.Directory.Group(ctx, groupID)
	if err != nil {
		return analytics.Plan{}, err
	}
	loc, err := g.Location()
	if err != nil {
		return analytics.Plan{}, err
	}
	plan := analytics.Plan{GroupID: groupID, Starts: p.Now().UTC().Truncate(time.Millisecond)}
	if start != "" {
		if plan.Starts, err = planTime("start", start, loc, false); err != nil {
			return plan, err
		}
	}
	if end != "" {
		ends, err := planTime("end", end, loc, true)
		if err != nil {
			return plan, err
		}
		if !ends.After(plan.Starts) {
			return plan, invalid("Invalid end: %s is not after the start %s", report.FormatTime(ends), report.FormatTime(plan.Starts))
		}
		plan.Ends = &ends
	}
	return p.Directory.AddPlan(ctx, plan)
}

// planTime reads a plan bound. A bare date is a whole day in loc: the
// start of it, or (for an end, which is exclusive) the start of the next.
func planTime(field, value string, loc *time.Location, isEnd bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return t.UTC().Truncate(time.Millisecond), nil
	}
	if d, err := time.Parse(time.DateOnly, value); err == nil {
		day := analytics.DateDay(d.Date())
		if isEnd {
			day++
		}
		return day.Start(loc).UTC(), nil
	}
	return time.Time{}, invalid("Invalid %s: expected a date (2025-09-01) or an RFC 3339 timestamp, got %q", field, value)
}

// CancelPlan cancels a plan from now on.
func (p *Platform) CancelPlan(ctx context.Context, groupID string, planID int64) (analytics.Plan, error) {
	return p.Directory.CancelPlan(ctx, groupID, planID, p.Now().UTC())
}

// Plans lists a group's plans.
func (p *Platform) Plans(ctx context.Context, groupID string) ([]analytics.Plan, error) {
	return p.Directory.Plans(ctx, groupID)
}

// Groups lists the groups.
func (p *Platform) Groups(ctx context.Context) ([]analytics.Group, error) {
	return p.Directory.Groups(ctx)
}

// newSecret returns a fresh secret with a kind prefix, its display prefix
// and a short random id.
func newSecret(kind string) (secret, prefix, id string) {
	secret = kind + "_" + rand.Text()
	return secret, secret[:len(kind)+5], strings.ToLower(rand.Text()[:10])
}

// CreateKey creates a report key for a group and returns it with its
// secret, which is not stored and cannot be shown again.
func (p *Platform) CreateKey(ctx context.Context, groupID, label string) (analytics.APIKey, string, error) {
	if label != "" {
		if err := checkText("label", label, 200); err != nil {
			return analytics.APIKey{}, "", err
		}
	}
	secret, prefix, id := newSecret("gak")
	k := analytics.APIKey{GroupID: groupID, ID: "key_" + id, Prefix: prefix, Label: label,
		Hash: analytics.HashSecret(secret), Created: p.Now().UTC().Truncate(time.Millisecond)}
	if err := p.Directory.AddKey(ctx, k); err != nil {
		return k, "", err
	}
	return k, secret, nil
}

// Keys lists a group's keys, without secrets.
func (p *Platform) Keys(ctx context.Context, groupID string) ([]analytics.APIKey, error) {
	return p.Directory.Keys(ctx, groupID)
}

// RevokeKey stops a key from working, from now on.
func (p *Platform) RevokeKey(ctx context.Context, groupID, keyID string) error {
	return p.Directory.RevokeKey(ctx, groupID, keyID, p.Now().UTC())
}

// CreateToken creates a platform token and returns its secret, which is
// not stored and cannot be shown again.
func (p *Platform) CreateToken(ctx context.Context, label string) (analytics.PlatformToken, string, error) {
	if label != "" {
		if err := checkText("label", label, 200); err != nil {
			return analytics.PlatformToken{}, "", err
		}
	}
	secret, prefix, id := newSecret("gat")
	t := analytics.PlatformToken{ID: "tok_" + id, Prefix: prefix, Label: label,
		Hash: analytics.HashSecret(secret), Created: p.Now().UTC().Truncate(time.Millisecond)}
	if err := p.Directory.AddToken(ctx, t); err != nil {
		return t, "", err
	}
	return t, secret, nil
}

// Tokens lists the platform tokens, without secrets.
func (p *Platform) Tokens(ctx context.Context) ([]analytics.PlatformToken, error) {
	return p.Directory.Tokens(ctx)
}

// RevokeToken stops a platform token from working, from now on.
func (p *Platform) RevokeToken(ctx context.Context, tokenID string) error {
	return p.Directory.RevokeToken(ctx, tokenID, p.Now().UTC())
}

// AddStudent enrols a student in a group.
func (p *Platform) AddStudent(ctx context.Context, groupID, studentID, name string) (analytics.Student, error) {
	s := analytics.Student{GroupID: groupID, ID: studentID, Name: name}
	if err := checkStudent(studentID, name); err != nil {
		return s, err
	}
	return s, p.Directory.AddStudent(ctx, s)
}

func checkStudent(id, name string) error {
	if err := checkText("studentId", id, 128); err != nil {
		return err
	}
	return checkText("studentName", name, 200)
}

// RenameStudent changes a student's display name.
func (p *Platform) RenameStudent(ctx context.Context, groupID, studentID, name string) (analytics.Student, error) {
	s := analytics.Student{GroupID: groupID, ID: studentID, Name: name}
	if err := checkStudent(studentID, name); err != nil {
		return s, err
	}
	return s, p.Directory.RenameStudent(ctx, s)
}

// Students lists a group's students.
func (p *Platform) Students(ctx context.Context, groupID string) ([]analytics.Student, error) {
	if _, err := p.Directory.Group(ctx, groupID); err != nil {
		return nil, err
	}
	return p.Directory.Students(ctx, groupID)
}

// DeleteStudent erases a student: their usage first, so that no report
// ever counts events of a student who is gone, then their enrolment (which
// answers NotFound for a student the group never had).
func (p *Platform) DeleteStudent(ctx context.Context, groupID, studentID string) error {
	if _, err := p.Directory.Group(ctx, groupID); err != nil {
		return err
	}
	if err := p.Usage.DeleteStudentUsage(ctx, groupID, studentID); err != nil {
		return err
	}
	return p.Directory.DeleteStudent(ctx, groupID, studentID)
}

// Rebuild recomputes the rollups of one group, or of all groups when
// groupID is empty, from the raw events.
func (p *Platform) Rebuild(ctx context.Context, groupID string) ([]analytics.Group, error) {
	var groups []analytics.Group
	if groupID == "" {
		var err error
		if groups, err = p.Directory.Groups(ctx); err != nil {
			return nil, err
		}
	} else {
		g, err := p.Directory.Group(ctx, groupID)
		if err != nil {
			return nil, err
		}
		groups = []analytics.Group{g}
	}
	for _, g := range groups {
		loc, err := g.Location()
		if err != nil {
			return nil, err
		}
		if err := p.Usage.Rebuild(ctx, g.ID, loc); err != nil {
			return nil, fmt.Errorf("rebuild %s: %w", g.ID, err)
		}
	}
	return groups, nil
}
