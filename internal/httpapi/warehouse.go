package httpapi

import (
	"archive/zip"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/warehouse"
)

// warehouseParams are the parameters of GET /api/warehouse-files.
var warehouseParams = []string{"startDate", "endDate", "format", "schoolId"}

// maxWarehouseDays caps the days of one pull: a year and a day.
const maxWarehouseDays = 366

// keyWarehouseFiles serves GET /api/warehouse-files: the warehouse files
// of a range of days, as a delivery writes them, in a zip streamed as
// they are made: a school's key's school, a district's key's schools
// with a valid plan (or those schoolId names). Each school's access log
// records it. A teacher's key has none: the files hold every student.
func (s *Server) keyWarehouseFiles(w http.ResponseWriter, r *http.Request, access analytics.Access, now time.Time) {
	values := r.URL.Query()
	schools, leftOut, days, format, err := s.warehouseRequest(values, access, now)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(leftOut) > 0 {
		w.Header().Set("Schools-Left-Out", schoolIDs(leftOut))
	}
	for _, g := range schools {
		entry := analytics.AccessEntry{GroupID: g.ID, At: now, KeyID: access.KeyID, Person: access.Person, Client: s.limits.clientAddress(r),
			Endpoint: r.URL.Path, Format: format, Interval: analytics.Daily.String(), StartDate: days.First.String(), EndDate: days.Last.String()}
		if err := s.engine.Directory.RecordAccess(r.Context(), entry); err != nil {
			s.writeError(w, r, fmt.Errorf("recording the access: %w: %w", analytics.ErrUnavailable, err))
			return
		}
	}
	owner := access.Group.ID
	if access.District != nil {
		owner = access.District.District.ID
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-warehouse-%s-%s-%s.zip"`, owner, format, days.First, days.Last))
	// Each write has a deadline of its own: a district's year takes longer
	// than the server's backstop.
	archive := zip.NewWriter(deadlineWriter{w, http.NewResponseController(w), s.streamWriteTimeout})
	out := warehouse.NewWriter(s.engine, warehouse.Zip{W: archive}, format, now)
	defer out.Close()
	out.Manifest.Warehouse = "pull"
	for _, g := range schools {
		if _, err := out.WriteSchool(r.Context(), g, days, now); err != nil {
			if r.Context().Err() == nil {
				s.log.ErrorContext(r.Context(), "warehouse files failed mid-response", "of", g.ID, "error", err.Error())
			}
			panic(http.ErrAbortHandler)
		}
	}
	if err := out.Finish(r.Context(), s.now()); err != nil || archive.Close() != nil {
		panic(http.ErrAbortHandler)
	}
}

// warehouseRequest reads a pull's parameters against the key: the
// schools, the days (in the zone of the key's school or district) and
// the format.
func (s *Server) warehouseRequest(values map[string][]string, access analytics.Access, now time.Time) (
	schools, leftOut []analytics.Group, days analytics.DayRange, format string, err error) {
	for name, v := range values {
		switch {
		case !slices.Contains(warehouseParams, name):
			return nil, nil, days, "", analytics.Errorf(analytics.Invalid, "Unknown parameter %q: expected %s", name, strings.Join(warehouseParams, ", "))
		case name != "schoolId" && len(v) > 1:
			return nil, nil, days, "", analytics.Errorf(analytics.Invalid, "Invalid %s: given %d times", name, len(v))
		case slices.Contains(v, ""):
			return nil, nil, days, "", analytics.Errorf(analytics.Invalid, "Missing %s: it is empty", name)
		}
	}
	format = analytics.FormatParquet
	if v := values["format"]; len(v) == 1 {
		if format = strings.ToLower(v[0]); format != analytics.FormatParquet && format != analytics.FormatCSV {
			return nil, nil, days, "", analytics.Errorf(analytics.Invalid, "Invalid format: expected parquet or csv, got %q", v[0])
		}
	}
	var zone string
	switch {
	case access.ForClasses:
		return nil, nil, days, "", analytics.Errorf(analytics.Unauthorized, "A teacher's key cannot read the school's warehouse files")
	case access.District == nil && len(values["schoolId"]) > 0:
		return nil, nil, days, "", analytics.Errorf(analytics.Invalid, "Invalid schoolId: it is for a district's key, and this key is a school's")
	case access.District == nil:
		schools, zone = []analytics.Group{access.Group}, access.Group.TimeZone
	default:
		if _, err = parseDistrictParams(map[string]string{}, values["schoolId"]); err != nil {
			return nil, nil, days, "", err
		}
		if schools, leftOut, err = access.District.Asked(values["schoolId"]); err != nil {
			return nil, nil, days, "", err
		}
		if len(schools) == 0 {
			return nil, nil, days, "", analytics.Errorf(analytics.Invalid, "Invalid schoolId: no school asked has a valid plan now (%s)", schoolIDs(leftOut))
		}
		zone = access.District.District.TimeZone
	}
	days, err = warehouseDays(values, zone, now)
	if err != nil {
		return nil, nil, days, "", err
	}
	// Each school's days past its retention are gone: its files start
	// at its first kept day.
	for _, g := range schools {
		loc, err := g.Location()
		if err != nil {
			return nil, nil, days, "", err
		}
		if first := g.FirstKeptDay(now, loc); days.First < first {
			return nil, nil, days, "", analytics.Errorf(analytics.Invalid, "Invalid startDate: %s is before %s, the first day school %s keeps (its usage is kept %s)",
				days.First, first, g.ID, g.Retention)
		}
	}
	return schools, leftOut, days, format, nil
}

// warehouseDays reads startDate and endDate, both required, as calendar
// days: at most maxWarehouseDays of them, none after today in zone.
func warehouseDays(values map[string][]string, zone string, now time.Time) (analytics.DayRange, error) {
	var r analytics.DayRange
	loc, err := analytics.LoadZone(zone)
	if err != nil {
		return r, err
	}
	for _, p := range []struct {
		name string
		day  *analytics.Day
	}{{"startDate", &r.First}, {"endDate", &r.Last}} {
		v := values[p.name]
		if len(v) == 0 {
			return r, analytics.Errorf(analytics.Invalid, "Missing %s: the files are asked for a range of days (YYYY-MM-DD)", p.name)
		}
		d, err := analytics.ParseDate(p.name, v[0])
		if err != nil {
			return r, err
		}
		*p.day = d.Day(loc)
	}
	today := analytics.DayOf(now, loc)
	switch {
	case r.First > r.Last:
		return r, analytics.Errorf(analytics.Invalid, "Invalid range: startDate %s is after endDate %s", r.First, r.Last)
	case r.Last > today:
		return r, analytics.Errorf(analytics.Invalid, "Invalid endDate: %s is after today, %s", r.Last, today)
	case int(r.Last-r.First) >= maxWarehouseDays:
		return r, analytics.Errorf(analytics.Invalid, "Invalid range: %d days, more than %d a request", r.Last-r.First+1, maxWarehouseDays)
	}
	return r, nil
}

// warehouseJSON is a warehouse as the admin API shows one: never its
// secret access key.
type warehouseJSON struct {
	ID         string          `json:"id"`
	GroupID    *string         `json:"groupId"`
	DistrictID *string         `json:"districtId"`
	Format     string          `json:"format"`
	Bucket     *bucketJSON     `json:"bucket"`
	Folder     *string         `json:"folder"`
	FirstDate  string          `json:"firstDate"`
	CreatedAt  string          `json:"createdAt"`
	Deliveries *deliveriesJSON `json:"deliveries,omitempty"`
}

// bucketJSON is a warehouse's bucket: where, and whose access key.
type bucketJSON struct {
	Endpoint    string `json:"endpoint"`
	Region      string `json:"region"`
	Name        string `json:"name"`
	Prefix      string `json:"prefix"`
	AccessKeyID string `json:"accessKeyId"`
}

// deliveriesJSON is how a warehouse's deliveries stand.
type deliveriesJSON struct {
	DaysQueued int     `json:"daysQueued"`
	LastRunAt  *string `json:"lastRunAt"`
	LastError  *string `json:"lastError"`
	Failures   int     `json:"failures"`
	RetryAt    *string `json:"retryAt"`
}

func toWarehouse(w analytics.Warehouse) warehouseJSON {
	out := warehouseJSON{ID: w.ID, GroupID: orNull(w.GroupID), DistrictID: orNull(w.DistrictID), Format: w.Format, Folder: orNull(w.Folder),
		FirstDate: w.From.String(), CreatedAt: analytics.FormatTime(w.Created)}
	if w.Folder == "" {
		out.Bucket = &bucketJSON{w.Endpoint, w.Region, w.Bucket, w.Prefix, w.AccessKey}
	}
	return out
}

// timeOrNull is t as the API writes times, or null for none.
func timeOrNull(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := analytics.FormatTime(t)
	return &s
}

// addWarehouse serves POST …/warehouses of a school or a district: the
// destination is tried first (a bucket's test write), and refused with
// the reason when it fails.
func (s *Server) addWarehouse(r *http.Request) (int, any, error) {
	var in struct {
		ID     string `json:"id"`
		Format string `json:"format"`
		Bucket *struct {
			Endpoint        string `json:"endpoint"`
			Region          string `json:"region"`
			Name            string `json:"name"`
			Prefix          string `json:"prefix"`
			AccessKeyID     string `json:"accessKeyId"`
			SecretAccessKey string `json:"secretAccessKey"`
		} `json:"bucket"`
		Folder string `json:"folder"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	w := analytics.Warehouse{GroupID: r.PathValue("groupId"), DistrictID: r.PathValue("districtId"), ID: in.ID, Format: in.Format, Folder: in.Folder}
	if b := in.Bucket; b != nil {
		w.Endpoint, w.Region, w.Bucket, w.Prefix, w.AccessKey, w.SecretKey = b.Endpoint, b.Region, b.Name, b.Prefix, b.AccessKeyID, b.SecretAccessKey
	}
	w, err := s.platform.AddWarehouse(r.Context(), w, s.tryWarehouse)
	return http.StatusCreated, toWarehouse(w), err
}

// tryWarehouse tries a warehouse's destination: a folder needs the
// server's warehouse directory; a bucket must take a test write.
func (s *Server) tryWarehouse(ctx context.Context, w analytics.Warehouse) error {
	if w.Folder != "" && s.warehouseDir == "" {
		return analytics.Errorf(analytics.Invalid, "Invalid folder: this server has no warehouse directory (serve --warehouse-dir), so folder warehouses are off")
	}
	return warehouse.Try(ctx, w)
}

// listWarehouses serves GET …/warehouses of a school or a district.
func (s *Server) listWarehouses(r *http.Request) (int, any, error) {
	ws, err := s.platform.WarehousesOf(r.Context(), r.PathValue("groupId"), r.PathValue("districtId"))
	return http.StatusOK, map[string]any{"warehouses": listOf(ws, toWarehouse)}, err
}

// getWarehouse serves GET /v1/admin/warehouses/{warehouseId}: the
// warehouse and how its deliveries stand.
func (s *Server) getWarehouse(r *http.Request) (int, any, error) {
	w, st, err := s.platform.Warehouse(r.Context(), r.PathValue("warehouseId"))
	if err != nil {
		return 0, nil, err
	}
	out := toWarehouse(w)
	out.Deliveries = &deliveriesJSON{DaysQueued: st.Queued, LastRunAt: timeOrNull(st.LastRun), LastError: orNull(st.LastError),
		Failures: st.Failures, RetryAt: timeOrNull(st.RetryAt)}
	return http.StatusOK, out, nil
}

func (s *Server) removeWarehouse(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.RemoveWarehouse(r.Context(), r.PathValue("warehouseId"))
}

// backfillWarehouse serves POST /v1/admin/warehouses/{warehouseId}/backfill:
// the days of a range queued for delivery, answered at once (202).
func (s *Server) backfillWarehouse(r *http.Request) (int, any, error) {
	var in struct {
		StartDate string `json:"startDate"`
		EndDate   string `json:"endDate"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	n, err := s.platform.Backfill(r.Context(), r.PathValue("warehouseId"), in.StartDate, in.EndDate)
	return http.StatusAccepted, map[string]int{"daysQueued": n}, err
}
