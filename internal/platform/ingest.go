package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"groupanalytics/internal/analytics"
)

// EventInput is one usage event as the platform sends it (docs/decisions.md, R6).
type EventInput struct {
	ID          string `json:"id"`
	GroupID     string `json:"groupId"`
	StudentID   string `json:"studentId"`
	StudentName string `json:"studentName,omitempty"`
	OccurredAt  string `json:"occurredAt"`
	Kind        string `json:"kind"`
	ChatType    string `json:"chatType,omitempty"`
}

// Rejection names an event that was not accepted, by its position in the
// batch (from 0), and why.
type Rejection struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// IngestResult says what became of a batch.
type IngestResult struct {
	Accepted   int         `json:"accepted"`
	Duplicates int         `json:"duplicates"`
	Rejected   []Rejection `json:"rejected"`
}

// MaxFutureSkew is how far ahead of the server's clock an event may be.
const MaxFutureSkew = 5 * time.Minute

// earliest is the earliest occurrence time accepted; anything before is
// taken for a zero or garbled timestamp.
var earliest = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Ingest validates each event of a batch (each a JSON object) and stores
// the valid ones in one transaction, with the enrolments and names of
// their students. When allOrNothing is set and any event is rejected,
// nothing is stored.
func (p *Platform) Ingest(ctx context.Context, batch []json.RawMessage, allOrNothing bool) (IngestResult, error) {
	res := IngestResult{Rejected: []Rejection{}}
	now := p.Now()
	groups := map[string]*ingestGroup{} // nil: no such group
	events := make([]analytics.Event, 0, len(batch))
	indices := make([]int, 0, len(batch)) // each event's place in the batch
	for i, raw := range batch {
		e, err := p.readEvent(ctx, groups, raw, now)
		if err == nil {
			events = append(events, e)
			indices = append(indices, i)
			continue
		}
		if analytics.ErrorCode(err) != analytics.Invalid {
			return res, err
		}
		res.Rejected = append(res.Rejected, Rejection{Index: i, Reason: analytics.ErrorMessage(err)})
	}
	if len(events) == 0 || allOrNothing && len(res.Rejected) > 0 {
		return res, nil
	}
	appended, err := p.Usage.AppendEvents(ctx, events)
	if err != nil {
		return res, err
	}
	res.Accepted, res.Duplicates = appended.Accepted, appended.Duplicates
	if len(appended.Gone) > 0 {
		// Deleted while the batch waited for its lock: their events were
		// not stored, as if they had come a moment later.
		for i, e := range events {
			if slices.Contains(appended.Gone, e.GroupID) {
				res.Rejected = append(res.Rejected, Rejection{Index: indices[i], Reason: fmt.Sprintf("Unknown groupId %q", e.GroupID)})
			}
		}
		slices.SortFunc(res.Rejected, func(a, b Rejection) int { return a.Index - b.Index })
	}
	return res, nil
}

// readEvent decodes one event of a batch and checks it for its group.
func (p *Platform) readEvent(ctx context.Context, groups map[string]*ingestGroup, raw json.RawMessage, now time.Time) (analytics.Event, error) {
	in, err := decodeEvent(raw)
	if err != nil {
		return analytics.Event{}, err
	}
	g, err := p.ingestGroup(ctx, groups, in.GroupID)
	if err != nil {
		return analytics.Event{}, err
	}
	e, err := validate(in, g.loc, now)
	if err != nil {
		return e, err
	}
	return e, g.keeps(e, now)
}

// decodeEvent reads one event. Bytes that are not UTF-8 are refused rather
// than replaced, and a studentName sent empty is refused rather than taken
// for none.
func decodeEvent(raw json.RawMessage) (EventInput, error) {
	var in struct {
		EventInput
		StudentName *string `json:"studentName"`
	}
	trimmed := bytes.TrimSpace(raw)
	switch {
	case len(trimmed) == 0 || trimmed[0] != '{':
		return in.EventInput, invalid("Invalid event: expected a JSON object")
	case !utf8.Valid(trimmed):
		return in.EventInput, invalid("Invalid event: not valid UTF-8")
	}
	// Unknown fields are refused, as in the report API's bodies: a field
	// misspelt would otherwise be dropped without a word.
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			field := typeErr.Field[strings.LastIndex(typeErr.Field, ".")+1:] // not "EventInput.id"
			return in.EventInput, invalid("Invalid %s: expected a string", field)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return in.EventInput, invalid("Invalid event: unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return in.EventInput, invalid("Invalid event: not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return in.EventInput, invalid("Invalid event: not valid JSON")
	}
	if in.StudentName != nil {
		if *in.StudentName == "" {
			return in.EventInput, invalid("Missing studentName: send a name, or leave the field out")
		}
		in.EventInput.StudentName = *in.StudentName
	}
	return in.EventInput, nil
}

