// Package platform holds the operations the platform that runs
// groupanalytics performs: administering groups, plans, keys, students and
// tokens, and ingesting usage events. The CLI and the HTTP API both call
// these, so each operation has one implementation.
package platform

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/signin"
)

// Platform performs the operations on a directory and a usage store.
type Platform struct {
	Directory analytics.Directory
	Usage     analytics.UsageStore
	Now       func() time.Time
	// Issuers checks a sign-in provider's issuer against its discovery
	// document when the provider is added.
	Issuers *signin.RelyingParty
	// What every event request reads of the directory, kept for a moment
	// (recentFor, zoneFor): tokens accepted, by hash; groups' zones and
	// retention, by id.
	tokens recent[analytics.PlatformToken]
	zones  recent[*ingestGroup]
}

// New returns a Platform on the given stores and the wall clock.
func New(d analytics.Directory, u analytics.UsageStore) *Platform {
	return &Platform{Directory: d, Usage: u, Now: time.Now, Issuers: signin.New()}
}

var groupIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func invalid(format string, args ...any) error {
	return analytics.Errorf(analytics.Invalid, format, args...)
}

// checkText validates a free-text field: present and not blank, at most
// max characters, valid UTF-8 without control characters. JSON decoding
// turns invalid bytes and lone surrogates into U+FFFD, so that counts as
// invalid too: two different ids must not collapse into one.
func checkText(field, value string, max int) error {
	switch {
	case value == "":
		return invalid("Missing %s", field)
	case strings.TrimSpace(value) == "":
		return invalid("Invalid %s: blank", field)
	case !utf8.ValidString(value) || strings.ContainsRune(value, utf8.RuneError):
		return invalid("Invalid %s: not valid UTF-8", field)
	case utf8.RuneCountInString(value) > max:
		return invalid("Invalid %s: longer than %d characters", field, max)
	case strings.IndexFunc(value, unicode.IsControl) >= 0:
		return invalid("Invalid %s: contains control characters", field)
	}
	return nil
}

// CreateGroup creates a group. The time zone is an IANA name; empty means
// UTC. Rollups are cut into days in it: SetTimeZone rebuilds them.
func (p *Platform) CreateGroup(ctx context.Context, id, name, timeZone string) (analytics.Group, error) {
	if !groupIDPattern.MatchString(id) {
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
	if _, err := analytics.LoadZone(timeZone); err != nil {
		return analytics.Group{}, invalid("Invalid timeZone %q: expected an IANA time zone such as Europe/Berlin", timeZone)
	}
	g := analytics.Group{ID: id, Name: name, TimeZone: timeZone, Created: p.Now().UTC().Truncate(time.Millisecond),
		InactiveAfter: analytics.DefaultInactiveAfter}
	return g, p.Directory.CreateGroup(ctx, g)
}

// AddPlan gives a group a plan from start until end. Each is a timestamp or
// a calendar date in the group's zone: a start date begins at its first
// instant, an end date ends after its last. An empty start means now; an
// empty end, open-ended. Seats, if not 0, is how many students it covers.
func (p *Platform) AddPlan(ctx context.Context, groupID, start, end string, seats int) (analytics.Plan, error) {
	g, err := p.Group(ctx, groupID)
	if err != nil {
		return analytics.Plan{}, err
	}
	if seats < 0 || seats > MaxSeats {
		return analytics.Plan{}, invalid("Invalid seats: expected 1 to %d students, or none, got %d", MaxSeats, seats)
	}
	loc, err := g.Location()
	if err != nil {
		return analytics.Plan{}, err
	}
	plan := analytics.Plan{GroupID: groupID, Starts: p.Now().UTC().Truncate(time.Millisecond), Seats: seats}
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
			// In the terms the bounds were given in: an end date is the
			// plan's last day, though the plan stores the instant after it.
			starts := start
			if starts == "" {
				starts = "now (" + analytics.FormatTime(plan.Starts) + ")"
			}
			if isDate(end) {
				return plan, invalid("Invalid end: the last day %s is before the start %s", end, starts)
			}
			return plan, invalid("Invalid end: %s is not after the start %s", end, starts)
		}
		plan.Ends = &ends
	}
	return p.Directory.AddPlan(ctx, plan)
}

// MaxSeats bounds a plan's seats.
const MaxSeats = 10_000_000

