// Package roster reads a OneRoster 1.2 (or 1.1) CSV bundle, as student
// information systems export it: a zip of manifest.csv and a CSV file per
// kind of record. It reads what the service uses (orgs, classes, users,
// enrollments) and checks it whole, so that a bad file is refused with its
// file, line and column named, before anything is changed. What exporters
// write though the standard's bulk files should not hold it, a record
// marked tobedeleted, is skipped and said, not refused.
package roster

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Modes of a file in the manifest.
const (
	Absent = "absent"
	Bulk   = "bulk"  // the file holds every record of its kind
	Delta  = "delta" // the file holds changes: status active or tobedeleted
)

// Statuses of a record of a delta file.
const (
	Active      = "active"
	ToBeDeleted = "tobedeleted"
)

// Bundle is what a bundle holds of the records the service uses. Modes
// gives each file's mode (Absent when the manifest does not name it).
type Bundle struct {
	Modes       map[string]string // by file name: "classes.csv"
	Orgs        []Org
	Classes     []Class
	Users       []User
	Roles       []Role
	Enrollments []Enrollment
	Skipped     []Skipped // rows read and left out, in the order read
	Warnings    []Warning // cells read and not understood, in the order read
}

// Warning is a cell that the service does not act on and could not read
// (a dateLastModified that is not ISO 8601): kept as it came, and said.
type Warning struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  string `json:"column"`
	Message string `json:"message"`
}

// Skipped is a row left out of the import, and why.
type Skipped struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	SourcedID string `json:"sourcedId"`
	Reason    string `json:"reason"`
}

// SkippedDeleted is why a bulk file's tobedeleted row is skipped: a bulk
// file holds the records as they are, so the row neither adds nor
// removes anything.
const SkippedDeleted = "tobedeleted in a bulk file"

// Record is what every record has: its id, its status in a delta file
// (empty in a bulk file), and where it was read.
type Record struct {
	SourcedID string
	Status    string
	Line      int
}

// Deleted reports whether a delta file deletes the record.
func (r Record) Deleted() bool { return r.Status == ToBeDeleted }

// Org is a school, a district or another body.
type Org struct {
	Record
	Name, Type string
}

// Class is a class of a school.
type Class struct {
	Record
	Title, SchoolSourcedID string
}

// User is a person: a student, a teacher or another. OneRoster 1.1 gives
// their role and orgs here (Role, Orgs); 1.2 in roles.csv.
type User struct {
	Record
	GivenName, FamilyName, PreferredGivenName, PreferredFamilyName string
	Email, Role                                                    string
	Orgs                                                           []string
}

// Role is a user's role at an org (roles.csv, OneRoster 1.2): teacher,
// administrator, student, aide, ...
type Role struct {
	Record
	UserSourcedID, Role, OrgSourcedID string
}

// Name is how the user is shown: preferred names first.
func (u User) Name() string {
	given, family := u.PreferredGivenName, u.PreferredFamilyName
	if given == "" {
		given = u.GivenName
	}
	if family == "" {
		family = u.FamilyName
	}
	return strings.TrimSpace(given + " " + family)
}

// Enrollment is a user's part in a class.
type Enrollment struct {
	Record
	ClassSourcedID, SchoolSourcedID, UserSourcedID, Role string
}

// Error is a problem with a bundle, where it was found.
type Error struct {
	File   string
	Line   int    // 0: the file as a whole
	Column string // empty: the line as a whole
	Msg    string
}

func (e *Error) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Column == "":
		return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s line %d, column %s: %s", e.File, e.Line, e.Column, e.Msg)
}

// MaxFileBytes bounds each file of a bundle, unpacked.
const MaxFileBytes = 64 << 20

