package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// Limits of POST /v1/events.
const (
	MaxEventsBody  = 10 << 20
	MaxEventsBatch = 10_000
	maxAdminBody   = 64 << 10
)

// platformHandler is a platform API handler: it returns the status and the
// body to send as JSON (or a streamed body that writes the answer itself),
// or an error for the one error writer.
type platformHandler func(r *http.Request) (int, any, error)

// streamed is a body that is not JSON: it sends its headers and itself.
type streamed func(w http.ResponseWriter)

// withToken runs h for requests with a valid platform token; a failed
// check counts against the client address and answers 401, held until
// its deadline.
func (s *Server) withToken(h platformHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := s.now()
		addr, ok := s.screenAddress(w, r, now)
		if !ok {
			return
		}
		scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		err := analytics.Errorf(analytics.Unauthenticated, "Missing platform token: send Authorization: Bearer <token>")
		var token analytics.PlatformToken
		if strings.EqualFold(scheme, "Bearer") && secret != "" {
			token, err = s.platform.AuthorizeToken(r.Context(), strings.TrimSpace(secret))
		}
		if err != nil {
			if analytics.ErrorCode(err) == analytics.Unauthenticated {
				s.failedAuth(w, addr, now)
				refuse(r)
				w.Header().Set("WWW-Authenticate", "Bearer")
			}
			s.writeError(w, r, err)
			return
		}
		if !s.spend(w, r, s.limits.token, token.ID, "token", now) {
			return
		}
		// What the call deletes, its receipt says was asked by this token.
		r = r.WithContext(analytics.WithRequester(r.Context(), fmt.Sprintf("token %s (%s)", token.ID, token.Label)))
		status, body, err := h(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		switch body := body.(type) {
		case nil:
			w.WriteHeader(status)
		case streamed:
			body(w)
		default:
			writeJSON(w, status, body)
		}
	}
}

// decodeBody reads a JSON object body into v, refusing unknown fields and
// anything after the object.
func decodeBody(r *http.Request, v any) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "" && typeErr.Type.Kind() == reflect.Slice:
			return analytics.Errorf(analytics.Invalid, "Invalid %s: expected an array", typeErr.Field)
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return analytics.Errorf(analytics.Invalid, "Invalid %s: expected a %s", typeErr.Field, typeErr.Type.Kind())
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return analytics.Errorf(analytics.Invalid, "Invalid body: unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return analytics.Errorf(analytics.Invalid, "Invalid body: expected a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return analytics.Errorf(analytics.Invalid, "Invalid body: expected one JSON object and nothing after it")
	}
	return nil
}

// ingest serves POST /v1/events: a JSON array of events, or NDJSON.
func (s *Server) ingest(r *http.Request) (int, any, error) {
	body, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	batch, err := splitEvents(r.Header.Get("Content-Type"), body)
	if err != nil {
		return 0, nil, err
	}
	if len(batch) > MaxEventsBatch {
		return 0, nil, analytics.Errorf(analytics.TooLarge, "Too many events: %d, at most %d per request", len(batch), MaxEventsBatch)
	}
	res, err := s.platform.Ingest(r.Context(), batch, false)
	if err == nil {
		s.metrics.Events(res.Accepted, res.Duplicates, len(res.Rejected))
	}
	return http.StatusOK, res, err
}

// splitEvents cuts a body into one raw JSON value per event: the elements
// of a JSON array (whatever the Content-Type but NDJSON's), or the
// non-blank lines of a body sent as application/x-ndjson.
func splitEvents(contentType string, body []byte) ([]json.RawMessage, error) {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	trimmed := bytes.TrimSpace(body)
	if mediaType != "application/x-ndjson" && len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(trimmed, &batch); err != nil {
			return nil, analytics.Errorf(analytics.Invalid, "Invalid body: not a valid JSON array of events")
		}
		return batch, nil
	}
	if mediaType != "application/x-ndjson" || len(trimmed) == 0 {
		// NDJSON is taken by its Content-Type only, so that a body that
		// is neither is named as such rather than read line by line.
		return nil, analytics.Errorf(analytics.Invalid, "Invalid body: expected a JSON array of events, or NDJSON with Content-Type application/x-ndjson")
	}
	var batch []json.RawMessage
	for line := range bytes.SplitSeq(trimmed, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			batch = append(batch, line)
		}
	}
	return batch, nil
}

