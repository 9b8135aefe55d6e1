package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// lastUseParams are the parameters of GET /api/last-use; status may come
// many times, or as a comma-separated list.
var lastUseParams = []string{"classId", "status", "inactiveAfter", "format", "schoolId"}

// keyLastUse serves GET /api/last-use: the students a key may see (a
// school's, a teacher's classes', a district's school named by schoolId)
// with their last day of use and whether they stopped. It names students,
// so every answer is in the school's access log.
func (s *Server) keyLastUse(w http.ResponseWriter, r *http.Request, access analytics.Access, now time.Time) {
	values := r.URL.Query()
	uq, format, err := readUseQuery(values)
	if err == nil {
		access, err = schoolOfKey(r, access)
	}
	var list report.UseList
	if err == nil {
		uq.Scoped, uq.Classes = access.ForClasses, access.Classes
		// The key's group is read for its inactiveAfter, which the key's
		// check does not read.
		var g analytics.Group
		if g, err = s.engine.Directory.Group(r.Context(), access.Group.ID); err == nil {
			access.Group.InactiveAfter = g.InactiveAfter
			list, err = s.engine.LastUses(r.Context(), access.Group, uq, now)
		}
	}
	if err == nil && !s.accessLogOff {
		err = s.recordAccess(r, access, uq.Query, format, now)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if format == formatCSV {
		w.Header().Set("Content-Disposition", `attachment; filename="`+access.Group.ID+"-last-use-"+list.Today.String()+`.csv"`)
		writeLastUseCSV(w, list)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(appendUseList(make([]byte, 0, 256+len(list.Students)*180), list))
}

// appendUseList appends the list as JSON (the OpenAPI document's UseList),
// written by hand: encoding/json's reflection was a third of a list of
// 10,000 students.
func appendUseList(b []byte, list report.UseList) []byte {
	b = append(b, `{"success":true,"today":"`...)
	b = appendDay(b, list.Today)
	b = append(b, `","inactiveAfter":`...)
	b = strconv.AppendInt(b, int64(list.InactiveAfter), 10)
	b = append(b, `,"counts":{`...)
	for i, st := range analytics.UseStatuses {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, st...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(list.Counts[st]), 10)
	}
	b = append(b, `},"students":[`...)
	for i, u := range list.Students {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"studentId":`...)
		b = appendString(b, u.ID)
		b = append(b, `,"studentName":`...)
		b = appendString(b, u.Name)
		b = append(b, `,"status":"`...)
		b = append(b, u.Status...)
		b = append(b, `","lastUsed":`...)
		b = appendOptionalDay(b, u.Either())
		b = append(b, `,"daysSince":`...)
		if u.DaysSince < 0 {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, int64(u.DaysSince), 10)
		}
		b = append(b, `,"lastLiveLecture":`...)
		b = appendOptionalDay(b, u.LiveLecture)
		b = append(b, `,"lastChat":`...)
		b = appendOptionalDay(b, u.Chat)
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// appendOptionalDay appends a day as a JSON string, or null for NoDay.
func appendOptionalDay(b []byte, d analytics.Day) []byte {
	if d == analytics.NoDay {
		return append(b, "null"...)
	}
	b = append(b, '"')
	return append(appendDay(b, d), '"')
}

// appendDay appends a day as YYYY-MM-DD.
func appendDay(b []byte, d analytics.Day) []byte {
	y, m, day := d.Date()
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-')
	b = append(b, byte('0'+m/10), byte('0'+m%10), '-')
	return append(b, byte('0'+day/10), byte('0'+day%10))
}

// readUseQuery reads the parameters of a list of last use.
func readUseQuery(values url.Values) (report.UseQuery, string, error) {
	var uq report.UseQuery
	if err := checkParams(values, lastUseParams, "status", "schoolId"); err != nil {
		return uq, "", err
	}
	uq.ClassID = values.Get("classId")
	for _, v := range values["status"] {
		for _, name := range strings.Split(v, ",") {
			st := analytics.UseStatus(strings.ToLower(strings.TrimSpace(name)))
			if !slices.Contains(analytics.UseStatuses, st) {
				return uq, "", analytics.Errorf(analytics.Invalid, "Invalid status: expected never, stopped or active, got %q", name)
			}
			uq.Statuses = append(uq.Statuses, st)
		}
	}
	if v := values.Get("inactiveAfter"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > analytics.MaxInactiveAfter {
			return uq, "", analytics.Errorf(analytics.Invalid, "Invalid inactiveAfter: expected a number of days from 1 to %d, got %q", analytics.MaxInactiveAfter, v)
		}
		uq.InactiveAfter = n
	}
	format, err := readFormat(values)
	return uq, format, err
}

// writeLastUseCSV writes the list, one row a student; days of no use are
// empty.
func writeLastUseCSV(w http.ResponseWriter, list report.UseList) {
	out := newCSV(w)
	_ = out.Write([]string{"studentId", "studentName", "status", "lastUsed", "daysSince", "lastLiveLecture", "lastChat"})
	day := func(d analytics.Day) string {
		if d == analytics.NoDay {
			return ""
		}
		return d.String()
	}
	for _, u := range list.Students {
		since := ""
		if u.DaysSince >= 0 {
			since = strconv.Itoa(u.DaysSince)
		}
		_ = out.Write([]string{u.ID, u.Name, string(u.Status), day(u.Either()), since, day(u.LiveLecture), day(u.Chat)})
	}
	out.Flush()
}
