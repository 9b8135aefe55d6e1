package digest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/metrics"
	"groupanalytics/internal/report"
)

// Sender sends each group's digest of the week before to its recipients,
// from Monday 07:00 in the group's time zone, once per recipient: a
// digest is claimed in the directory before it goes out, so that of
// several processes one sends it, and a restart does not send it again.
//
// A process that dies while sending leaves its claim, which expires after
// Lease; then the digest is sent again. So a digest the SMTP server had
// accepted just before the process died, not yet recorded as sent, goes
// out twice, with the same Message-ID; every other digest goes out once.
type Sender struct {
	Directory analytics.Directory
	Engine    *report.Engine
	Mailer    *Mailer
	// PublicURL is the service's address as recipients reach it: the
	// digest links to its dashboard and its unsubscribe page.
	PublicURL string
	Log       *slog.Logger
	Now       func() time.Time
	// Backoff are the waits between the tries of a message in one round;
	// after the last try fails, the digest waits RetryAfter for the next
	// round, up to MaxAttempts rounds.
	Backoff    []time.Duration
	RetryAfter time.Duration
	// Metrics, if set, count the digests sent, to retry and given up.
	Metrics *metrics.Metrics
}

const (
	// Lease is how long a claim keeps other processes off a digest: far
	// longer than sending it takes, tries and waits included, so that only
	// a claim whose process died expires.
	Lease = 15 * time.Minute
	// MaxAttempts is how many rounds may try a digest before it is given
	// up: with RetryAfter's default, half an hour of refusals.
	MaxAttempts = 6
)

// NewSender returns a sender with the default tries and waits: three
// tries a round, 2 and 10 seconds apart, and rounds 5 minutes apart.
func NewSender(dir analytics.Directory, engine *report.Engine, mailer *Mailer, publicURL string, log *slog.Logger) *Sender {
	return &Sender{Directory: dir, Engine: engine, Mailer: mailer, PublicURL: publicURL, Log: log, Now: time.Now,
		Backoff: []time.Duration{2 * time.Second, 10 * time.Second}, RetryAfter: 5 * time.Minute}
}

