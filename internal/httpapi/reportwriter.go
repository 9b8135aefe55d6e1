package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

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
	perSchool    bool   // CSV: the answer is schools' group reports
	// district marks a district's answer, whose envelope names the
	// schools leftOut for want of a valid plan.
	district bool
	leftOut  []analytics.Group
	started  bool
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
	switch {
	case rw.students:
		header = []string{"startDate", "endDate", "studentId", "studentName"}
	case rw.perSchool:
		header = []string{"startDate", "endDate", "schoolId", "schoolName", "numStudentsUsed"}
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
		rw.buf = append(rw.buf, ']')
		if rw.district {
			// A few schools at most, once an answer: encoding/json is fine.
			leftOut, _ := json.Marshal(listOf(rw.leftOut, toLeftOut))
			rw.buf = append(append(rw.buf, `,"schoolsLeftOut":`...), leftOut...)
		}
		rw.buf = append(rw.buf, "}\n"...)
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

// appendCSV appends rep's record: its bounds, the school's id and name
// (of a school's report), the group's numStudentsUsed or the student's id
// and name, then the metrics in title order.
func (rw *reportWriter) appendCSV(rep *report.Report) {
	b := append(rw.buf, rw.periodOf(rep)...)
	b = append(b, ',')
	if rep.School != nil {
		b = appendCSVField(b, rep.School.ID)
		b = append(b, ',')
		b = appendCSVField(b, rep.School.Name)
		b = append(b, ',')
	}
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
	if rep.School != nil {
		b = append(b, `,"schoolId":`...)
		b = appendString(b, rep.School.ID)
		b = append(b, `,"schoolName":`...)
		b = appendString(b, rep.School.Name)
	}
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

// csvFileName names a CSV answer after its owner (a group or a district,
// whose ids are letters, digits, '.', '_' and '-': nothing to escape),
// what it holds and the range in loc, e.g.
// northside-high-chat-2025-01-01-to-2025-01-31.csv; a range given the
// wrong way round is refused before the name is used.
func csvFileName(owner string, loc *time.Location, retention analytics.Days, kind string, q report.Query, now time.Time) string {
	r := q.Range(now, loc, retention)
	return fmt.Sprintf("%s-%s-%s-to-%s.csv", owner, kind, r.First, r.Last)
}

// groupCSVName names a CSV answer of a group's reports: the class asked
// for, if any, and whether they are students'.
func groupCSVName(group analytics.Group, ep *report.Endpoint, q report.Query, now time.Time) string {
	loc, err := group.Location()
	if err != nil {
		loc = time.UTC
	}
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
	return csvFileName(group.ID, loc, group.Retention, kind, q, now)
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