// planTime reads a plan bound. A bare date is a whole day in loc: the
// start of it, or (for an end, which is exclusive) the start of the next.
func planTime(field, value string, loc *time.Location, isEnd bool) (time.Time, error) {
	if isDate(value) {
		d, err := analytics.ParseDate(field, value)
		if err != nil {
			return time.Time{}, err
		}
		day := d.Day(loc)
		if isEnd {
			day++
		}
		return day.Start(loc).UTC(), nil
	}
	t, err := analytics.ParseTimestamp(field, value)
	if err != nil {
		return t, invalid("Invalid %s: expected a date (2025-09-01) or an RFC 3339 timestamp, got %q", field, value)
	}
	return t.UTC().Truncate(time.Millisecond), nil
}

// isDate reports whether a plan bound is a bare date (2025-09-01).
func isDate(value string) bool {
	_, err := time.Parse(time.DateOnly, value)
	return err == nil
}

// DeleteGroup erases a school: its usage on every store, its students,
// keys, plans, digest recipients and records, and the group itself, at
// once with respect to ingestion (see UsageStore.EraseGroup). Its id may
// be used again for a new group.
func (p *Platform) DeleteGroup(ctx context.Context, groupID string) error {
	if _, err := p.Group(ctx, groupID); err != nil {
		return err
	}
	p.zones.forget(groupID)
	began := p.Now()
	deleted, err := p.Usage.EraseGroup(ctx, groupID)
	if err != nil {
		return err
	}
	return p.addReceipt(ctx, &analytics.Receipt{GroupID: groupID, Action: analytics.ActionGroupDeleted, Began: began, Deleted: deleted})
}

// addReceipt records the receipt of a deletion done, finished now, at the
// request of whoever ctx names. A receipt that cannot be written fails
// the call, though the deletion is done: asked again, it finds nothing.
func (p *Platform) addReceipt(ctx context.Context, r *analytics.Receipt) error {
	r.RequestedBy, r.Finished = analytics.RequesterOf(ctx), p.Now()
	if err := p.Directory.AddReceipt(ctx, *r); err != nil {
		return fmt.Errorf("done, but its receipt was not recorded: %w", err)
	}
	return nil
}

// Receipts lists the deletion receipts of a group (which may be gone), or
// of every group when groupID is empty, newest first.
func (p *Platform) Receipts(ctx context.Context, groupID string) ([]analytics.Receipt, error) {
	return p.Directory.Receipts(ctx, groupID)
}

// SetTimeZone changes a group's time zone: its rollups are rebuilt in the
// new zone, under the group's write lock, and the zone changes with them.
func (p *Platform) SetTimeZone(ctx context.Context, groupID, zone string) (analytics.Group, error) {
	g, err := p.Group(ctx, groupID)
	if err != nil {
		return g, err
	}
	if _, err := analytics.LoadZone(zone); err != nil {
		return g, invalid("Invalid timeZone %q: expected an IANA time zone such as Europe/Berlin", zone)
	}
	if err := p.Usage.Rebuild(ctx, groupID, zone); err != nil {
		return g, err
	}
	p.zones.forget(groupID)
	g.TimeZone = zone
	return g, nil
}

// RenameGroup changes a group's display name.
func (p *Platform) RenameGroup(ctx context.Context, groupID, name string) (analytics.Group, error) {
	g, err := p.Group(ctx, groupID)
	if err != nil {
		return g, err
	}
	if err := checkText("name", name, 200); err != nil {
		return g, err
	}
	g.Name = name
	return g, p.Directory.RenameGroup(ctx, groupID, name)
}

// MaxMinCellSize bounds a group's minCellSize: above it, hardly a class
// of a school would show a figure.
const MaxMinCellSize = 100

// SetMinCellSize sets the group's minCellSize: 0 turns the hiding of its
// reports' small figures off, else 2 to MaxMinCellSize (1 would hide
// none).
func (p *Platform) SetMinCellSize(ctx context.Context, groupID string, size int) (analytics.Group, error) {
	g, err := p.Group(ctx, groupID)
	if err != nil {
		return g, err
	}
	if size != 0 && (size < 2 || size > MaxMinCellSize) {
		return g, invalid("Invalid minCellSize %d: expected 0 (off) or 2 to %d", size, MaxMinCellSize)
	}
	g.MinCellSize = size
	return g, p.Directory.SetMinCellSize(ctx, groupID, size)
}

// SetInactiveAfter sets the group's inactiveAfter: after how many days
// without use (1 to analytics.MaxInactiveAfter) a student who used the
// service counts as stopped.
func (p *Platform) SetInactiveAfter(ctx context.Context, groupID string, days int) (analytics.Group, error) {
	g, err := p.Group(ctx, groupID)
	if err != nil {
		return g, err
	}
	if days < 1 || days > analytics.MaxInactiveAfter {
		return g, invalid("Invalid inactiveAfter %d: expected a number of days from 1 to %d", days, analytics.MaxInactiveAfter)
	}
	g.InactiveAfter = days
	return g, p.Directory.SetInactiveAfter(ctx, groupID, days)
}

