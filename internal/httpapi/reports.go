package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// maxReportBody caps the JSON body of a report request.
const maxReportBody = 64 << 10

// reportParams are the parameters a report request may carry, in the query
// string or in a JSON object body (decisions R1 to R3).
var reportParams = []string{"startDate", "endDate", "students", "interval"}

// unauthorizedQuantum: a 403 of a report endpoint is sent at the first
// multiple of this after the request came, so that how long the key check
// took, which differs by cause (no such key, a revoked one, a group
// without a valid plan), does not show (decisions R4). A failed check thus
// costs a guesser at least this long.
const unauthorizedQuantum = 5 * time.Millisecond

// reports serves one report endpoint: the key first, then the parameters,
// then the reports, streamed as they are computed.
func (s *Server) reports(ep *report.Endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		now := s.now()
		group, err := s.directory.Authorize(r.Context(), analytics.HashSecret(r.Header.Get("x-api-key")), now)
		if err != nil {
			if analytics.ErrorCode(err) == analytics.Unauthorized {
				waitForQuantum(r.Context(), start)
			}
			s.writeError(w, r, err)
			return
		}
		q, err := readQuery(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out := &reportWriter{w: w, ep: ep, writeTimeout: s.streamWriteTimeout}
		if err := s.engine.Run(r.Context(), group, ep, q, now, out.write); err != nil {
			if out.started {
				// The status is sent: cut the response short rather than
				// let it end as valid JSON.
				if r.Context().Err() == nil {
					s.log.ErrorContext(r.Context(), "report failed mid-response", "group", group.ID, "error", err.Error())
				}
				panic(http.ErrAbortHandler)
			}
			s.writeError(w, r, err)
			return
		}
		if err := out.finish(); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
}

// waitForQuantum waits until the first multiple of unauthorizedQuantum
// since start, or until ctx ends.
func waitForQuantum(ctx context.Context, start time.Time) {
	wait := unauthorizedQuantum - time.Since(start)%unauthorizedQuantum
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// readQuery gathers the parameters: from the query string, and from a JSON
// object body for those the query string does not give.
func readQuery(r *http.Request) (report.Query, error) {
	var q report.Query
	values, err := paramValues(r)
	if err != nil {
		return q, err
	}
	for _, name := range reportParams {
		if v, ok := values[name]; ok && v == "" {
			return q, analytics.Errorf(analytics.Invalid, "Missing params")
		}
	}
	for _, p := range []struct {
		name string
		into **report.Date
	}{{"startDate", &q.Start}, {"endDate", &q.End}} {
		if v, ok := values[p.name]; ok {
			d, err := report.ParseDate(p.name, v)
			if err != nil {
				return q, err
			}
			*p.into = &d
		}
	}
	if v, ok := values["students"]; ok {
		if q.Students, err = report.ParseStudents(v); err != nil {
			return q, err
		}
	}
	if v, ok := values["interval"]; ok {
		if q.Interval, err = report.ParseInterval(v); err != nil {
			return q, err
		}
	}
	return q, nil
}

// paramValues returns each parameter given, as a string; the query string
// wins over the body.
func paramValues(r *http.Request) (map[string]string, error) {
	values, err := bodyParams(r)
	if err != nil {
		return nil, err
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, analytics.Errorf(analytics.Invalid, "Invalid query string: %s", queryProblem(err))
	}
	for _, name := range reportParams {
		switch vs := query[name]; len(vs) {
		case 0:
		case 1:
			values[name] = vs[0]
		default:
			return nil, analytics.Errorf(analytics.Invalid, "Invalid %s: given %d times in the query string", name, len(vs))
		}
	}
	return values, nil
}

func queryProblem(err error) string {
	var escape url.EscapeError
	if errors.As(err, &escape) {
		return "bad percent-encoding " + strconv.Quote(string(escape))
	}
	return "cannot be decoded"
}

// bodyParams reads the parameters of a JSON object body. An empty body is
// fine; any other body must be a JSON object of known parameters whose
// values are strings (or, for students, a boolean).
func bodyParams(r *http.Request) (map[string]string, error) {
	values := map[string]string{}
	body, err := readJSONBody(r)
	if err != nil {
		return nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return values, nil
	}
	var fields map[string]json.RawMessage
	if body[0] != '{' || json.Unmarshal(body, &fields) != nil {
		return nil, analytics.Errorf(analytics.Invalid, "Invalid body: expected a JSON object such as {\"students\": true}")
	}
	for name, raw := range fields {
		if !isReportParam(name) {
			return nil, analytics.Errorf(analytics.Invalid, "Invalid body: unknown field %q; expected startDate, endDate, students or interval", name)
		}
		var s string
		var b bool
		switch {
		case string(raw) == "null":
		case json.Unmarshal(raw, &s) == nil:
			values[name] = s
		case name == "students" && json.Unmarshal(raw, &b) == nil:
			values[name] = strconv.FormatBool(b)
		case name == "students":
			return nil, analytics.Errorf(analytics.Invalid, "Invalid students: expected true or false, got %s", raw)
		default:
			return nil, analytics.Errorf(analytics.Invalid, "Invalid %s: expected a string, got %s", name, raw)
		}
	}
	return values, nil
}

func isReportParam(name string) bool {
	for _, p := range reportParams {
		if p == name {
			return true
		}
	}
	return false
}

// reportWriter streams the response envelope around the reports. Nothing
// is sent until the first report, so errors found before it still get
// their own status.
type reportWriter struct {
	w            http.ResponseWriter
	writeTimeout time.Duration // of each write to the client
	buf          *bufio.Writer
	ep           *report.Endpoint
	started      bool
	scratch      []byte
}

func (rw *reportWriter) start() {
	rw.started = true
	rw.w.Header().Set("Content-Type", "application/json")
	rw.w.WriteHeader(http.StatusOK)
	rw.buf = bufio.NewWriterSize(deadlineWriter{rw.w, http.NewResponseController(rw.w), rw.writeTimeout}, 64<<10)
	rw.buf.WriteString(`{"success":true,"reports":[`)
}

// deadlineWriter gives each write to the client a deadline of its own.
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.w.Write(p)
}

func (rw *reportWriter) write(rep *report.Report) error {
	if !rw.started {
		rw.start()
	} else {
		rw.buf.WriteByte(',')
	}
	rw.scratch = appendReport(rw.scratch[:0], rw.ep, rep)
	_, err := rw.buf.Write(rw.scratch)
	return err
}

func (rw *reportWriter) finish() error {
	if !rw.started {
		rw.start()
	}
	rw.buf.WriteString("]}\n")
	return rw.buf.Flush()
}

// appendReport appends rep as JSON, its fields in the documented order.
func appendReport(b []byte, ep *report.Endpoint, rep *report.Report) []byte {
	const layout = "2006-01-02T15:04:05.000Z"
	b = append(b, `{"startDate":"`...)
	b = rep.Start.UTC().AppendFormat(b, layout)
	b = append(b, `","endDate":"`...)
	b = rep.End.UTC().AppendFormat(b, layout)
	b = append(b, '"')
	if rep.Student == nil {
		b = append(b, `,"numStudentsUsed":`...)
		b = strconv.AppendInt(b, int64(rep.NumStudentsUsed), 10)
	} else {
		b = append(b, `,"studentName":`...)
		b = appendString(b, rep.Student.Name)
		b = append(b, `,"studentId":`...)
		b = appendString(b, rep.Student.ID)
	}
	b = append(b, `,"data":[`...)
	for i, title := range ep.Titles {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"title":"`...)
		b = append(b, title...)
		b = append(b, `","value":`...)
		b = strconv.AppendInt(b, rep.Values[i], 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
