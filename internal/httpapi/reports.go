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
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// maxReportBody caps the JSON body of a report request.
const maxReportBody = 64 << 10

// reportParams are the parameters a report request may carry, in the query
// string or in a JSON object body (docs/decisions.md, R1 to R3), and the format of
// the answer. studentIDParam, which may come many times, is apart.
var reportParams = []string{"startDate", "endDate", "students", "interval", "format", "classId"}

// studentIDParam names a student to keep in student reports: repeated in
// the query string, or a string or an array of strings in a body.
const studentIDParam = "studentId"

// unauthorizedQuantum: a 403 of a report endpoint is sent at the first
// multiple of this after the request came, so that how long the key check
// took, which differs by cause (no such key, a revoked one, a group
// without a valid plan), does not show (docs/decisions.md, R4). A failed check thus
// costs a guesser at least this long.
const unauthorizedQuantum = 5 * time.Millisecond

// reports serves one report endpoint: the key first, then the parameters,
// then the reports, streamed as they are computed.
func (s *Server) reports(ep *report.Endpoint) http.HandlerFunc {
	return s.withKey(func(w http.ResponseWriter, r *http.Request, access analytics.Access, now time.Time) {
		q, format, err := readQuery(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		group := access.Group
		q.Scoped, q.Classes = access.ForClasses, access.Classes
		out := &reportWriter{w: w, ep: ep, writeTimeout: s.streamWriteTimeout}
		if format == formatCSV {
			out.csv, out.students = csvFileName(group, ep, q, now), q.Students
		}
		if q.Students && !s.accessLogOff {
			// The access log's entry is written while the reports are
			// computed, and waited for before the first student's figures
			// go out; an answer refused, or without students, has none.
			recorded := make(chan error, 1)
			entry := q
			q.Disclosing = func() { go func() { recorded <- s.recordAccess(r, access, entry, format, now) }() }
			out.disclose = func() error { return <-recorded }
		}
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
	})
}

// recordAccess writes the access log's entry of a student-level answer
// about to be sent; failing, the answer is a 503.
func (s *Server) recordAccess(r *http.Request, access analytics.Access, q report.Query, format string, now time.Time) error {
	e := analytics.AccessEntry{GroupID: access.Group.ID, At: now, KeyID: access.KeyID, Client: s.limits.clientAddress(r),
		Endpoint: r.URL.Path, Format: format, Interval: q.Interval.String(), StudentIDs: q.StudentIDs}
	// The days of the report, as it reads them: in the group's zone.
	loc, err := access.Group.Location()
	if err != nil {
		return err
	}
	days := q.Range(now, loc, access.Group.Retention)
	e.StartDate, e.EndDate = days.First.String(), days.Last.String()
	switch {
	case q.ClassID != "":
		e.ClassIDs = []string{q.ClassID}
	case access.ForClasses:
		e.ClassIDs = access.Classes
	}
	if err := s.engine.Directory.RecordAccess(r.Context(), e); err != nil {
		return fmt.Errorf("recording the access: %w: %w", analytics.ErrUnavailable, err)
	}
	return nil
}

// withKey runs h for requests with a school's valid key (x-api-key), and
// what it opens, once the key's budget allows: a failed check answers 403
// at the quantum's next multiple, and counts against the client address.
func (s *Server) withKey(h func(w http.ResponseWriter, r *http.Request, access analytics.Access, now time.Time)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		now := s.now()
		addr, ok := s.screenAddress(w, r, now)
		if !ok {
			return
		}
		keyHash := analytics.HashSecret(r.Header.Get("x-api-key"))
		access, err := s.engine.Directory.Authorize(r.Context(), keyHash, now)
		if err != nil {
			if analytics.ErrorCode(err) == analytics.Unauthorized {
				s.failedAuth(w, addr, now)
				waitForQuantum(r.Context(), start)
			}
			s.writeError(w, r, err)
			return
		}
		if !s.spend(w, r, s.limits.key, string(keyHash), "key", now) {
			return
		}
		h(w, r, access, now)
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

// The formats of a report answer.
const (
	formatJSON = "json"
	formatCSV  = "csv"
)

// readQuery gathers the parameters: from the query string, and from a JSON
// object body for those the query string does not give. It returns the
// format asked for too: the format parameter's, else the Accept header's.
func readQuery(r *http.Request) (q report.Query, format string, err error) {
	values, studentIDs, err := paramValues(r)
	if err != nil {
		return q, "", err
	}
	for _, name := range reportParams {
		if v, ok := values[name]; ok && v == "" {
			return q, "", analytics.Errorf(analytics.Invalid, "Missing params")
		}
	}
	if slices.Contains(studentIDs, "") {
		return q, "", analytics.Errorf(analytics.Invalid, "Missing params")
	}
	format = acceptedFormat(r.Header.Values("Accept"))
	if v, ok := values["format"]; ok {
		if format = strings.ToLower(v); format != formatJSON && format != formatCSV {
			return q, "", analytics.Errorf(analytics.Invalid, "Invalid format: expected json or csv, got %q", v)
		}
	}
	if q, err = parseQuery(values); err != nil {
		return q, "", err
	}
	return q, format, q.SetStudentIDs(studentIDs)
}

// acceptedFormat reads Accept headers: CSV when they name text/csv with a
// quality above zero and at least that of application/json; JSON otherwise
// (also for */* and for types the service does not make).
func acceptedFormat(accept []string) string {
	quality := map[string]float64{}
	for _, header := range accept {
		for part := range strings.SplitSeq(header, ",") {
			media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(v, 64); err != nil {
					continue
				}
			}
			quality[media] = max(quality[media], q)
		}
	}
	if quality["text/csv"] > 0 && quality["text/csv"] >= quality["application/json"] {
		return formatCSV
	}
	return formatJSON
}

// parseQuery reads the report parameters of values.
func parseQuery(values map[string]string) (report.Query, error) {
	var q report.Query
	var err error
	for _, p := range []struct {
		name string
		into **analytics.Date
	}{{"startDate", &q.Start}, {"endDate", &q.End}} {
		if v, ok := values[p.name]; ok {
			d, err := analytics.ParseDate(p.name, v)
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
	q.ClassID = values["classId"]
	return q, nil
}

// paramValues returns each parameter given, as a string, and the
// studentId values; the query string wins over the body.
func paramValues(r *http.Request) (map[string]string, []string, error) {
	values, studentIDs, err := bodyParams(r)
	if err != nil {
		return nil, nil, err
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid query string: %s", queryProblem(err))
	}
	for _, name := range reportParams {
		switch vs := query[name]; len(vs) {
		case 0:
		case 1:
			values[name] = vs[0]
		default:
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid %s: given %d times in the query string", name, len(vs))
		}
	}
	if vs, ok := query[studentIDParam]; ok {
		studentIDs = vs
	}
	return values, studentIDs, nil
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
// values are strings (or, for students, a boolean; for studentId, an array
// of strings too).
func bodyParams(r *http.Request) (values map[string]string, studentIDs []string, err error) {
	values = map[string]string{}
	body, err := readJSONBody(r)
	if err != nil {
		return nil, nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return values, nil, nil
	}
	var fields map[string]json.RawMessage
	if body[0] != '{' || json.Unmarshal(body, &fields) != nil {
		return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid body: expected a JSON object such as {\"students\": true}")
	}
	for name, raw := range fields {
		if !isReportParam(name) && name != studentIDParam {
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid body: unknown field %q; expected startDate, endDate, students, interval, format, classId or studentId", name)
		}
		var s string
		var b bool
		switch {
		case string(raw) == "null":
		case name == studentIDParam && json.Unmarshal(raw, &s) == nil:
			studentIDs = []string{s}
		case json.Unmarshal(raw, &s) == nil:
			values[name] = s
		case name == "students" && json.Unmarshal(raw, &b) == nil:
			values[name] = strconv.FormatBool(b)
		case name == "students":
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid students: expected true or false, got %s", raw)
		case name == studentIDParam && json.Unmarshal(raw, &studentIDs) == nil:
		case name == studentIDParam:
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid studentId: expected a string or an array of strings, got %s", raw)
		default:
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid %s: expected a string, got %s", name, raw)
		}
	}
	return values, studentIDs, nil
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
// their own status. Each report is appended to one reused buffer, which
// goes out when full; what is the same for many reports (a period's
// bounds, a student's id and name, the metric titles) is encoded once.
type reportWriter struct {
	w            http.ResponseWriter
	writeTimeout time.Duration // of each write to the client
	out          io.Writer
	ep           *report.Endpoint
	csv          string // the file name of a CSV answer; empty: JSON
	students     bool   // CSV: the answer is student reports
	started      bool
	// disclose, if set, is called before the first report is sent: the
	// record of a disclosure, without which nothing is.
	disclose func() error
	count    int
	buf      []byte
	// period is the encoding of the bounds of the period of periodStart.
	periodStart time.Time
	period      []byte
	// student[i] is the encoding of the student of StudentIndex i.
	student [][]byte
	// titles[i] is the JSON of the metric title i, up to its value.
	titles [][]byte
}

// flushAt is the buffer size at which the writer sends.
const flushAt = 64 << 10

// start sends the status and the headers, and the envelope's start (JSON)
// or the header row (CSV).
func (rw *reportWriter) start() {
	rw.started = true
	if rw.csv != "" {
		rw.w.Header().Set("Content-Type", "text/csv; charset=utf-8; header=present")
		rw.w.Header().Set("Content-Disposition", `attachment; filename="`+rw.csv+`"`)
	} else {
		rw.w.Header().Set("Content-Type", "application/json")
	}
	rw.w.WriteHeader(http.StatusOK)
	rw.out = deadlineWriter{rw.w, http.NewResponseController(rw.w), rw.writeTimeout}
	rw.buf = make([]byte, 0, flushAt+4<<10)
	if rw.csv == "" {
		rw.buf = append(rw.buf, `{"success":true,"reports":[`...)
		for _, title := range rw.ep.Titles {
			rw.titles = append(rw.titles, []byte(`{"title":"`+title+`","value":`))
		}
		return
	}
	header := []string{"startDate", "endDate", "numStudentsUsed"}
	if rw.students {
		header = []string{"startDate", "endDate", "studentId", "studentName"}
	}
	for i, field := range append(header, rw.ep.Titles...) {
		if i > 0 {
			rw.buf = append(rw.buf, ',')
		}
		rw.buf = appendCSVField(rw.buf, field)
	}
	rw.buf = append(rw.buf, "\r\n"...)
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
		if rw.disclose != nil {
			if err := rw.disclose(); err != nil {
				return err
			}
		}
		rw.start()
	}
	if rw.csv != "" {
		rw.appendCSV(rep)
	} else {
		if rw.count > 0 {
			rw.buf = append(rw.buf, ',')
		}
		rw.appendJSON(rep)
	}
	rw.count++
	if len(rw.buf) < flushAt {
		return nil
	}
	_, err := rw.out.Write(rw.buf)
	rw.buf = rw.buf[:0]
	return err
}

func (rw *reportWriter) finish() error {
	if !rw.started {
		rw.start()
	}
	if rw.csv == "" {
		rw.buf = append(rw.buf, "]}\n"...)
	}
	_, err := rw.out.Write(rw.buf)
	return err
}

// periodOf returns the encoding of rep's bounds, made anew when the
// period changes: a CSV record's first two fields, or JSON's startDate
// and endDate members.
func (rw *reportWriter) periodOf(rep *report.Report) []byte {
	if rw.period != nil && rep.Start.Equal(rw.periodStart) {
		return rw.period
	}
	const layout = "2006-01-02T15:04:05.000Z"
	b := rw.period[:0]
	if rw.csv != "" {
		b = rep.Start.UTC().AppendFormat(b, layout)
		b = append(b, ',')
		b = rep.End.UTC().AppendFormat(b, layout)
	} else {
		b = append(b, `{"startDate":"`...)
		b = rep.Start.UTC().AppendFormat(b, layout)
		b = append(b, `","endDate":"`...)
		b = rep.End.UTC().AppendFormat(b, layout)
		b = append(b, '"')
	}
	rw.period, rw.periodStart = b, rep.Start
	return b
}

// studentOf returns the encoding of rep's student, made on first use: a
// CSV record's id and name fields, or JSON's studentName and studentId
// members.
func (rw *reportWriter) studentOf(rep *report.Report) []byte {
	i := rep.StudentIndex
	if i < len(rw.student) && rw.student[i] != nil {
		return rw.student[i]
	}
	for len(rw.student) <= i {
		rw.student = append(rw.student, nil)
	}
	// Sized for the usual text, which needs no escapes: one allocation a
	// student rather than a few.
	b := make([]byte, 0, len(`,"studentName":,"studentId":""""`)+len(rep.Student.Name)+len(rep.Student.ID))
	if rw.csv != "" {
		b = appendCSVField(b, rep.Student.ID)
		b = append(b, ',')
		b = appendCSVField(b, rep.Student.Name)
	} else {
		b = append(b, `,"studentName":`...)
		b = appendString(b, rep.Student.Name)
		b = append(b, `,"studentId":`...)
		b = appendString(b, rep.Student.ID)
	}
	rw.student[i] = b
	return b
}

// appendCSV appends rep's record: its bounds, the group's numStudentsUsed
// or the student's id and name, then the metrics in title order.
func (rw *reportWriter) appendCSV(rep *report.Report) {
	b := append(rw.buf, rw.periodOf(rep)...)
	b = append(b, ',')
	if rep.Student == nil {
		b = appendFigure(b, int64(rep.NumStudentsUsed), "")
	} else {
		b = append(b, rw.studentOf(rep)...)
	}
	for _, v := range rep.Values {
		b = append(b, ',')
		b = appendFigure(b, v, "")
	}
	rw.buf = append(b, "\r\n"...)
}

// appendJSON appends rep as JSON, its fields in the documented order.
func (rw *reportWriter) appendJSON(rep *report.Report) {
	b := append(rw.buf, rw.periodOf(rep)...)
	if rep.Student == nil {
		b = append(b, `,"numStudentsUsed":`...)
		b = appendFigure(b, int64(rep.NumStudentsUsed), "null")
	} else {
		b = append(b, rw.studentOf(rep)...)
	}
	b = append(b, `,"data":[`...)
	for i, title := range rw.titles {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, title...)
		b = appendFigure(b, rep.Values[i], "null")
		b = append(b, '}')
	}
	rw.buf = append(b, "]}"...)
}

// appendFigure appends a count, or hidden for one that a small-cell rule
// hides (docs/decisions.md, small cells): JSON's null, CSV's empty field.
func appendFigure(b []byte, v int64, hidden string) []byte {
	if v == report.Suppressed {
		return append(b, hidden...)
	}
	return strconv.AppendInt(b, v, 10)
}

// appendCSVField appends a CSV field as encoding/csv writes it with CRLF
// line ends: quoted when it holds a comma, a quote, a line break or a
// leading space (or is \.), quotes doubled, line breaks as CRLF.
func appendCSVField(b []byte, field string) []byte {
	quote := field == `\.` || strings.ContainsAny(field, ",\"\r\n")
	if !quote && field != "" {
		r, _ := utf8.DecodeRuneInString(field)
		quote = unicode.IsSpace(r)
	}
	if !quote {
		return append(b, field...)
	}
	b = append(b, '"')
	for i := 0; i < len(field); i++ {
		switch c := field[i]; c {
		case '"':
			b = append(b, '"', '"')
		case '\r':
		case '\n':
			b = append(b, '\r', '\n')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// csvFileName names a CSV answer after the group, the endpoint and the
// range, e.g. northside-high-chat-2025-01-01-to-2025-01-31.csv; a range
// given the wrong way round is refused before the name is used.
func csvFileName(group analytics.Group, ep *report.Endpoint, q report.Query, now time.Time) string {
	loc, err := group.Location()
	if err != nil {
		loc = time.UTC
	}
	r := q.Range(now, loc, group.Retention)
	kind := ep.Name
	if q.ClassID != "" {
		// A class id may hold any character: those a group id may not
		// are left out of the name.
		kind += "-" + strings.Map(func(r rune) rune {
			if r < utf8.RuneSelf && (r == '.' || r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return r
			}
			return '_'
		}, q.ClassID)
	}
	if q.Students {
		kind += "-students"
	}
	// Group ids are letters, digits, '.', '_' and '-': nothing to escape.
	return fmt.Sprintf("%s-%s-%s-to-%s.csv", group.ID, kind, r.First, r.Last)
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
