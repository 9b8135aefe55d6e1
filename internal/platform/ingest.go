package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
)

// EventInput is one usage event as the platform sends it (decisions R6).
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
// the valid ones: their students are enrolled or renamed, then the events
// are appended in one transaction. When allOrNothing is set and any event
// is rejected, nothing is stored.
func (p *Platform) Ingest(ctx context.Context, batch []json.RawMessage, allOrNothing bool) (IngestResult, error) {
	res := IngestResult{Rejected: []Rejection{}}
	now := p.Now()
	groups := map[string]*time.Location{} // nil: no such group
	events := make([]analytics.Event, 0, len(batch))
	students := map[string][]analytics.StudentUpdate{}
	for i, raw := range batch {
		in, err := decodeEvent(raw)
		if err == nil {
			var loc *time.Location
			if loc, err = p.groupZone(ctx, groups, in.GroupID); err == nil {
				var e analytics.Event
				if e, err = validate(in, loc, now); err == nil {
					events = append(events, e)
					students[e.GroupID] = append(students[e.GroupID], analytics.StudentUpdate{ID: e.StudentID, Name: in.StudentName})
					continue
				}
			}
		}
		if analytics.ErrorCode(err) != analytics.Invalid {
			return res, err
		}
		res.Rejected = append(res.Rejected, Rejection{Index: i, Reason: analytics.ErrorMessage(err)})
	}
	if len(events) == 0 || allOrNothing && len(res.Rejected) > 0 {
		return res, nil
	}
	groupIDs := make([]string, 0, len(students))
	for g := range students {
		groupIDs = append(groupIDs, g)
	}
	slices.Sort(groupIDs)
	for _, g := range groupIDs {
		if err := p.Directory.SaveStudents(ctx, g, students[g]); err != nil {
			return res, err
		}
	}
	appended, err := p.Usage.AppendEvents(ctx, events)
	if err != nil {
		return res, err
	}
	res.Accepted, res.Duplicates = appended.Accepted, appended.Duplicates
	return res, nil
}

func decodeEvent(raw json.RawMessage) (EventInput, error) {
	var in EventInput
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return in, invalid("Invalid event: expected a JSON object")
	}
	if err := json.Unmarshal(trimmed, &in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return in, invalid("Invalid %s: expected a string", typeErr.Field)
		}
		return in, invalid("Invalid event: not valid JSON")
	}
	return in, nil
}

// groupZone returns the time zone of a group, remembering answers for the
// rest of the batch.
func (p *Platform) groupZone(ctx context.Context, cache map[string]*time.Location, id string) (*time.Location, error) {
	if id == "" {
		return nil, invalid("Missing groupId")
	}
	loc, seen := cache[id]
	if !seen {
		g, err := p.Directory.Group(ctx, id)
		switch {
		case analytics.ErrorCode(err) == analytics.NotFound:
		case err != nil:
			return nil, err
		default:
			if loc, err = g.Location(); err != nil {
				return nil, err
			}
		}
		cache[id] = loc
	}
	if loc == nil {
		return nil, invalid("Unknown groupId %q", id)
	}
	return loc, nil
}

func validate(in EventInput, loc *time.Location, now time.Time) (analytics.Event, error) {
	e := analytics.Event{GroupID: in.GroupID, ID: in.ID, StudentID: in.StudentID}
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
	at, err := time.Parse(time.RFC3339Nano, in.OccurredAt)
	switch {
	case err != nil:
		return e, invalid("Invalid occurredAt: expected an RFC 3339 timestamp with offset, got %q", in.OccurredAt)
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