// ingestGroup is what ingestion reads of a group: its time zone and how
// many days of usage it keeps.
type ingestGroup struct {
	id        string
	loc       *time.Location
	retention analytics.Days
}

// keeps refuses an event of a day before the first the group keeps at now
// (docs/decisions.md, retention): it would be deleted at once.
func (g *ingestGroup) keeps(e analytics.Event, now time.Time) error {
	if first := g.retention.FirstKept(analytics.DayOf(now, g.loc)); e.Day < first {
		return invalid("Invalid occurredAt: %s is on %s; group %q keeps %s of usage, from %s", analytics.FormatTime(e.OccurredAt), e.Day, g.id, g.retention, first)
	}
	return nil
}

// ingestGroup returns what ingestion needs of a group, remembering answers
// for the rest of the batch, and those of groups that exist for zoneFor.
// A zone or group kept a moment too long does no harm: the usage store
// cuts days in the zone it reads under the group's lock, and drops the
// events of a group deleted (AppendResult.Gone); a retention kept too
// long lets in events that its next run deletes.
func (p *Platform) ingestGroup(ctx context.Context, cache map[string]*ingestGroup, id string) (*ingestGroup, error) {
	if id == "" {
		return nil, invalid("Missing groupId")
	}
	g, seen := cache[id]
	if !seen && knownGroup(id) == nil {
		now := time.Now()
		if g, seen = p.zones.get(id, now); !seen {
			found, err := p.Directory.Group(ctx, id)
			switch {
			case analytics.ErrorCode(err) == analytics.NotFound:
			case err != nil:
				return nil, err
			default:
				loc, err := found.Location()
				if err != nil {
					return nil, err
				}
				g = &ingestGroup{id: id, loc: loc, retention: found.Retention}
				p.zones.put(id, g, now, zoneFor)
			}
		}
		cache[id] = g
	}
	if g == nil {
		return nil, invalid("Unknown groupId %q", id)
	}
	return g, nil
}

func validate(in EventInput, loc *time.Location, now time.Time) (analytics.Event, error) {
	e := analytics.Event{GroupID: in.GroupID, ID: in.ID, StudentID: in.StudentID, StudentName: in.StudentName}
	if err := checkText("id", in.ID, 128); err != nil {
		return e, err
	}
	if err := checkText("studentId", in.StudentID, 128); err != nil {
		return e, err
	}
	if in.StudentName != "" {
		if err := checkText("studentName", in.StudentName, 200); err != nil {
			return e, err
		}
	}
	if in.OccurredAt == "" {
		return e, invalid("Missing occurredAt")
	}
	at, err := analytics.ParseTimestamp("occurredAt", in.OccurredAt)
	switch {
	case err != nil:
		return e, err
	case at.After(now.Add(MaxFutureSkew)):
		return e, invalid("Invalid occurredAt: %s is more than %s in the future", in.OccurredAt, fmt.Sprint(MaxFutureSkew))
	case at.Before(earliest):
		return e, invalid("Invalid occurredAt: %s is before 2000-01-01", in.OccurredAt)
	}
	e.OccurredAt = at.UTC().Truncate(time.Millisecond)
	e.Day = analytics.DayOf(e.OccurredAt, loc)
	switch in.Kind {
	case analytics.KindSessionCreated:
		if in.ChatType != "" {
			return e, invalid("Invalid chatType: only %s events have one", analytics.KindMessageSent)
		}
		e.Metric = analytics.SessionsCreated
	case analytics.KindMessageSent:
		m, ok := analytics.ChatTypes[in.ChatType]
		if !ok {
			if in.ChatType == "" {
				return e, invalid("Missing chatType")
			}
			return e, invalid("Unknown chatType %q: expected tutor_me, test, flashcard, material, live_lecture or main", in.ChatType)
		}
		e.Metric = m
	case "":
		return e, invalid("Missing kind")
	default:
		return e, invalid("Unknown kind %q: expected %s or %s", in.Kind, analytics.KindSessionCreated, analytics.KindMessageSent)
	}
	return e, nil
}
