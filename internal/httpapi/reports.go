package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// maxReportBody caps the JSON body of a report request.
const maxReportBody = 64 << 10

// reportParams are the parameters a report request may carry, in the query
// string or in a JSON object body (docs/decisions.md, R1 to R3), and the format of
// the answer. studentIDParam, which may come many times, is apart.
var reportParams = []string{"startDate", "endDate", "students", "interval", "format", "classId", "schools"}

// listParams may be given many times: studentId names a student to keep
// in student reports, schoolId a school of a district's; repeated in the
// query string, or a string or an array of strings in a body.
var listParams = []string{"studentId", "schoolId"}

// districtParams are a district's key's parameters: schools=true for one
// report per school, and the schools asked for.
type districtParams struct {
	perSchool bool
	given     string // the first of them given, if any
	schoolIDs []string
}

// reports serves one report endpoint: the key first, then the parameters,
// then the reports, streamed as they are computed.
func (s *Server) reports(ep *report.Endpoint) http.HandlerFunc {
	return s.withKey(func(w http.ResponseWriter, r *http.Request, access analytics.Access, now time.Time) {
		q, dp, format, err := readQuery(r)
		if err == nil {
			access, err = narrowToSchool(access, q, dp)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if access.District != nil && access.Group.ID == "" {
			s.districtReports(w, r, access.District, ep, report.DistrictQuery{Query: q, PerSchool: dp.perSchool, SchoolIDs: dp.schoolIDs}, format, now)
			return
		}
		group := access.Group
		q.Scoped, q.Classes = access.ForClasses, access.Classes
		out := &reportWriter{w: w, ep: ep, writeTimeout: s.streamWriteTimeout}
		if format == formatCSV {
			out.csv, out.students = groupCSVName(group, ep, q, now), q.Students
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
		s.streamReports(w, r, out, group.ID, s.engine.Run(r.Context(), group, ep, q, now, out.write))
	})
}

// streamReports ends a streamed answer: the error, if it came before the
// first report, else an answer cut short, or the envelope's end.
func (s *Server) streamReports(w http.ResponseWriter, r *http.Request, out *reportWriter, of string, err error) {
	if err != nil {
		if out.started {
			// The status is sent: cut the response short rather than
			// let it end as valid JSON.
			if r.Context().Err() == nil {
				s.log.ErrorContext(r.Context(), "report failed mid-response", "of", of, "error", err.Error())
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

// narrowToSchool checks the district's parameters against the key: a
// school's key takes none; a district's key that asks a school's own
// reports (students=true, classId) names that one school, which it then
// opens as the school's own key does.
func narrowToSchool(access analytics.Access, q report.Query, dp districtParams) (analytics.Access, error) {
	ownReports := q.Students || q.ClassID != ""
	switch {
	case access.District == nil && dp.given != "":
		return access, analytics.Errorf(analytics.Invalid, "Invalid %s: schools and schoolId are for a district's key, and this key is a school's", dp.given)
	case access.District == nil || !ownReports:
		return access, nil
	case dp.perSchool:
		return access, analytics.Errorf(analytics.Invalid, "Invalid schools: schools=true gives each school's group report; students=true and classId ask one school's own reports, named with one schoolId")
	case len(dp.schoolIDs) != 1:
		return access, analytics.Errorf(analytics.Invalid, "Missing schoolId: students=true and classId ask one school's own reports; name the school with one schoolId")
	}
	planned, _, err := access.District.Asked(dp.schoolIDs)
	if err != nil {
		return access, err
	}
	if len(planned) == 0 {
		return access, analytics.Errorf(analytics.Invalid, "Invalid schoolId: school %q has no valid plan now, so its reports are not available", dp.schoolIDs[0])
	}
	return analytics.Access{Group: planned[0], KeyID: access.KeyID, District: access.District, Person: access.Person}, nil
}

// schoolOfKey returns what a key opens of one school, for the reads of a
// school (its classes, its access log): a school's key its own school; a
// district's key the school the schoolId parameter names, with a valid
// plan, as the school's own key opens it.
func schoolOfKey(r *http.Request, access analytics.Access) (analytics.Access, error) {
	ids := r.URL.Query()["schoolId"]
	switch {
	case access.District == nil && len(ids) > 0:
		return access, analytics.Errorf(analytics.Invalid, "Invalid schoolId: it is for a district's key, and this key is a school's")
	case access.District == nil:
		return access, nil
	case len(ids) != 1 || ids[0] == "":
		return access, analytics.Errorf(analytics.Invalid, "Missing schoolId: a district's key names the school with one schoolId")
	}
	return narrowToSchool(access, report.Query{Students: true}, districtParams{schoolIDs: ids})
}

// districtReports serves a district's reports: its sum over the schools
// asked, or each school's, naming those left out for want of a plan.
func (s *Server) districtReports(w http.ResponseWriter, r *http.Request, da *analytics.DistrictAccess, ep *report.Endpoint,
	dq report.DistrictQuery, format string, now time.Time) {
	_, leftOut, err := da.Asked(dq.SchoolIDs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := &reportWriter{w: w, ep: ep, writeTimeout: s.streamWriteTimeout, perSchool: dq.PerSchool, district: true, leftOut: leftOut}
	if format == formatCSV {
		kind := ep.Name
		if dq.PerSchool {
			kind += "-schools"
		}
		loc, err := da.District.Location()
		if err != nil {
			loc = time.UTC
		}
		out.csv = csvFileName(da.District.ID, loc, 0, kind, dq.Query, now)
	}
	if len(leftOut) > 0 {
		w.Header().Set("Schools-Left-Out", schoolIDs(leftOut))
	}
	s.streamReports(w, r, out, da.District.ID, s.engine.RunDistrict(r.Context(), da, ep, dq, now, out.write))
}

// schoolIDs are the schools' ids, joined by ", ".
func schoolIDs(schools []analytics.Group) string {
	out := make([]string, len(schools))
	for i, g := range schools {
		out[i] = g.ID
	}
	return strings.Join(out, ", ")
}

// recordAccess writes the access log's entry of a student-level answer
// about to be sent; failing, the answer is a 503.
func (s *Server) recordAccess(r *http.Request, access analytics.Access, q report.Query, format string, now time.Time) error {
	e := analytics.AccessEntry{GroupID: access.Group.ID, At: now, KeyID: access.KeyID, Client: s.limits.clientAddress(r),
		Endpoint: r.URL.Path, Format: format, Interval: q.Interval.String(), StudentIDs: q.StudentIDs, Person: access.Person}
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

// withKey runs h for requests with a valid key (x-api-key) or session,
// and what it opens, once the key's budget allows: a failed check counts
// against the client address and answers 403, held until its deadline.
func (s *Server) withKey(h func(w http.ResponseWriter, r *http.Request, access analytics.Access, now time.Time)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := s.now()
		addr, ok := s.screenAddress(w, r, now)
		if !ok {
			return
		}
		access, budget, err := s.authorize(r, now)
		if err != nil {
			if analytics.ErrorCode(err) == analytics.Unauthorized {
				s.failedAuth(w, addr, now)
				refuse(r)
			}
			s.writeError(w, r, err)
			return
		}
		if !s.spend(w, r, s.limits.key, budget, "key", now) {
			return
		}
		h(w, r, access, now)
	}
}

// authorize returns what the request's key (x-api-key) opens, or an LTI
// launch's session token sent as one (LTISessionPrefix), or, without one,
// its session's (the cookie), and the name of the budget it spends: the
// key's or the session's hash.
func (s *Server) authorize(r *http.Request, now time.Time) (analytics.Access, string, error) {
	key := r.Header.Get("x-api-key")
	if c, err := r.Cookie(sessionCookie); key == "" && err == nil && c.Value != "" {
		access, err := s.sessionAccess(r, c.Value, now)
		return access, string(analytics.HashSecret(c.Value)), err
	}
	keyHash := analytics.HashSecret(key)
	if strings.HasPrefix(key, LTISessionPrefix) {
		access, err := s.ltiAccess(r, key, now)
		return access, string(keyHash), err
	}
	access, err := s.engine.Directory.Authorize(r.Context(), keyHash, now)
	return access, string(keyHash), err
}

// The formats of a report answer.
const (
	formatJSON = "json"
	formatCSV  = "csv"
)

// readQuery gathers the parameters: from the query string, and from a JSON
// object body for those the query string does not give. It returns the
// district's parameters apart, and the format asked for: the format
// parameter's, else the Accept header's.
func readQuery(r *http.Request) (q report.Query, dp districtParams, format string, err error) {
	values, lists, err := paramValues(r)
	if err != nil {
		return q, dp, "", err
	}
	for _, name := range reportParams {
		if v, ok := values[name]; ok && v == "" {
			return q, dp, "", analytics.Errorf(analytics.Invalid, "Missing params")
		}
	}
	for _, name := range listParams {
		if slices.Contains(lists[name], "") {
			return q, dp, "", analytics.Errorf(analytics.Invalid, "Missing params")
		}
	}
	format = acceptedFormat(r.Header.Values("Accept"))
	if v, ok := values["format"]; ok {
		if format = strings.ToLower(v); format != formatJSON && format != formatCSV {
			return q, dp, "", analytics.Errorf(analytics.Invalid, "Invalid format: expected json or csv, got %q", v)
		}
	}
	if q, err = parseQuery(values); err != nil {
		return q, dp, "", err
	}
	if dp, err = parseDistrictParams(values, lists["schoolId"]); err != nil {
		return q, dp, "", err
	}
	return q, dp, format, q.SetStudentIDs(lists["studentId"])
}

// parseDistrictParams reads schools and schoolId: each school once.
func parseDistrictParams(values map[string]string, schoolIDs []string) (dp districtParams, err error) {
	if v, ok := values["schools"]; ok {
		dp.given = "schools"
		if dp.perSchool, err = report.ParseFlag("schools", v); err != nil {
			return dp, err
		}
	}
	if len(schoolIDs) > 0 && dp.given == "" {
		dp.given = "schoolId"
	}
	seen := map[string]bool{}
	for _, id := range schoolIDs {
		if seen[id] {
			return dp, analytics.Errorf(analytics.Invalid, "Invalid schoolId: %q is given twice", id)
		}
		seen[id] = true
	}
	dp.schoolIDs = schoolIDs
	return dp, nil
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
		if q.Students, err = report.ParseFlag("students", v); err != nil {
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

// paramValues returns each parameter given, as a string, and the values
// of the list parameters; the query string wins over the body.
func paramValues(r *http.Request) (map[string]string, map[string][]string, error) {
	values, lists, err := bodyParams(r)
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
	for _, name := range listParams {
		if vs, ok := query[name]; ok {
			lists[name] = vs
		}
	}
	return values, lists, nil
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
// values are strings (or, for students and schools, a boolean; for a list
// parameter, an array of strings too).
func bodyParams(r *http.Request) (values map[string]string, lists map[string][]string, err error) {
	values, lists = map[string]string{}, map[string][]string{}
	body, err := readJSONBody(r)
	if err != nil {
		return nil, nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return values, lists, nil
	}
	var fields map[string]json.RawMessage
	if body[0] != '{' || json.Unmarshal(body, &fields) != nil {
		return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid body: expected a JSON object such as {\"students\": true}")
	}
	for name, raw := range fields {
		isList := slices.Contains(listParams, name)
		if !isReportParam(name) && !isList {
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid body: unknown field %q; expected startDate, endDate, students, interval, format, classId, studentId, schools or schoolId", name)
		}
		var str string
		var b bool
		var list []string
		isFlag := name == "students" || name == "schools"
		switch {
		case string(raw) == "null":
		case isList && json.Unmarshal(raw, &str) == nil:
			lists[name] = []string{str}
		case json.Unmarshal(raw, &str) == nil:
			values[name] = str
		case isFlag && json.Unmarshal(raw, &b) == nil:
			values[name] = strconv.FormatBool(b)
		case isFlag:
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid %s: expected true or false, got %s", name, raw)
		case isList && json.Unmarshal(raw, &list) == nil:
			lists[name] = list
		case isList:
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid %s: expected a string or an array of strings, got %s", name, raw)
		default:
			return nil, nil, analytics.Errorf(analytics.Invalid, "Invalid %s: expected a string, got %s", name, raw)
		}
	}
	return values, lists, nil
}

func isReportParam(name string) bool {
	for _, p := range reportParams {
		if p == name {
			return true
		}
	}
	return false
}
