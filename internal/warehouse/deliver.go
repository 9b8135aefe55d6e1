package warehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/metrics"
	"groupanalytics/internal/report"
)

// Deliverer delivers each warehouse's files: every school's day once it
// has ended (from the warehouse's first day on), and the days queued by a
// backfill or an erasure, in runs that one process at a time claims. A run
// that fails is tried again after a backoff that doubles, from a minute
// to an hour; what it delivered before failing stays delivered.
type Deliverer struct {
	Directory analytics.Directory
	Engine    *report.Engine
	// Root is the server's warehouse directory, under which folder
	// warehouses write; empty: none may.
	Root    string
	Log     *slog.Logger
	Now     func() time.Time
	Metrics *metrics.Metrics
}

const (
	// Lease is how long a claim keeps other processes off a warehouse's
	// run: far longer than a run of maxRunDays takes.
	Lease = 30 * time.Minute
	// maxRunDays bounds the school days of one run, and so its manifest:
	// a longer backfill goes on in the runs that follow.
	maxRunDays = 5000
)

// Backoff is the wait after the failures-th failed run in a row.
func Backoff(failures int) time.Duration {
	return min(time.Minute<<min(max(failures-1, 0), 10), time.Hour)
}

// Run delivers what is due now and every interval, until ctx ends.
func (d *Deliverer) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := d.Round(ctx); err != nil && ctx.Err() == nil {
			d.Log.Warn("warehouse deliveries", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Round runs every warehouse that has days due, by turns: one that
// wrote as many days as a run may (a backfill) runs again after the
// others had theirs, until none has more, so that one district's backfill
// does not hold up another's day.
func (d *Deliverer) Round(ctx context.Context) error {
	warehouses, err := d.Directory.WarehousesOf(ctx, "", "")
	if err != nil {
		return fmt.Errorf("warehouse round: %w", err)
	}
	var errs []error
	for len(warehouses) > 0 && ctx.Err() == nil {
		var again []analytics.Warehouse
		for _, w := range warehouses {
			more, err := d.deliver(ctx, w)
			if err != nil {
				errs = append(errs, fmt.Errorf("warehouse %s: %w", w.ID, err))
			} else if more {
				again = append(again, w)
			}
		}
		warehouses = again
	}
	return errors.Join(errs...)
}

// schoolDays are one school's days due in a run, in order.
type schoolDays struct {
	group analytics.Group
	days  []analytics.WarehouseDay
}

// deliver runs the warehouse if it has days due and no other process's
// claim holds it (a read only when nothing is due), and reports whether
// more may be due: the run wrote as many days as one may. A run's failure
// is recorded and logged, and returned.
func (d *Deliverer) deliver(ctx context.Context, w analytics.Warehouse) (more bool, err error) {
	now := d.Now()
	st, err := d.Directory.WarehouseState(ctx, w.ID, maxRunDays)
	if err != nil {
		return false, err
	}
	if now.Before(st.RetryAt) {
		return false, nil
	}
	due, dropped, err := d.due(ctx, w, st, now)
	if err != nil || len(due) == 0 && len(dropped) == 0 {
		return false, err
	}
	claimed, err := d.Directory.ClaimWarehouse(ctx, w.ID, now, now.Add(Lease))
	if err != nil || !claimed {
		return false, err
	}
	// What is due may have changed before the claim: read it again.
	if st, err = d.Directory.WarehouseState(ctx, w.ID, maxRunDays); err == nil {
		due, dropped, err = d.due(ctx, w, st, now)
	}
	var delivered []analytics.WarehouseDay
	files := 0
	if err == nil {
		delivered, files, err = d.run(ctx, w, due, now)
	}
	failure, retryAt, failures := "", time.Time{}, 0
	if err != nil {
		failures = st.Failures + 1
		// The cause, as the directory and the log keep it: never a
		// credential (the S3 errors carry none).
		failure, retryAt = err.Error(), now.Add(Backoff(failures))
		d.Log.Warn("warehouse run failed", "warehouse", w.ID, "failures", failures, "retry_at", retryAt, "error", failure)
	} else {
		d.Log.Info("warehouse delivered", "warehouse", w.ID, "days", len(delivered), "files", files)
	}
	d.Metrics.WarehouseRun(w.ID, files, failures)
	if err != nil {
		dropped = nil
	}
	if rerr := d.Directory.WarehouseRan(context.WithoutCancel(ctx), w.ID, delivered, dropped, now, d.Now(), failure, retryAt); rerr != nil {
		return false, errors.Join(err, rerr)
	}
	// More may be due: the run wrote as many days as one may, or more are
	// queued than were read.
	return err == nil && (len(delivered) == maxRunDays || st.Queued > len(st.Pending)), err
}

// due returns the schools' days due: of each school with a valid plan now
// (the warehouse's school, or the district's), the days the schedule has
// not delivered since the warehouse's first day up to the school's
// yesterday, and its days queued; at most maxRunDays in all. dropped are
// the days queued that will never be: past their school's retention, or
// of a school the warehouse no longer takes.
func (d *Deliverer) due(ctx context.Context, w analytics.Warehouse, st analytics.WarehouseState, now time.Time) (
	due []schoolDays, dropped []analytics.WarehouseDay, err error) {
	var schools []analytics.Group
	if w.DistrictID != "" {
		da, err := d.Directory.DistrictAccess(ctx, w.DistrictID, now)
		if err != nil {
			return nil, nil, err
		}
		schools = da.Schools
	} else {
		group, err := d.Directory.Group(ctx, w.GroupID)
		if err != nil {
			return nil, nil, err
		}
		plans, err := d.Directory.Plans(ctx, group.ID)
		if err != nil {
			return nil, nil, err
		}
		if slices.ContainsFunc(plans, func(p analytics.Plan) bool { return p.ValidAt(now) }) {
			schools = []analytics.Group{group}
		}
	}
	queued := map[string][]analytics.WarehouseDay{}
	for _, p := range st.Pending {
		queued[p.GroupID] = append(queued[p.GroupID], p)
	}
	total := 0
	for _, g := range schools {
		loc, err := g.Location()
		if err != nil {
			return nil, nil, err
		}
		first := g.FirstKeptDay(now, loc)
		yesterday := analytics.DayOf(now, loc) - 1
		sd := schoolDays{group: g}
		next := w.From
		if last, ok := st.Scheduled[g.ID]; ok {
			next = max(next, last+1)
		}
		byDay := map[analytics.Day]string{}
		for day := max(next, first); day <= yesterday; day++ {
			byDay[day] = analytics.ReasonSchedule
		}
		for _, q := range queued[g.ID] {
			switch {
			case q.Day < first:
				dropped = append(dropped, q) // past retention: gone
			case q.Day <= yesterday:
				if _, scheduled := byDay[q.Day]; !scheduled || q.Reason == analytics.ReasonErasure {
					byDay[q.Day] = q.Reason
				}
			}
		}
		delete(queued, g.ID)
		for day, reason := range byDay {
			sd.days = append(sd.days, analytics.WarehouseDay{GroupID: g.ID, Day: day, Reason: reason})
		}
		slices.SortFunc(sd.days, func(a, b analytics.WarehouseDay) int { return int(a.Day - b.Day) })
		if len(sd.days) > maxRunDays-total {
			sd.days = sd.days[:maxRunDays-total]
		}
		if len(sd.days) > 0 {
			due = append(due, sd)
			total += len(sd.days)
		}
		if total == maxRunDays {
			break
		}
	}
	// The days queued of schools the warehouse no longer takes (out of
	// the district, or without a valid plan) are not delivered.
	for _, days := range queued {
		if total < maxRunDays {
			dropped = append(dropped, days...)
		}
	}
	return due, dropped, nil
}

// run writes the days due to the warehouse's destination, then the run's
// manifest, and records each school's delivery in its access log. It
// returns the days delivered, even when it fails later, and the files
// written.
func (d *Deliverer) run(ctx context.Context, w analytics.Warehouse, due []schoolDays, now time.Time) (
	delivered []analytics.WarehouseDay, files int, err error) {
	sink, err := d.Sink(w)
	if err != nil {
		return nil, 0, err
	}
	out := NewWriter(d.Engine, sink, w.Format, now)
	defer out.Close()
	out.Manifest.Warehouse = w.ID
	for _, sd := range due {
		var students []string
		for _, days := range runsOf(sd.days) {
			s, err := out.WriteSchool(ctx, sd.group, days, now)
			if err != nil {
				return delivered, len(out.Manifest.Files), err
			}
			students = append(students, s...)
		}
		for _, day := range sd.days {
			if day.Reason == analytics.ReasonErasure {
				out.Manifest.Rewritten = append(out.Manifest.Rewritten, ManifestDay{Date: day.Day.String(), School: sd.group.ID})
			}
		}
		slices.Sort(students)
		entry := analytics.DeliveryEntry(sd.group.ID, w.ID, Destination(w), now)
		entry.Format, entry.Interval = w.Format, analytics.Daily.String()
		entry.StartDate, entry.EndDate = sd.days[0].Day.String(), sd.days[len(sd.days)-1].Day.String()
		entry.StudentIDs = slices.Compact(students)
		entry.StudentsAsked = len(entry.StudentIDs)
		if len(entry.StudentIDs) > 0 {
			if err := d.Directory.RecordAccess(ctx, entry); err != nil {
				return delivered, len(out.Manifest.Files), err
			}
		}
		delivered = append(delivered, sd.days...)
	}
	if err := out.Finish(ctx, d.Now()); err != nil {
		return delivered, len(out.Manifest.Files), err
	}
	return delivered, len(out.Manifest.Files) + 1, nil
}

// runsOf cuts days, in order, into ranges of days one after another.
func runsOf(days []analytics.WarehouseDay) []analytics.DayRange {
	var out []analytics.DayRange
	for _, d := range days {
		if n := len(out); n > 0 && out[n-1].Last+1 == d.Day {
			out[n-1].Last = d.Day
		} else {
			out = append(out, analytics.DayRange{First: d.Day, Last: d.Day})
		}
	}
	return out
}

// Sink opens the warehouse's destination.
func (d *Deliverer) Sink(w analytics.Warehouse) (Sink, error) {
	if w.Folder != "" {
		if d.Root == "" {
			return nil, fmt.Errorf("warehouse %s: its folder %q needs serve's --warehouse-dir", w.ID, w.Folder)
		}
		return Folder{Root: filepath.Join(d.Root, filepath.FromSlash(w.Folder))}, nil
	}
	return OpenBucket(w)
}

// Destination names where a warehouse's files go, for the access log and
// the admin API: s3://bucket/prefix at its endpoint, or its folder.
func Destination(w analytics.Warehouse) string {
	if w.Folder != "" {
		return "folder:" + w.Folder
	}
	return fmt.Sprintf("s3://%s/%s (%s)", w.Bucket, w.Prefix, w.Endpoint)
}
