package httpapi

import (
	"cmp"
	"encoding/csv"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// accessEntryJSON is an access log entry as the API shows it.
type accessEntryJSON struct {
	ID             int64         `json:"id"`
	At             time.Time     `json:"at"`
	Key            *accessKeyRef `json:"key"`
	Person         *personJSON   `json:"person"`
	Warehouse      *string       `json:"warehouse"`
	Client         string        `json:"client"`
	Endpoint       string        `json:"endpoint"`
	Format         string        `json:"format"`
	StartDate      string        `json:"startDate"`
	EndDate        string        `json:"endDate"`
	Interval       string        `json:"interval"`
	ClassIDs       []string      `json:"classIds"`
	AllStudents    bool          `json:"allStudents"`
	StudentIDs     []string      `json:"studentIds"`
	ErasedStudents int           `json:"erasedStudents"`
}

type accessKeyRef struct {
	ID       string `json:"id"`
	Prefix   string `json:"prefix"`
	Label    string `json:"label"`
	District string `json:"district,omitempty"` // a district's key's
}

// accessPage is a page of an access log: its entries, and the value of
// before that asks for the next page (null on the last).
type accessPage struct {
	Entries []accessEntryJSON `json:"entries"`
	Next    *int64            `json:"next"`
}

// personJSON is a signed-in person as the access log names them.
type personJSON struct {
	Email    string `json:"email"`
	Role     string `json:"role"`
	Provider string `json:"provider"`
}

// accessJSON is an entry as the API shows it: who asked is a key, or a
// signed-in person, the other null.
func accessJSON(e analytics.AccessEntry) accessEntryJSON {
	out := accessEntryJSON{ID: e.ID, At: e.At, Client: e.Client,
		Endpoint: e.Endpoint, Format: e.Format, StartDate: e.StartDate, EndDate: e.EndDate,
		Interval: e.Interval, ClassIDs: append([]string{}, e.ClassIDs...), AllStudents: e.StudentsAsked == 0,
		StudentIDs: append([]string{}, e.StudentIDs...), ErasedStudents: e.ErasedStudents}
	if id, ok := e.Warehouse(); ok {
		out.Warehouse, out.Endpoint = &id, "warehouse"
	} else if e.Person != nil {
		out.Person = &personJSON{e.Person.Email, string(e.Person.Role), e.Person.ProviderID}
	} else {
		out.Key = &accessKeyRef{e.KeyID, e.KeyPrefix, e.KeyLabel, e.KeyDistrict}
	}
	return out
}

// accessParams are the parameters of an access log's page.
var accessParams = []string{"studentId", "since", "until", "before", "limit", "format", "schoolId"}

// readAccessFilter reads an access log request's query string: the
// filter, and the format asked for (json or csv).
func readAccessFilter(r *http.Request) (f analytics.AccessFilter, format string, err error) {
	values := r.URL.Query()
	for name := range values {
		if !slices.Contains(accessParams, name) {
			return f, "", analytics.Errorf(analytics.Invalid, "Unknown parameter %q: expected %s", name, strings.Join(accessParams, ", "))
		}
	}
	f.StudentID = values.Get("studentId")
	for _, bound := range []struct {
		name string
		t    *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := values.Get(bound.name); v != "" {
			if *bound.t, err = parseInstant(v); err != nil {
				return f, "", analytics.Errorf(analytics.Invalid, "Invalid %s: expected a date (YYYY-MM-DD, UTC) or an RFC 3339 time, got %q", bound.name, v)
			}
		}
	}
	// positive reads a whole number above 0, or 0 when not given.
	positive := func(name string) (int64, error) {
		v := values.Get(name)
		if v == "" {
			return 0, nil
		}
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i < 1 {
			return 0, analytics.Errorf(analytics.Invalid, "Invalid %s: expected a positive whole number, got %q", name, v)
		}
		return i, nil
	}
	if f.Before, err = positive("before"); err != nil {
		return f, "", err
	}
	limit, err := positive("limit")
	if err != nil {
		return f, "", err
	}
	f.Limit = int(min(limit, 1<<31-1))
	format = acceptedFormat(r.Header.Values("Accept"))
	if v := values.Get("format"); v != "" {
		if format = strings.ToLower(v); format != formatJSON && format != formatCSV {
			return f, "", analytics.Errorf(analytics.Invalid, "Invalid format: expected json or csv, got %q", v)
		}
	}
	return f, format, nil
}

// parseInstant reads a date (midnight UTC) or an RFC 3339 time.
func parseInstant(v string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, v)
}

// keyAccessLog serves a school's access log to its key; a teacher's key,
// which sees only its classes, may not read whom the others asked about.
func (s *Server) keyAccessLog(w http.ResponseWriter, r *http.Request, access analytics.Access, _ time.Time) {
	access, err := schoolOfKey(r, access)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if access.ForClasses {
		s.writeError(w, r, analytics.Errorf(analytics.Unauthorized, "A teacher's key cannot read the access log"))
		return
	}
	f, format, err := readAccessFilter(r)
	if err == nil {
		err = s.writeAccessLog(w, r, access.Group.ID, f, format)
	}
	if err != nil {
		s.writeError(w, r, err)
	}
}