// The admin API's resources.
type (
	groupJSON struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		TimeZone  string `json:"timeZone"`
		CreatedAt string `json:"createdAt"`
		// MinCellSize: report figures of fewer students are hidden; 0: off.
		MinCellSize int `json:"minCellSize"`
		// Retention: how many days of usage the group keeps ("400d"), or
		// "off".
		Retention string `json:"retention"`
		// DistrictID is the district the group is in; null: none.
		DistrictID *string `json:"districtId"`
		// InactiveAfter: the days without use after which a student who
		// used the service counts as stopped.
		InactiveAfter int `json:"inactiveAfter"`
	}
	planJSON struct {
		ID          int64   `json:"id"`
		GroupID     string  `json:"groupId"`
		Start       string  `json:"start"`
		End         *string `json:"end"`
		CancelledAt *string `json:"cancelledAt"`
		ValidNow    bool    `json:"validNow"`
		// The plan's first and last days in the group's zone: the dates
		// as an operator gives them (end is the instant after lastDay).
		FirstDay string  `json:"firstDay"`
		LastDay  *string `json:"lastDay"`
		// Seats: how many students the plan covers; null: it does not say.
		Seats *int `json:"seats"`
	}
	keyJSON struct {
		ID         string  `json:"id"`
		GroupID    string  `json:"groupId"`
		Prefix     string  `json:"prefix"`
		Label      string  `json:"label"`
		CreatedAt  string  `json:"createdAt"`
		RevokedAt  *string `json:"revokedAt"`
		LastUsedAt *string `json:"lastUsedAt"`
		// ClassIDs are a teacher's key's classes; absent for a key of the
		// whole group.
		ClassIDs *[]string `json:"classIds,omitempty"`
		Key      string    `json:"key,omitempty"` // only when created
	}
	studentJSON struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
)

func optionalTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := analytics.FormatTime(*t)
	return &s
}

func toGroup(g analytics.Group) groupJSON {
	return groupJSON{g.ID, g.Name, g.TimeZone, analytics.FormatTime(g.Created), g.MinCellSize, g.Retention.String(), orNull(g.DistrictID), g.InactiveAfter}
}

// plansOf returns a group's plan converter, which tells the plans' days
// in the group's zone.
func (s *Server) plansOf(ctx context.Context, groupID string) (func(analytics.Plan) planJSON, error) {
	g, err := s.platform.Group(ctx, groupID)
	if err != nil {
		return nil, err
	}
	loc, err := g.Location()
	if err != nil {
		return nil, err
	}
	return func(p analytics.Plan) planJSON {
		first, last := p.Days(loc)
		var lastDay *string
		if last != nil {
			d := last.String()
			lastDay = &d
		}
		var seats *int
		if p.Seats > 0 {
			seats = &p.Seats
		}
		return planJSON{p.ID, p.GroupID, analytics.FormatTime(p.Starts), optionalTime(p.Ends), optionalTime(p.Cancelled),
			p.ValidAt(s.now()), first.String(), lastDay, seats}
	}, nil
}

func toKey(k analytics.APIKey) keyJSON {
	out := keyJSON{ID: k.ID, GroupID: k.GroupID, Prefix: k.Prefix, Label: k.Label, CreatedAt: analytics.FormatTime(k.Created),
		RevokedAt: optionalTime(k.Revoked), LastUsedAt: optionalTime(k.LastUsed)}
	if k.ForClasses {
		classes := append([]string{}, k.Classes...)
		out.ClassIDs = &classes
	}
	return out
}

func listOf[T, J any](items []T, convert func(T) J) []J {
	out := make([]J, 0, len(items))
	for _, it := range items {
		out = append(out, convert(it))
	}
	return out
}

// createBody is what creates a school or a district.
type createBody struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	TimeZone string `json:"timeZone"`
}

func (s *Server) createGroup(r *http.Request) (int, any, error) {
	var in createBody
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	g, err := s.platform.CreateGroup(r.Context(), in.ID, in.Name, in.TimeZone)
	return http.StatusCreated, toGroup(g), err
}

func (s *Server) listGroups(r *http.Request) (int, any, error) {
	groups, err := s.platform.Groups(r.Context())
	return http.StatusOK, map[string]any{"groups": listOf(groups, toGroup)}, err
}

func (s *Server) getGroup(r *http.Request) (int, any, error) {
	g, err := s.platform.Group(r.Context(), r.PathValue("groupId"))
	return http.StatusOK, toGroup(g), err
}