// Read reads a bundle from the bytes of its zip, and checks each file on
// its own: the manifest's versions and modes, each file's header, ids
// present and unique, statuses as its mode wants them. What records
// refer to is checked by the import, which knows the group.
func Read(data []byte) (*Bundle, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, &Error{File: "the bundle", Msg: "not a zip archive"}
	}
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name[strings.LastIndex(f.Name, "/")+1:]] = f
	}
	manifest, err := readCSV(files, "manifest.csv")
	if err != nil {
		return nil, err
	}
	b := &Bundle{Modes: map[string]string{}}
	if err := b.readManifest(manifest); err != nil {
		return nil, err
	}
	for _, name := range []string{"orgs.csv", "classes.csv", "users.csv", "roles.csv", "enrollments.csv"} {
		if b.Modes[name] == Absent {
			continue
		}
		t, err := readCSV(files, name)
		if err != nil {
			return nil, err
		}
		if err := b.readFile(name, t); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// table is a CSV file: its header and rows, each row's line number.
type table struct {
	name   string
	header []string
	rows   [][]string
	lines  []int
}

func readCSV(files map[string]*zip.File, name string) (*table, error) {
	f := files[name]
	if f == nil {
		return nil, &Error{File: name, Msg: "missing from the bundle, though the manifest names it"}
	}
	rc, err := f.Open()
	if err != nil {
		return nil, &Error{File: name, Msg: "cannot be unpacked"}
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: name, Msg: "cannot be unpacked"}
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d MB", MaxFileBytes>>20)}
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	r.FieldsPerRecord = -1
	t := &table{name: name}
	for {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		var parseErr *csv.ParseError
		if errors.As(err, &parseErr) {
			return nil, &Error{File: name, Line: parseErr.Line, Msg: "not valid CSV: " + parseErr.Err.Error()}
		} else if err != nil {
			return nil, &Error{File: name, Msg: "not valid CSV"}
		}
		line, _ := r.FieldPos(0)
		if t.header == nil {
			t.header = row
			continue
		}
		if len(row) != len(t.header) {
			return nil, &Error{File: name, Line: line, Msg: fmt.Sprintf("%d fields, but the header has %d", len(row), len(t.header))}
		}
		t.rows, t.lines = append(t.rows, row), append(t.lines, line)
	}
	if t.header == nil {
		return nil, &Error{File: name, Msg: "empty: a header is needed"}
	}
	return t, nil
}

// columns returns the place of each named column, or an error naming the
// first missing.
func (t *table) columns(names ...string) (map[string]int, error) {
	at := map[string]int{}
	for i, h := range t.header {
		at[strings.TrimSpace(h)] = i
	}
	for _, n := range names {
		if _, ok := at[n]; !ok {
			return nil, &Error{File: t.name, Line: 1, Column: n, Msg: "missing from the header"}
		}
	}
	return at, nil
}

func (b *Bundle) readManifest(t *table) error {
	at, err := t.columns("propertyName", "value")
	if err != nil {
		return err
	}
	props := map[string]string{}
	for _, row := range t.rows {
		props[strings.TrimSpace(row[at["propertyName"]])] = strings.TrimSpace(row[at["value"]])
	}
	if v := props["manifest.version"]; v != "1.0" {
		return &Error{File: "manifest.csv", Column: "value", Msg: fmt.Sprintf(`manifest.version is %q, expected "1.0"`, v)}
	}
	if v := props["oneroster.version"]; v != "1.2" && v != "1.1" {
		return &Error{File: "manifest.csv", Column: "value", Msg: fmt.Sprintf(`oneroster.version is %q, expected "1.2" (or "1.1")`, v)}
	}
	for _, name := range []string{"orgs.csv", "classes.csv", "users.csv", "roles.csv", "enrollments.csv"} {
		mode, ok := props["file."+strings.TrimSuffix(name, ".csv")]
		if !ok {
			mode = Absent
		}
		if !slices.Contains([]string{Absent, Bulk, Delta}, mode) {
			return &Error{File: "manifest.csv", Column: "value", Msg: fmt.Sprintf("file.%s is %q, expected absent, bulk or delta", strings.TrimSuffix(name, ".csv"), mode)}
		}
		b.Modes[name] = mode
	}
	if b.Modes["users.csv"] == Absent && b.Modes["classes.csv"] == Absent && b.Modes["enrollments.csv"] == Absent {
		return &Error{File: "manifest.csv", Msg: "names no users, classes or enrollments: nothing to import"}
	}
	return nil
}

// readFile reads one file of records, checking ids and statuses.
func (b *Bundle) readFile(name string, t *table) error {
	cols := map[string][]string{
		"orgs.csv":        {"sourcedId", "status", "name", "type"},
		"classes.csv":     {"sourcedId", "status", "title", "schoolSourcedId"},
		"users.csv":       {"sourcedId", "status", "givenName", "familyName"},
		"roles.csv":       {"sourcedId", "status", "userSourcedId", "role", "orgSourcedId"},
		"enrollments.csv": {"sourcedId", "status", "classSourcedId", "schoolSourcedId", "userSourcedId", "role"},
	}[name]
	at, err := t.columns(cols...)
	if err != nil {
		return err
	}
	var dates []dateColumn
	for _, d := range dateColumns {
		if _, ok := at[d.name]; ok {
			dates = append(dates, d)
		}
	}
	field := func(row []string, col string) string {
		if i, ok := at[col]; ok {
			return strings.TrimSpace(row[i])
		}
		return ""
	}
	seen := map[string]int{}
	for i, row := range t.rows {
		line := t.lines[i]
		rec := Record{SourcedID: field(row, "sourcedId"), Status: field(row, "status"), Line: line}
		fail := func(col, format string, args ...any) error {
			return &Error{File: name, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
		}
		switch {
		case rec.SourcedID == "":
			return fail("sourcedId", "empty")
		case seen[rec.SourcedID] > 0:
			return fail("sourcedId", "%q is on line %d too", rec.SourcedID, seen[rec.SourcedID])
		case b.Modes[name] == Bulk && rec.Status != "" && rec.Status != Active && rec.Status != ToBeDeleted:
			return fail("status", "%q in a bulk file: leave it empty or active (a tobedeleted record is skipped)", rec.Status)
		case b.Modes[name] == Delta && rec.Status != Active && rec.Status != ToBeDeleted:
			return fail("status", "%q: a delta file's records are active or tobedeleted", rec.Status)
		}
		seen[rec.SourcedID] = line
		for _, d := range dates {
			switch v := field(row, d.name); {
			case v == "" || d.valid(v):
			case d.strict:
				return fail(d.name, "%q is not %s", v, d.expected)
			default:
				b.Warnings = append(b.Warnings, Warning{File: name, Line: line, Column: d.name,
					Message: fmt.Sprintf("%q is not %s; not used, so the row is taken", v, d.expected)})
			}
		}
		if b.Modes[name] == Bulk && rec.Deleted() {
			b.Skipped = append(b.Skipped, Skipped{File: name, Line: line, SourcedID: rec.SourcedID, Reason: SkippedDeleted})
			continue
		}
		if err := b.add(name, rec, func(col string) string { return field(row, col) }, fail); err != nil {
			return err
		}
	}
	return nil
}

// add keeps a record of file name, whose columns field gives; fail says
// what is wrong with it.
func (b *Bundle) add(name string, rec Record, field func(col string) string, fail func(col, format string, args ...any) error) error {
	switch name {
	case "orgs.csv":
		b.Orgs = append(b.Orgs, Org{Record: rec, Name: field("name"), Type: field("type")})
	case "classes.csv":
		c := Class{Record: rec, Title: field("title"), SchoolSourcedID: field("schoolSourcedId")}
		if c.Title == "" && !rec.Deleted() {
			return fail("title", "empty")
		}
		b.Classes = append(b.Classes, c)
	case "users.csv":
		b.Users = append(b.Users, User{Record: rec, GivenName: field("givenName"), FamilyName: field("familyName"),
			PreferredGivenName: field("preferredGivenName"), PreferredFamilyName: field("preferredFamilyName"),
			Email: field("email"), Role: field("role"),
			Orgs: strings.FieldsFunc(field("orgSourcedIds"), func(r rune) bool { return r == ',' || r == ' ' })})
	case "roles.csv":
		b.Roles = append(b.Roles, Role{Record: rec, UserSourcedID: field("userSourcedId"), Role: field("role"),
			OrgSourcedID: field("orgSourcedId")})
	case "enrollments.csv":
		e := Enrollment{Record: rec, ClassSourcedID: field("classSourcedId"), SchoolSourcedID: field("schoolSourcedId"),
			UserSourcedID: field("userSourcedId"), Role: field("role")}
		for _, c := range []struct{ col, v string }{{"classSourcedId", e.ClassSourcedID}, {"userSourcedId", e.UserSourcedID}, {"role", e.Role}} {
			if c.v == "" {
				return fail(c.col, "empty")
			}
		}
		b.Enrollments = append(b.Enrollments, e)
	}
	return nil
}

// dateColumn is a column of dates or of date-times that a file may have.
// One the service acts on (strict) refuses the bundle when a date cannot
// be read; one it does not is a warning, since student information
// systems fill such metadata in loosely (1/05/2023).
type dateColumn struct {
	name, expected string
	valid          func(string) bool
	strict         bool
}

var dateColumns = []dateColumn{
	{"dateLastModified", "an ISO 8601 date-time, such as 2026-02-28T09:30:00.000Z", isDateTime, false},
	{"beginDate", "an ISO 8601 date, such as 2026-02-28", isDate, true},
	{"endDate", "an ISO 8601 date, such as 2026-02-28", isDate, true},
	{"birthDate", "an ISO 8601 date, such as 2026-02-28", isDate, false},
}

// isDate reports whether v is a calendar date, YYYY-MM-DD, that exists.
func isDate(v string) bool {
	_, err := time.Parse(time.DateOnly, v)
	return err == nil
}

// isDateTime reports whether v is an ISO 8601 date-time (with or without
// fractions of a second and an offset) or, as some exporters write it, a
// date.
func isDateTime(v string) bool {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", time.DateOnly} {
		if _, err := time.Parse(layout, v); err == nil {
			return true
		}
	}
	return false
}
