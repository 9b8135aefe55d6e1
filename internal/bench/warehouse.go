package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// WarehouseResult is what the district's warehouse cost: a backfill of
// every day of its schools to a folder, then a day's run of them (the
// last day written again), timed from the request to the last file; the
// files and bytes written; the server's peak resident memory over both
// (its high-water mark reset before); and a school's chat group report
// asked alone and while the backfill ran, by turns.
type WarehouseResult struct {
	Schools          int       `json:"schools"`
	SchoolDays       int       `json:"schoolDays"`
	BackfillSeconds  float64   `json:"backfillSeconds"`
	SchoolDaysPerSec float64   `json:"schoolDaysPerSec"`
	Files            int       `json:"files"`
	Bytes            int64     `json:"bytes"`
	DaySeconds       float64   `json:"dayRunSeconds"`
	PeakRSSBytes     int64     `json:"serverPeakRSSBytes"`
	ReportAlone      Latencies `json:"reportAlone"`
	ReportBeside     Latencies `json:"reportBesideBackfill"`
}

// warehouseArgs are the server's flags for the warehouse's measure: its
// folder, and rounds often enough not to count the wait for the next.
func warehouseArgs(dir string) []string {
	return []string{"--warehouse-dir", dir, "--warehouse-interval", "100ms"}
}

// measureWarehouse adds a folder warehouse to the district (its schools
// with r's days), backfills r, and then r's last day again.
func measureWarehouse(cfg Config, srv *Server, dir, token, schoolKey string, schools int, r analytics.DayRange) (*WarehouseResult, error) {
	res := &WarehouseResult{Schools: schools}
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", srv.Cmd.Process.Pid), []byte("5"), 0); err != nil {
		return nil, fmt.Errorf("reset the server's peak memory: %w", err)
	}
	if _, err := admin(srv.Base, token, "POST", "/v1/admin/districts/bench-district/warehouses", `{"id": "bench-files", "folder": "bench"}`); err != nil {
		return nil, err
	}
	group := scenario{name: "a school's chat group report", endpoint: "chat", r: r}
	alone, err := timeReports(srv.Base, schoolKey, group, cfg.Requests, func() bool { return false })
	if err != nil {
		return nil, err
	}
	res.ReportAlone = alone
	start := time.Now()
	queued, err := backfill(srv.Base, token, r)
	if err != nil {
		return nil, err
	}
	res.SchoolDays = queued
	done := make(chan error, 1)
	go func() { done <- waitDelivered(srv.Base, token) }()
	var delivered error
	running := true
	res.ReportBeside, err = timeReports(srv.Base, schoolKey, group, 0, func() bool {
		select {
		case delivered = <-done:
			running = false
		default:
		}
		return running
	})
	if running {
		delivered = <-done
	}
	if err = cmp.Or(err, delivered); err != nil {
		return nil, err
	}
	res.BackfillSeconds = time.Since(start).Seconds()
	res.SchoolDaysPerSec = float64(res.SchoolDays) / res.BackfillSeconds
	fmt.Fprintf(cfg.Out, "warehouse: %d school days backfilled in %.1f s\n", res.SchoolDays, res.BackfillSeconds)

	start = time.Now()
	if _, err := backfill(srv.Base, token, analytics.DayRange{First: r.Last, Last: r.Last}); err != nil {
		return nil, err
	}
	if err := waitDelivered(srv.Base, token); err != nil {
		return nil, err
	}
	res.DaySeconds = time.Since(start).Seconds()
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		res.Files++
		if err == nil {
			res.Bytes += info.Size()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	res.PeakRSSBytes, err = srv.memory("VmHWM")
	return res, err
}

// backfill queues the days of r, and returns how many school days.
func backfill(base, token string, r analytics.DayRange) (int, error) {
	body, err := admin(base, token, "POST", "/v1/admin/warehouses/bench-files/backfill",
		fmt.Sprintf(`{"startDate": %q, "endDate": %q}`, r.First, r.Last))
	if err != nil {
		return 0, err
	}
	var out struct {
		DaysQueued int `json:"daysQueued"`
	}
	return out.DaysQueued, json.Unmarshal(body, &out)
}

// waitDelivered waits until the warehouse has no day queued, and fails
// when a run does.
func waitDelivered(base, token string) error {
	for {
		body, err := admin(base, token, "GET", "/v1/admin/warehouses/bench-files", "")
		if err != nil {
			return err
		}
		var w struct {
			Deliveries struct {
				DaysQueued int     `json:"daysQueued"`
				LastError  *string `json:"lastError"`
			} `json:"deliveries"`
		}
		if err := json.Unmarshal(body, &w); err != nil {
			return err
		}
		switch {
		case w.Deliveries.LastError != nil:
			return fmt.Errorf("the warehouse's run failed: %s", *w.Deliveries.LastError)
		case w.Deliveries.DaysQueued == 0:
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// timeReports asks sc one request after another, n times and then on
// while more says so, and returns their latencies.
func timeReports(base, key string, sc scenario, n int, more func() bool) (Latencies, error) {
	var took []float64
	for i := 0; i < n || more(); i++ {
		start := time.Now()
		if err := timedRequest(base, key, sc); err != nil {
			return Latencies{}, err
		}
		took = append(took, ms(time.Since(start)))
	}
	return Latencies{P50: percentile(took, 50), P99: percentile(took, 99)}, nil
}

// admin sends a platform API request and returns its answer's body,
// failing on a status other than 2xx.
func admin(base, token, method, path, body string) ([]byte, error) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode/100 != 2 {
		err = fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, out)
	}
	return out, err
}

// printWarehouse writes the warehouse's figures.
func printWarehouse(w io.Writer, res *WarehouseResult) {
	fmt.Fprintf(w, "warehouse backfill: %d schools, %d school days in %.1f s (%.0f a second), %d files, %.0f MB; a day of every school in %.1f s\n",
		res.Schools, res.SchoolDays, res.BackfillSeconds, res.SchoolDaysPerSec, res.Files, float64(res.Bytes)/1e6, res.DaySeconds)
	fmt.Fprintf(w, "  server peak RSS %.0f MB; a school's chat group report p50 %.2f ms (p99 %.2f) alone, %.2f ms (p99 %.2f) beside the backfill\n",
		float64(res.PeakRSSBytes)/1e6, res.ReportAlone.P50, res.ReportAlone.P99, res.ReportBeside.P50, res.ReportBeside.P99)
}