// Run sends the digests due, and the words of students who stopped, now
// and every interval, until ctx ends.
func (s *Sender) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := s.Round(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("digests", "error", err)
		}
		if err := s.StopRound(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("stops", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Round sends every digest due and not yet sent: for each group with
// recipients and a plan valid now, and each district with recipients and
// a school with one, the digest of its due week to each recipient.
func (s *Sender) Round(ctx context.Context) error {
	recipients, err := s.Directory.Recipients(ctx, "")
	if err != nil {
		return fmt.Errorf("digest round: %w", err)
	}
	ofDistricts, err := s.Directory.DistrictRecipients(ctx, "")
	if err != nil {
		return fmt.Errorf("digest round: %w", err)
	}
	var errs []error
	for _, group := range byOwner(recipients) {
		errs = append(errs, s.sendGroup(ctx, group))
	}
	for _, district := range byOwner(ofDistricts) {
		errs = append(errs, s.sendDistrict(ctx, district))
	}
	return errors.Join(errs...)
}

// byOwner cuts recipients, sorted by group or district, into each one's.
func byOwner(recipients []analytics.Recipient) [][]analytics.Recipient {
	var owners [][]analytics.Recipient
	for i, r := range recipients {
		if i == 0 || r.GroupID != recipients[i-1].GroupID || r.DistrictID != recipients[i-1].DistrictID {
			owners = append(owners, nil)
		}
		owners[len(owners)-1] = append(owners[len(owners)-1], r)
	}
	return owners
}

// plannedGroup returns the group, and whether it has a plan valid at now:
// without one, no digest, for its keys would not open the dashboard.
func (s *Sender) plannedGroup(ctx context.Context, groupID string, now time.Time) (analytics.Group, bool, error) {
	group, err := s.Directory.Group(ctx, groupID)
	if err != nil {
		return group, false, err
	}
	plans, err := s.Directory.Plans(ctx, group.ID)
	return group, slices.ContainsFunc(plans, func(p analytics.Plan) bool { return p.ValidAt(now) }), err
}

func (s *Sender) sendGroup(ctx context.Context, recipients []analytics.Recipient) error {
	now := s.Now()
	group, ok, err := s.plannedGroup(ctx, recipients[0].GroupID, now)
	if err != nil || !ok {
		return err
	}
	loc, err := group.Location()
	if err != nil {
		return err
	}
	week := DueWeek(now, loc)
	return s.sendEach(ctx, analytics.DigestSend{GroupID: group.ID, Week: week}, recipients, now, func(classID string) (letter, error) {
		return s.compose(ctx, group, classID, week, now)
	})
}

func (s *Sender) sendDistrict(ctx context.Context, recipients []analytics.Recipient) error {
	now := s.Now()
	da, err := s.Directory.DistrictAccess(ctx, recipients[0].DistrictID, now)
	if err != nil {
		return err
	}
	if len(da.Schools) == 0 {
		return nil // no school with a plan: its keys would not open the dashboard
	}
	loc, err := da.District.Location()
	if err != nil {
		return err
	}
	week := DueWeek(now, loc)
	return s.sendEach(ctx, analytics.DigestSend{DistrictID: da.District.ID, Week: week}, recipients, now, func(string) (letter, error) {
		return ComposeDistrict(ctx, s.Engine, da, week, now)
	})
}

// sendEach sends the digest of owner's week (a group's or a district's)
// to each recipient it was not sent to, claiming each first at now (the
// instant its week was found due); compose makes it, once per class
// (none: "").
func (s *Sender) sendEach(ctx context.Context, owner analytics.DigestSend, recipients []analytics.Recipient, now time.Time,
	compose func(classID string) (letter, error)) error {
	sent, err := s.Directory.SentDigests(ctx, owner)
	if err != nil {
		return err
	}
	days := owner.Week.Days()
	digests := map[string]letter{} // by class (none: ""), made for the first recipient claimed
	for _, r := range recipients {
		if slices.Contains(sent, r.Address) {
			continue // the usual case after Monday: no write to find it so
		}
		send := owner
		send.Address = r.Address
		claimed, err := s.Directory.ClaimDigest(ctx, send, now, now.Add(Lease), MaxAttempts)
		if err != nil {
			return err
		}
		if !claimed {
			continue // another process's, or given up
		}
		digest := digests[r.ClassID]
		if digest == nil {
			if digest, err = compose(r.ClassID); err != nil {
				s.failed(ctx, send, err, now.Add(s.RetryAfter))
				return err
			}
			digests[r.ClassID] = digest
		}
		msg, err := Message(digest, s.Mailer.From, r.Address, LinksFor(s.PublicURL, days, r.Token), now)
		if err == nil {
			err = s.deliver(ctx, r.Address, msg)
		}
		switch {
		case err == nil:
			if err := s.Directory.DigestSent(context.WithoutCancel(ctx), send, s.Now()); err != nil {
				return err
			}
			s.Log.Info("digest sent", append(ownerAttrs(send), "week", send.Week.String(), "to", r.Address)...)
			s.Metrics.Digest("sent")
		case Permanent(err):
			s.failed(ctx, send, err, time.Time{})
		case ctx.Err() != nil:
			// Shutting down: the next process may try at once.
			s.failed(ctx, send, err, now)
		default:
			s.failed(ctx, send, err, s.Now().Add(s.RetryAfter))
		}
	}
	return nil
}

// ownerAttrs name a digest's group or district in a log line.
func ownerAttrs(send analytics.DigestSend) []any {
	if send.DistrictID != "" {
		return []any{"district", send.DistrictID}
	}
	return []any{"group", send.GroupID}
}

// compose makes the digest of the group, or of its class classID.
func (s *Sender) compose(ctx context.Context, group analytics.Group, classID string, week analytics.Week, now time.Time) (Digest, error) {
	var class *analytics.Class
	if classID != "" {
		c, err := s.Directory.Class(ctx, group.ID, classID)
		if err != nil {
			return Digest{}, err
		}
		class = &c
	}
	return Compose(ctx, s.Engine, group, class, week, now)
}

// failed records why a digest was not sent and when it may be tried again
// (zero: never), and logs it.
func (s *Sender) failed(ctx context.Context, send analytics.DigestSend, err error, retryAt time.Time) {
	level, outcome, result := slog.LevelWarn, "will retry", "retry"
	if retryAt.IsZero() {
		level, outcome, result = slog.LevelError, "given up", "given_up"
	}
	s.Metrics.Digest(result)
	s.Log.Log(ctx, level, "digest not sent", append(ownerAttrs(send), "week", send.Week.String(), "to", send.Address,
		"error", err, "outcome", outcome)...)
	if err := s.Directory.DigestFailed(context.WithoutCancel(ctx), send, err.Error(), retryAt); err != nil {
		s.Log.Warn("digest not recorded", append(ownerAttrs(send), "error", err)...)
	}
}

// deliver sends msg, trying again after each of Backoff's waits while the
// server refuses for now or cannot be reached.
func (s *Sender) deliver(ctx context.Context, to string, msg []byte) error {
	err := s.Mailer.Send(ctx, to, msg)
	for _, wait := range s.Backoff {
		if err == nil || Permanent(err) {
			break
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		err = s.Mailer.Send(ctx, to, msg)
	}
	return err
}

// SendTrial sends group's digest of week to an address now, for an
// operator to see it: not recorded, and sent whether or not it was sent
// before. When the address is a recipient's, the digest is what they get
// (a class's, for a class's teacher) with their unsubscribe link; else it
// is the school's, without one.
func (s *Sender) SendTrial(ctx context.Context, groupID string, week analytics.Week, to string) error {
	now := s.Now()
	group, err := s.Directory.Group(ctx, groupID)
	if err != nil {
		return err
	}
	recipients, err := s.Directory.Recipients(ctx, groupID)
	if err != nil {
		return err
	}
	var token, classID string
	if i := slices.IndexFunc(recipients, func(r analytics.Recipient) bool { return r.Address == to }); i >= 0 {
		token, classID = recipients[i].Token, recipients[i].ClassID
	}
	d, err := s.compose(ctx, group, classID, week, now)
	if err != nil {
		return err
	}
	msg, err := Message(d, s.Mailer.From, to, LinksFor(s.PublicURL, d.Days, token), now)
	if err != nil {
		return err
	}
	return s.deliver(ctx, to, msg)
}

// SendDistrictTrial sends a district's digest of week to an address now,
// as SendTrial does a group's: with the recipient's unsubscribe link when
// the address is one of the district's recipients.
func (s *Sender) SendDistrictTrial(ctx context.Context, districtID string, week analytics.Week, to string) error {
	now := s.Now()
	da, err := s.Directory.DistrictAccess(ctx, districtID, now)
	if err != nil {
		return err
	}
	recipients, err := s.Directory.DistrictRecipients(ctx, districtID)
	if err != nil {
		return err
	}
	var token string
	if i := slices.IndexFunc(recipients, func(r analytics.Recipient) bool { return r.Address == to }); i >= 0 {
		token = recipients[i].Token
	}
	d, err := ComposeDistrict(ctx, s.Engine, da, week, now)
	if err != nil {
		return err
	}
	msg, err := Message(d, s.Mailer.From, to, LinksFor(s.PublicURL, d.Days, token), now)
	if err != nil {
		return err
	}
	return s.deliver(ctx, to, msg)
}
