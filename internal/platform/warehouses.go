package platform

import (
	"context"
	"path"
	"regexp"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// bucketPattern is an S3 bucket's name as AWS allows it.
var bucketPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// AddWarehouse adds a school's or a district's warehouse, its schedule
// starting today in the owner's zone. check, when given, tries the
// destination (a bucket's test write with the credentials) and refuses
// the warehouse if it fails.
func (p *Platform) AddWarehouse(ctx context.Context, w analytics.Warehouse, check func(context.Context, analytics.Warehouse) error) (analytics.Warehouse, error) {
	zone, err := p.ownerZone(ctx, w.GroupID, w.DistrictID)
	if err != nil {
		return w, err
	}
	if !groupIDPattern.MatchString(w.ID) {
		return w, invalid("Invalid warehouse id %q: expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", w.ID)
	}
	switch w.Format = strings.ToLower(w.Format); w.Format {
	case "":
		w.Format = analytics.FormatParquet
	case analytics.FormatParquet, analytics.FormatCSV:
	default:
		return w, invalid("Invalid format %q: expected parquet or csv", w.Format)
	}
	if err := checkDestination(&w); err != nil {
		return w, err
	}
	if check != nil {
		if err := check(ctx, w); err != nil {
			return w, err
		}
	}
	loc, err := analytics.LoadZone(zone)
	if err != nil {
		return w, err
	}
	now := p.Now()
	w.Created, w.From = now.UTC().Truncate(time.Millisecond), analytics.DayOf(now, loc)
	return w, p.Directory.AddWarehouse(ctx, w)
}

// checkDestination checks a warehouse's bucket (endpoint, bucket, prefix,
// credentials) or folder: one of them, whole.
func checkDestination(w *analytics.Warehouse) error {
	bucket := w.Endpoint != "" || w.Bucket != "" || w.AccessKey != "" || w.SecretKey != "" || w.Region != "" || w.Prefix != ""
	switch {
	case bucket && w.Folder != "":
		return invalid("Invalid destination: a bucket or a folder, not both")
	case !bucket && w.Folder == "":
		return invalid("Missing destination: a bucket (endpoint, bucket, accessKeyId, secretAccessKey) or a folder")
	case w.Folder != "":
		return checkKeyPath("folder", w.Folder, false)
	}
	for _, f := range []struct{ name, value string }{{"endpoint", w.Endpoint}, {"accessKeyId", w.AccessKey}, {"secretAccessKey", w.SecretKey}} {
		if err := checkText(f.name, f.value, 1000); err != nil {
			return err
		}
	}
	if !bucketPattern.MatchString(w.Bucket) {
		return invalid("Invalid bucket %q: expected 3 to 63 lower-case letters, digits, '.' or '-'", w.Bucket)
	}
	if w.Region == "" {
		w.Region = "us-east-1"
	} else if err := checkText("region", w.Region, 64); err != nil {
		return err
	}
	w.Prefix = strings.Trim(w.Prefix, "/")
	return checkKeyPath("prefix", w.Prefix, true)
}

// checkKeyPath checks a prefix or a folder: slash-separated names, none
// "." or "..", no leading slash (a folder is under the warehouse
// directory), printable.
func checkKeyPath(field, value string, mayBeEmpty bool) error {
	if value == "" && mayBeEmpty {
		return nil
	}
	if err := checkText(field, value, 512); err != nil {
		return err
	}
	if strings.HasPrefix(value, "/") || path.Clean(value) != value || value == "." || strings.HasPrefix(value, "../") || value == ".." ||
		strings.ContainsAny(value, `\`) {
		return invalid("Invalid %s %q: expected a relative path of names separated by '/', without '.' or '..'", field, value)
	}
	return nil
}

// ownerZone returns the time zone of a school (groupID) or a district.
func (p *Platform) ownerZone(ctx context.Context, groupID, districtID string) (string, error) {
	if districtID != "" {
		d, err := p.District(ctx, districtID)
		return d.TimeZone, err
	}
	g, err := p.Group(ctx, groupID)
	return g.TimeZone, err
}

// WarehousesOf lists a school's warehouses (groupID) or a district's.
func (p *Platform) WarehousesOf(ctx context.Context, groupID, districtID string) ([]analytics.Warehouse, error) {
	if err := p.knownOwner(ctx, groupID, districtID); err != nil {
		return nil, err
	}
	return p.Directory.WarehousesOf(ctx, groupID, districtID)
}

// Warehouse returns one warehouse and its deliveries' state.
func (p *Platform) Warehouse(ctx context.Context, warehouseID string) (analytics.Warehouse, analytics.WarehouseState, error) {
	if !groupIDPattern.MatchString(warehouseID) {
		return analytics.Warehouse{}, analytics.WarehouseState{}, analytics.Errorf(analytics.NotFound, "Warehouse %q not found", warehouseID)
	}
	w, err := p.Directory.Warehouse(ctx, warehouseID)
	if err != nil {
		return w, analytics.WarehouseState{}, err
	}
	st, err := p.Directory.WarehouseState(ctx, warehouseID, 0)
	return w, st, err
}

// RemoveWarehouse takes a warehouse away: its files stay where they are.
func (p *Platform) RemoveWarehouse(ctx context.Context, warehouseID string) error {
	if !groupIDPattern.MatchString(warehouseID) {
		return analytics.Errorf(analytics.NotFound, "Warehouse %q not found", warehouseID)
	}
	return p.Directory.RemoveWarehouse(ctx, warehouseID)
}

// maxBackfillDays caps the days of one backfill request: ten years.
const maxBackfillDays = 3660

// Backfill queues the days from start to end (YYYY-MM-DD, in each
// school's zone) of each of the warehouse's schools for delivery: the
// days that have ended and that the school keeps. It returns how many
// school days it queued.
func (p *Platform) Backfill(ctx context.Context, warehouseID, start, end string) (int, error) {
	w, _, err := p.Warehouse(ctx, warehouseID)
	if err != nil {
		return 0, err
	}
	var days analytics.DayRange
	for _, d := range []struct {
		name, value string
		day         *analytics.Day
	}{{"startDate", start, &days.First}, {"endDate", end, &days.Last}} {
		if d.value == "" {
			return 0, invalid("Missing %s: a backfill names its first and last days (YYYY-MM-DD)", d.name)
		}
		date, err := analytics.ParseDate(d.name, d.value)
		if err != nil {
			return 0, err
		}
		*d.day = date.Day(time.UTC)
	}
	if days.First > days.Last {
		return 0, invalid("Invalid range: startDate %s is after endDate %s", days.First, days.Last)
	}
	if days.Last-days.First >= maxBackfillDays {
		return 0, invalid("Invalid range: %d days, more than %d a backfill", days.Last-days.First+1, maxBackfillDays)
	}
	now := p.Now()
	schools := []analytics.Group{}
	if w.DistrictID != "" {
		da, err := p.Directory.DistrictAccess(ctx, w.DistrictID, now)
		if err != nil {
			return 0, err
		}
		schools = da.Schools
	} else {
		g, err := p.Group(ctx, w.GroupID)
		if err != nil {
			return 0, err
		}
		schools = append(schools, g)
	}
	var queued []analytics.WarehouseDay
	for _, g := range schools {
		loc, err := g.Location()
		if err != nil {
			return 0, err
		}
		first, yesterday := max(days.First, g.FirstKeptDay(now, loc)), min(days.Last, analytics.DayOf(now, loc)-1)
		for d := first; d <= yesterday; d++ {
			queued = append(queued, analytics.WarehouseDay{GroupID: g.ID, Day: d, Reason: analytics.ReasonBackfill})
		}
	}
	return len(queued), p.Directory.QueueWarehouseDays(ctx, w.ID, queued, now)
}