// MinRetention is the shortest retention a group may keep: three weeks,
// so that its weekly digest, which compares a week with the one before and
// may be sent up to a week late, has its days.
const MinRetention = 21

// SetRetention sets how many days of usage the group keeps ("400d"), or
// "off" to keep all; the next retention run deletes what is older.
func (p *Platform) SetRetention(ctx context.Context, groupID, retention string) (analytics.Group, error) {
	g, err := p.Group(ctx, groupID)
	if err != nil {
		return g, err
	}
	days, err := analytics.ParseDays(retention)
	if err != nil || days != 0 && days < MinRetention {
		return g, invalid("Invalid retention %q: expected a number of days from %dd to %dd (such as 400d), or off", retention, MinRetention, analytics.MaxDays)
	}
	g.Retention = days
	if err := p.Directory.SetRetention(ctx, groupID, days); err != nil {
		return g, err
	}
	p.zones.forget(groupID)
	return g, nil
}

// retentionRunFor bounds one school's retention run, rather than the
// store's call timeout: on ClickHouse it waits for its deletions on every
// replica, which may take longer than a request may.
const retentionRunFor = 10 * time.Minute

// ExpireUsage is a retention run at now: for each group that keeps its
// usage a number of days, it deletes the usage of the days before the
// first it keeps, on every store, and records a receipt, unless that cut
// was made already (by another process too). It goes on past a group
// that fails, and returns the receipts it recorded and the first error.
func (p *Platform) ExpireUsage(ctx context.Context, now time.Time) ([]analytics.Receipt, error) {
	groups, err := p.Directory.Groups(ctx)
	if err != nil {
		return nil, err
	}
	var receipts []analytics.Receipt
	var first error
	for _, g := range groups {
		if g.Retention == 0 {
			continue
		}
		r, err := p.expireGroup(ctx, g, now)
		switch {
		case err != nil && analytics.ErrorCode(err) != analytics.NotFound && first == nil:
			first = fmt.Errorf("retention of group %s: %w", g.ID, err)
		case err == nil && r != nil:
			receipts = append(receipts, *r)
		}
	}
	return receipts, first
}

// expireGroup runs the retention of one group, and returns its receipt
// (nil when the cut was made already).
func (p *Platform) expireGroup(ctx context.Context, g analytics.Group, now time.Time) (*analytics.Receipt, error) {
	loc, err := g.Location()
	if err != nil {
		return nil, err
	}
	first := g.FirstKeptDay(now, loc)
	began := p.Now()
	ctx, cancel := context.WithTimeout(ctx, retentionRunFor)
	defer cancel()
	deleted, ran, err := p.Usage.ExpireDays(ctx, g.ID, first)
	if err != nil || !ran {
		return nil, err
	}
	r := &analytics.Receipt{GroupID: g.ID, Action: analytics.ActionUsageExpired, KeptFrom: first, Began: began, Deleted: deleted}
	return r, p.addReceipt(analytics.WithRequester(ctx, "retention "+g.Retention.String()), r)
}

// CancelPlan cancels a plan from now on.
func (p *Platform) CancelPlan(ctx context.Context, groupID string, planID int64) (analytics.Plan, error) {
	if err := knownGroup(groupID); err != nil {
		return analytics.Plan{}, err
	}
	return p.Directory.CancelPlan(ctx, groupID, planID, p.Now().UTC())
}

// Plans lists a group's plans.
func (p *Platform) Plans(ctx context.Context, groupID string) ([]analytics.Plan, error) {
	if err := knownGroup(groupID); err != nil {
		return nil, err
	}
	return p.Directory.Plans(ctx, groupID)
}

// Groups lists the groups.
func (p *Platform) Groups(ctx context.Context) ([]analytics.Group, error) {
	return p.Directory.Groups(ctx)
}

// Group returns a group. An id that no group can have is not looked up:
// it is simply not found.
func (p *Platform) Group(ctx context.Context, id string) (analytics.Group, error) {
	if err := knownGroup(id); err != nil {
		return analytics.Group{}, err
	}
	return p.Directory.Group(ctx, id)
}

// knownGroup answers NotFound for an id that no group can have, so that
// it never reaches the store (where a NUL byte is an error of its own).
func knownGroup(id string) error {
	if !groupIDPattern.MatchString(id) {
		return analytics.Errorf(analytics.NotFound, "Group %q not found", id)
	}
	return nil
}

// storable reports whether an id of a key, token or student could have
// been stored: ids that could not are not looked up.
func storable(id string) bool { return checkText("id", id, 128) == nil }