// updateGroup renames a group, changes its time zone (rebuilding its
// rollups), or both.
func (s *Server) updateGroup(r *http.Request) (int, any, error) {
	var in struct {
		Name          *string `json:"name"`
		TimeZone      *string `json:"timeZone"`
		MinCellSize   *int    `json:"minCellSize"`
		Retention     *string `json:"retention"`
		InactiveAfter *int    `json:"inactiveAfter"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == nil && in.TimeZone == nil && in.MinCellSize == nil && in.Retention == nil && in.InactiveAfter == nil {
		return 0, nil, analytics.Errorf(analytics.Invalid, "Invalid body: give one or more of name, timeZone, minCellSize, retention and inactiveAfter")
	}
	g, err := s.platform.Group(r.Context(), r.PathValue("groupId"))
	if err == nil && in.Name != nil {
		g, err = s.platform.RenameGroup(r.Context(), g.ID, *in.Name)
	}
	if err == nil && in.TimeZone != nil {
		g, err = s.platform.SetTimeZone(r.Context(), g.ID, *in.TimeZone)
	}
	if err == nil && in.MinCellSize != nil {
		g, err = s.platform.SetMinCellSize(r.Context(), g.ID, *in.MinCellSize)
	}
	if err == nil && in.Retention != nil {
		g, err = s.platform.SetRetention(r.Context(), g.ID, *in.Retention)
	}
	if err == nil && in.InactiveAfter != nil {
		g, err = s.platform.SetInactiveAfter(r.Context(), g.ID, *in.InactiveAfter)
	}
	return http.StatusOK, toGroup(g), err
}

func (s *Server) deleteGroup(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.DeleteGroup(r.Context(), r.PathValue("groupId"))
}

func (s *Server) addPlan(r *http.Request) (int, any, error) {
	var in struct {
		Start string `json:"start"`
		End   string `json:"end"`
		Seats int    `json:"seats"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	p, err := s.platform.AddPlan(r.Context(), r.PathValue("groupId"), in.Start, in.End, in.Seats)
	return s.planAnswer(r.Context(), http.StatusCreated, p, err)
}

// planAnswer answers with one plan, or with err.
func (s *Server) planAnswer(ctx context.Context, status int, p analytics.Plan, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	toPlan, err := s.plansOf(ctx, p.GroupID)
	if err != nil {
		return 0, nil, err
	}
	return status, toPlan(p), nil
}

func (s *Server) listPlans(r *http.Request) (int, any, error) {
	plans, err := s.platform.Plans(r.Context(), r.PathValue("groupId"))
	if err != nil {
		return 0, nil, err
	}
	toPlan, err := s.plansOf(r.Context(), r.PathValue("groupId"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"plans": listOf(plans, toPlan)}, nil
}

func (s *Server) cancelPlan(r *http.Request) (int, any, error) {
	id, err := strconv.ParseInt(r.PathValue("planId"), 10, 64)
	if err != nil {
		return 0, nil, analytics.Errorf(analytics.NotFound, "Plan %q of group %q not found", r.PathValue("planId"), r.PathValue("groupId"))
	}
	p, err := s.platform.CancelPlan(r.Context(), r.PathValue("groupId"), id)
	return s.planAnswer(r.Context(), http.StatusOK, p, err)
}

func (s *Server) createKey(r *http.Request) (int, any, error) {
	var in struct {
		Label    string    `json:"label"`
		ClassIDs *[]string `json:"classIds"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.ClassIDs != nil && len(*in.ClassIDs) == 0 {
		return 0, nil, analytics.Errorf(analytics.Invalid, "Invalid classIds: a teacher's key needs at least one class; leave classIds out for a key of the whole group")
	}
	var classes []string
	if in.ClassIDs != nil {
		classes = *in.ClassIDs
	}
	k, secret, err := s.platform.CreateKey(r.Context(), r.PathValue("groupId"), in.Label, classes...)
	out := toKey(k)
	out.Key = secret
	return http.StatusCreated, out, err
}

func (s *Server) listKeys(r *http.Request) (int, any, error) {
	keys, err := s.platform.Keys(r.Context(), r.PathValue("groupId"))
	return http.StatusOK, map[string]any{"keys": listOf(keys, toKey)}, err
}

func (s *Server) revokeKey(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.RevokeKey(r.Context(), r.PathValue("groupId"), r.PathValue("keyId"))
}

func (s *Server) addStudent(r *http.Request) (int, any, error) {
	var in studentJSON
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	st, err := s.platform.AddStudent(r.Context(), r.PathValue("groupId"), in.ID, in.Name)
	return http.StatusCreated, studentJSON{st.ID, st.Name}, err
}

func (s *Server) listStudents(r *http.Request) (int, any, error) {
	students, err := s.platform.Students(r.Context(), r.PathValue("groupId"))
	analytics.SortStudents(students)
	return http.StatusOK, map[string]any{"students": listOf(students, func(st analytics.Student) studentJSON {
		return studentJSON{st.ID, st.Name}
	})}, err
}

func (s *Server) renameStudent(r *http.Request) (int, any, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	st, err := s.platform.RenameStudent(r.Context(), r.PathValue("groupId"), r.PathValue("studentId"), in.Name)
	return http.StatusOK, studentJSON{st.ID, st.Name}, err
}

func (s *Server) deleteStudent(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.DeleteStudent(r.Context(), r.PathValue("groupId"), r.PathValue("studentId"))
}
