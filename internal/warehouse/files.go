package warehouse

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/buildinfo"
)

// Path is where a school's day's table goes, under the warehouse's
// prefix: Hive-style partitions by table, date and school.
func Path(table string, day analytics.Day, schoolID, format string) string {
	return fmt.Sprintf("v%d/table=%s/date=%s/school=%s/part-0.%s", SchemaVersion, table, day, schoolID, format)
}

// ManifestPath is where a run's manifest goes, under the warehouse's
// prefix, beside the tables and not among them: its name sorts by the
// run's start.
func ManifestPath(runID string) string {
	return fmt.Sprintf("v%d/manifests/%s.json", SchemaVersion, runID)
}

// Manifest says what one run wrote: every file with its rows and
// checksum, the range of days, the schema's version, and the days written
// again after an erasure.
type Manifest struct {
	SchemaVersion int            `json:"schemaVersion"`
	RunID         string         `json:"runId"`
	Warehouse     string         `json:"warehouse,omitempty"`
	Format        string         `json:"format"`
	StartedAt     time.Time      `json:"startedAt"`
	FinishedAt    time.Time      `json:"finishedAt"`
	StartDate     string         `json:"startDate"`
	EndDate       string         `json:"endDate"`
	Files         []ManifestFile `json:"files"`
	// Rewritten are the school days written again because a student
	// they held was erased.
	Rewritten []ManifestDay `json:"rewritten"`
}

// ManifestFile is one file a run wrote.
type ManifestFile struct {
	Path   string `json:"path"`
	Table  string `json:"table"`
	Date   string `json:"date"`
	School string `json:"school"`
	Rows   int    `json:"rows"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// ManifestDay is a school's day.
type ManifestDay struct {
	Date   string `json:"date"`
	School string `json:"school"`
}

// Encoder writes the tables of schools' days, each whole, in a format:
// its Parquet writers are made once and reset for each file.
type Encoder struct {
	format   string
	students *parquet.GenericWriter[StudentDay]
	members  *parquet.GenericWriter[ClassMember]
	school   *parquet.GenericWriter[SchoolDay]
	schools  []SchoolDay
}

// NewEncoder returns an encoder of format.
func NewEncoder(format string) *Encoder {
	e := &Encoder{format: format, schools: make([]SchoolDay, 1)}
	if format == analytics.FormatParquet {
		e.students, e.members, e.school = newParquet[StudentDay](), newParquet[ClassMember](), newParquet[SchoolDay]()
	}
	return e
}

func newParquet[T any]() *parquet.GenericWriter[T] {
	return parquet.NewGenericWriter[T](io.Discard, parquet.Compression(&parquet.Zstd),
		parquet.CreatedBy("groupanalytics", buildinfo.Version, ""))
}

// Encode writes the rows of one table of f into buf, replacing what it
// held.
func (e *Encoder) Encode(f *SchoolDayFiles, table string, buf *bytes.Buffer) error {
	buf.Reset()
	e.schools[0] = f.School
	switch table {
	case StudentDays:
		return encode(buf, e.format, e.students, f.Students)
	case ClassMembers:
		return encode(buf, e.format, e.members, f.Members)
	case SchoolDays:
		return encode(buf, e.format, e.school, e.schools)
	}
	return fmt.Errorf("warehouse encode: no table %q", table)
}

// Describe is a file's entry in a manifest.
func Describe(path, table string, f *SchoolDayFiles, schoolID string, body []byte) ManifestFile {
	sum := sha256.Sum256(body)
	return ManifestFile{Path: path, Table: table, Date: f.Day.String(), School: schoolID, Rows: f.Rows(table), Bytes: len(body),
		SHA256: hex.EncodeToString(sum[:])}
}

func encode[T any](buf *bytes.Buffer, format string, w *parquet.GenericWriter[T], rows []T) error {
	if format == analytics.FormatCSV {
		return encodeCSV(buf, rows)
	}
	w.Reset(buf)
	if _, err := w.Write(rows); err != nil {
		return fmt.Errorf("warehouse parquet: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("warehouse parquet: %w", err)
	}
	return nil
}

// Columns are a table's columns, in order, as its Parquet files and CSV
// headers name them.
func Columns[T any]() []string {
	var names []string
	for _, f := range parquet.SchemaOf(new(T)).Fields() {
		names = append(names, f.Name())
	}
	return names
}

// encodeCSV writes rows as RFC 4180 CSV (CRLF line ends) with a header of
// the Parquet columns' names: dates as YYYY-MM-DD, booleans as true or
// false, a null as an empty field.
func encodeCSV[T any](buf *bytes.Buffer, rows []T) error {
	w := csv.NewWriter(buf)
	w.UseCRLF = true
	if err := w.Write(Columns[T]()); err != nil {
		return err
	}
	record := []string{}
	for i := range rows {
		record = csvFields(record[:0], reflect.ValueOf(&rows[i]).Elem())
		if err := w.Write(record); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// csvFields appends the fields of struct v, those of a struct it embeds
// in its place, as Parquet's columns are.
func csvFields(record []string, v reflect.Value) []string {
	for j := range v.NumField() {
		if f := v.Type().Field(j); f.Anonymous {
			record = csvFields(record, v.Field(j))
		} else {
			record = append(record, csvField(f, v.Field(j)))
		}
	}
	return record
}

func csvField(f reflect.StructField, v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int32:
		if strings.Contains(f.Tag.Get("parquet"), ",date") {
			return analytics.Day(v.Int()).String()
		}
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return v.String()
}