// adminAccessLog serves a group's access log to the platform, in JSON.
func (s *Server) adminAccessLog(r *http.Request) (int, any, error) {
	f, _, err := readAccessFilter(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := s.accessPage(r, r.PathValue("groupId"), f)
	return http.StatusOK, page, err
}

// accessPage reads a page of the group's access log.
func (s *Server) accessPage(r *http.Request, groupID string, f analytics.AccessFilter) (accessPage, error) {
	entries, next, err := s.platform.AccessLog(r.Context(), groupID, f)
	page := accessPage{Entries: listOf(entries, accessJSON)}
	if next != 0 {
		page.Next = &next
	}
	return page, err
}

// writeAccessLog answers a page of the group's access log, in JSON or CSV;
// a Link header names the next page's URL, if there is one.
func (s *Server) writeAccessLog(w http.ResponseWriter, r *http.Request, groupID string, f analytics.AccessFilter, format string) error {
	page, err := s.accessPage(r, groupID, f)
	if err != nil {
		return err
	}
	if page.Next != nil {
		q := r.URL.Query()
		q.Set("before", strconv.FormatInt(*page.Next, 10))
		w.Header().Set("Link", "<"+(&url.URL{Path: r.URL.Path, RawQuery: q.Encode()}).String()+`>; rel="next"`)
	}
	if format != formatCSV {
		writeJSON(w, http.StatusOK, page)
		return nil
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8; header=present")
	w.Header().Set("Content-Disposition", `attachment; filename="`+groupID+`-access-log.csv"`)
	_ = writeAccessCSV(w, page.Entries) // failing, the client has gone: the status is sent
	return nil
}

// writeAccessCSV writes access log entries as CSV: a header row, then a
// row an entry.
func writeAccessCSV(w io.Writer, entries []accessEntryJSON) error {
	out := csv.NewWriter(w)
	out.UseCRLF = true
	out.Write([]string{"id", "at", "keyId", "keyPrefix", "keyLabel", "keyDistrict", "client", "endpoint", "format", "startDate", "endDate",
		"interval", "classIds", "allStudents", "studentIds", "erasedStudents", "personEmail", "personRole", "personProvider", "warehouse"})
	for _, e := range entries {
		key, person, warehouse := cmp.Or(e.Key, &accessKeyRef{}), cmp.Or(e.Person, &personJSON{}), cmp.Or(e.Warehouse, new(string))
		out.Write([]string{strconv.FormatInt(e.ID, 10), e.At.Format(time.RFC3339Nano), key.ID, key.Prefix, key.Label,
			key.District, e.Client, e.Endpoint, e.Format, e.StartDate, e.EndDate, e.Interval, strings.Join(e.ClassIDs, " "),
			strconv.FormatBool(e.AllStudents), strings.Join(e.StudentIDs, " "), strconv.Itoa(e.ErasedStudents),
			person.Email, person.Role, person.Provider, *warehouse})
	}
	out.Flush()
	return out.Error()
}

// receiptJSON is a deletion receipt as the API shows it.
type receiptJSON struct {
	ID          int64         `json:"id"`
	GroupID     string        `json:"groupId"`
	StudentID   *string       `json:"studentId"`
	Action      string        `json:"action"`
	RequestedBy string        `json:"requestedBy"`
	Began       time.Time     `json:"began"`
	Finished    time.Time     `json:"finished"`
	Deleted     []deletedJSON `json:"deleted"`
	// KeptFrom is a retention run's cut; null for other deletions.
	KeptFrom *string `json:"keptFrom"`
}

type deletedJSON struct {
	Store string `json:"store"`
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// listReceipts lists the deletion receipts of the group groupId names (it
// may be gone), or of every group.
func (s *Server) listReceipts(r *http.Request) (int, any, error) {
	for name := range r.URL.Query() {
		if name != "groupId" {
			return 0, nil, analytics.Errorf(analytics.Invalid, "Unknown parameter %q: expected groupId", name)
		}
	}
	receipts, err := s.platform.Receipts(r.Context(), r.URL.Query().Get("groupId"))
	return http.StatusOK, map[string]any{"receipts": listOf(receipts, func(rc analytics.Receipt) receiptJSON {
		j := receiptJSON{ID: rc.ID, GroupID: rc.GroupID, Action: rc.Action, RequestedBy: rc.RequestedBy, Began: rc.Began,
			Finished: rc.Finished, Deleted: listOf(rc.Deleted, func(d analytics.Deleted) deletedJSON { return deletedJSON(d) })}
		if rc.StudentID != "" {
			j.StudentID = &rc.StudentID
		}
		if rc.Action == analytics.ActionUsageExpired {
			day := rc.KeptFrom.String()
			j.KeptFrom = &day
		}
		return j
	})}, err
}
