package httpapi

import (
	"cmp"
	"encoding/csv"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// adoptionJSON is one school's adoption, or the total's (School empty).
type adoptionJSON struct {
	SchoolID        string   `json:"schoolId,omitempty"`
	SchoolName      string   `json:"schoolName,omitempty"`
	Enrolled        int      `json:"enrolled"`
	UsedLiveLecture *int     `json:"usedLiveLecture"`
	UsedChat        *int     `json:"usedChat"`
	UsedEither      *int     `json:"usedEither"`
	ShareUsed       *float64 `json:"shareUsed"`
	Seats           *int     `json:"seats"`
	SeatsUsedShare  *float64 `json:"seatsUsedShare"`
	OverSeats       *bool    `json:"overSeats"`
}

// toAdoption shows an adoption's figures: a hidden one, and what would
// tell it, as null; the shares to four places.
func toAdoption(a report.Adoption) adoptionJSON {
	shown := func(v int) *int {
		if v == report.Suppressed {
			return nil
		}
		return &v
	}
	share := func(of, in int) *float64 {
		if v, ok := report.Share(of, in); ok {
			return &v
		}
		return nil
	}
	out := adoptionJSON{Enrolled: a.Enrolled, UsedLiveLecture: shown(a.UsedLiveLecture), UsedChat: shown(a.UsedChat),
		UsedEither: shown(a.UsedEither), ShareUsed: share(a.UsedEither, a.Enrolled)}
	if a.School != nil {
		out.SchoolID, out.SchoolName = a.School.ID, a.School.Name
	}
	if a.Seats > 0 {
		out.Seats, out.SeatsUsedShare = &a.Seats, share(a.UsedEither, a.Seats)
		if a.UsedEither != report.Suppressed {
			over := a.UsedEither > a.Seats
			out.OverSeats = &over
		}
	}
	return out
}

// adoptionParams are the parameters of GET /api/adoption.
var adoptionParams = []string{"startDate", "endDate", "format", "schoolId"}

// keyAdoption serves GET /api/adoption: for a school's key its school,
// for a district's key its schools (or those schoolId names) and their
// total. A teacher's key has none: it would count the school's students.
func (s *Server) keyAdoption(w http.ResponseWriter, r *http.Request, access analytics.Access, now time.Time) {
	values := r.URL.Query()
	q, format, err := readAdoptionQuery(values)
	var asked, planned, leftOut []analytics.Group
	loc := time.UTC
	switch {
	case err != nil:
	case access.ForClasses:
		err = analytics.Errorf(analytics.Unauthorized, "A teacher's key cannot read the school's adoption")
	case access.District == nil && len(values["schoolId"]) > 0:
		err = analytics.Errorf(analytics.Invalid, "Invalid schoolId: it is for a district's key, and this key is a school's")
	case access.District == nil:
		asked, planned = []analytics.Group{access.Group}, []analytics.Group{access.Group}
		loc, err = access.Group.Location()
	default:
		if _, err = parseDistrictParams(map[string]string{}, values["schoolId"]); err == nil {
			asked, leftOut, err = access.District.Asked(values["schoolId"])
			planned = access.District.Schools
		}
		if err == nil {
			loc, err = access.District.District.Location()
		}
	}
	var rep report.AdoptionReport
	if err == nil {
		rep, err = s.engine.Adoption(r.Context(), asked, planned, q, now, loc)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if format == formatCSV {
		owner, retention := access.Group.ID, access.Group.Retention
		if access.District != nil {
			owner, retention = access.District.District.ID, 0
		}
		w.Header().Set("Content-Disposition", `attachment; filename="`+csvFileName(owner, loc, retention, "adoption", q, now)+`"`)
		writeAdoptionCSV(w, rep)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Success        bool           `json:"success"`
		StartDate      string         `json:"startDate"`
		EndDate        string         `json:"endDate"`
		Total          adoptionJSON   `json:"total"`
		Schools        []adoptionJSON `json:"schools"`
		SchoolsLeftOut []leftOutJSON  `json:"schoolsLeftOut"`
	}{true, analytics.FormatTime(rep.Start), analytics.FormatTime(rep.End), toAdoption(rep.Total), listOf(rep.Schools, toAdoption), listOf(leftOut, toLeftOut)})
}

// leftOutJSON names a school a district's answer leaves out.
type leftOutJSON struct {
	SchoolID   string `json:"schoolId"`
	SchoolName string `json:"schoolName"`
	Reason     string `json:"reason"`
}

func toLeftOut(g analytics.Group) leftOutJSON { return leftOutJSON{g.ID, g.Name, "no valid plan"} }

// readAdoptionQuery reads the range and the format of an adoption request.
func readAdoptionQuery(values url.Values) (report.Query, string, error) {
	var q report.Query
	if err := checkParams(values, adoptionParams, "schoolId"); err != nil {
		return q, "", err
	}
	dates := map[string]string{}
	for _, name := range []string{"startDate", "endDate"} {
		if v := values.Get(name); v != "" {
			dates[name] = v
		}
	}
	q, err := parseQuery(dates)
	format, ferr := readFormat(values)
	return q, format, cmp.Or(ferr, err)
}

// checkParams checks a GET answer's query string: only the parameters
// allowed, none empty, and each once but those of lists.
func checkParams(values url.Values, allowed []string, lists ...string) error {
	for name, vs := range values {
		switch {
		case !slices.Contains(allowed, name):
			return analytics.Errorf(analytics.Invalid, "Unknown parameter %q: expected %s", name, strings.Join(allowed, ", "))
		case slices.Contains(vs, ""):
			return analytics.Errorf(analytics.Invalid, "Missing params")
		case len(vs) > 1 && !slices.Contains(lists, name):
			return analytics.Errorf(analytics.Invalid, "Invalid %s: given %d times in the query string", name, len(vs))
		}
	}
	return nil
}

// readFormat reads the format parameter of a GET answer: json (the
// default) or csv, any case.
func readFormat(values url.Values) (string, error) {
	switch format := strings.ToLower(values.Get("format")); format {
	case "":
		return formatJSON, nil
	case formatJSON, formatCSV:
		return format, nil
	}
	return "", analytics.Errorf(analytics.Invalid, "Invalid format: expected json or csv, got %q", values.Get("format"))
}

// newCSV starts a CSV answer: its header, and a writer of CRLF lines.
func newCSV(w http.ResponseWriter) *csv.Writer {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8; header=present")
	out := csv.NewWriter(w)
	out.UseCRLF = true
	return out
}

// writeAdoptionCSV writes the schools' rows, then the total's (its
// schoolId empty): hidden figures, and shares without a base, empty.
func writeAdoptionCSV(w http.ResponseWriter, rep report.AdoptionReport) {
	out := newCSV(w)
	_ = out.Write([]string{"startDate", "endDate", "schoolId", "schoolName", "enrolled", "usedLiveLecture", "usedChat", "usedEither",
		"shareUsed", "seats", "seatsUsedShare", "overSeats"})
	start, end := analytics.FormatTime(rep.Start), analytics.FormatTime(rep.End)
	for _, a := range append(slices.Clone(rep.Schools), rep.Total) {
		j := toAdoption(a)
		_ = out.Write([]string{start, end, j.SchoolID, j.SchoolName, strconv.Itoa(j.Enrolled), optional(j.UsedLiveLecture), optional(j.UsedChat),
			optional(j.UsedEither), optional(j.ShareUsed), optional(j.Seats), optional(j.SeatsUsedShare), optional(j.OverSeats)})
	}
	out.Flush()
}

// optional writes a value, or nothing for nil.
func optional[T any](v *T) string {
	if v == nil {
		return ""
	}
	switch x := any(*v).(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	}
	return ""
}
