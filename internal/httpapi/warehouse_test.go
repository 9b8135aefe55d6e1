package httpapi_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/httpapi"
	reportengine "groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
	"groupanalytics/internal/warehouse"
)

// TestWarehousesAdministered adds, lists, shows, backfills and removes
// warehouses through the admin API (a folder's: the bucket's are tried
// against a real S3 server in package warehouse), with its refusals; the
// secret is never shown back.
func TestWarehousesAdministered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s storetest.Stores) {
		root := t.TempDir()
		e := newEnvWith(t, s, func(c *httpapi.Config) { c.WarehouseDir = root })
		token := e.token()
		e.school("north", "America/New_York")
		e.district("river", "UTC", "north")
		got := e.mustCall("POST", "/v1/admin/districts/river/warehouses", token, `{"id": "river-files", "format": "CSV", "folder": "river/daily"}`, http.StatusCreated)
		if got["format"] != "csv" || got["folder"] != "river/daily" || got["bucket"] != nil || got["firstDate"] != "2026-11-21" || got["districtId"] != "river" {
			t.Errorf("added: %v", got)
		}
		for _, tt := range []struct {
			path, body string
			status     int
			want       string
		}{
			{"/v1/admin/districts/river/warehouses", `{"id": "river-files", "folder": "x"}`, 409, `Warehouse "river-files" already exists`},
			{"/v1/admin/districts/river/warehouses", `{"id": "bad id", "folder": "x"}`, 400, `Invalid warehouse id "bad id": expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`},
			{"/v1/admin/districts/river/warehouses", `{"id": "w", "format": "xlsx", "folder": "x"}`, 400, `Invalid format "xlsx": expected parquet or csv`},
			{"/v1/admin/districts/river/warehouses", `{"id": "w"}`, 400, `Missing destination: a bucket (endpoint, bucket, accessKeyId, secretAccessKey) or a folder`},
			{"/v1/admin/districts/river/warehouses", `{"id": "w", "folder": "../etc"}`, 400, `Invalid folder "../etc": expected a relative path of names separated by '/', without '.' or '..'`},
			{"/v1/admin/districts/river/warehouses", `{"id": "w", "folder": "/etc"}`, 400, `Invalid folder "/etc": expected a relative path of names separated by '/', without '.' or '..'`},
			{"/v1/admin/groups/north/warehouses", `{"id": "w", "folder": "x", "bucket": {"endpoint": "https://s3.example", "name": "b", "accessKeyId": "a", "secretAccessKey": "s"}}`, 400,
				`Invalid destination: a bucket or a folder, not both`},
			{"/v1/admin/groups/north/warehouses", `{"id": "w", "bucket": {"endpoint": "http://s3.example", "name": "data", "accessKeyId": "a", "secretAccessKey": "s"}}`, 400,
				`Invalid endpoint "http://s3.example": https is required (http only on loopback)`},
			{"/v1/admin/groups/north/warehouses", `{"id": "w", "bucket": {"endpoint": "https://s3.example", "name": "Data", "accessKeyId": "a", "secretAccessKey": "s"}}`, 400,
				`Invalid bucket "Data": expected 3 to 63 lower-case letters, digits, '.' or '-'`},
			{"/v1/admin/groups/north/warehouses", `{"id": "w", "bucket": {"endpoint": "https://s3.example", "name": "data", "accessKeyId": "a"}}`, 400, `Missing secretAccessKey`},
			{"/v1/admin/groups/nowhere/warehouses", `{"id": "w", "folder": "x"}`, 404, `Group "nowhere" not found`},
			{"/v1/admin/warehouses/river-files/backfill", `{"startDate": "2026-11-20", "endDate": "2026-11-01"}`, 400, `Invalid range: startDate 2026-11-20 is after endDate 2026-11-01`},
			{"/v1/admin/warehouses/river-files/backfill", `{"endDate": "2026-11-01"}`, 400, `Missing startDate: a backfill names its first and last days (YYYY-MM-DD)`},
			{"/v1/admin/warehouses/nowhere/backfill", `{"startDate": "2026-11-01", "endDate": "2026-11-01"}`, 404, `Warehouse "nowhere" not found`},
		} {
			if resp := e.call("POST", tt.path, token, tt.body); resp.status != tt.status || resp.errorMessage(t) != tt.want {
				t.Errorf("POST %s %s: %d %s, want %d %s", tt.path, tt.body, resp.status, resp.body, tt.status, tt.want)
			}
		}
		// A server without a warehouse directory has no folder warehouses.
		bare := newEnv(t, s)
		if resp := bare.call("POST", "/v1/admin/groups/north/warehouses", bare.token(), `{"id": "w", "folder": "x"}`); resp.status != 400 ||
			!strings.Contains(resp.errorMessage(t), "no warehouse directory") {
			t.Errorf("without --warehouse-dir: %d %s", resp.status, resp.body)
		}

		queued := e.mustCall("POST", "/v1/admin/warehouses/river-files/backfill", token, `{"startDate": "2026-11-01", "endDate": "2026-12-31"}`, http.StatusAccepted)
		if fmt.Sprint(queued["daysQueued"]) != "20" { // to north's yesterday
			t.Errorf("backfill: %v", queued)
		}
		one := e.mustCall("GET", "/v1/admin/warehouses/river-files", token, "", http.StatusOK)
		if d, _ := one["deliveries"].(map[string]any); fmt.Sprintf("%v %v", d["daysQueued"], d["failures"]) != "20 0" || d["lastRunAt"] != nil {
			t.Errorf("one: %v", one)
		}
		list := e.mustCall("GET", "/v1/admin/districts/river/warehouses", token, "", http.StatusOK)
		if ws, _ := list["warehouses"].([]any); len(ws) != 1 || ws[0].(map[string]any)["deliveries"] != nil {
			t.Errorf("list: %v", list)
		}

		// A run writes the days queued under the folder.
		d := &warehouse.Deliverer{Directory: s.Directory, Engine: reportengine.NewEngine(s.Directory, s.Usage), Root: root, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Now: func() time.Time { return testNow }}
		if err := d.Round(ctx); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(root, "river", "daily", "v1", "table=school_days", "*", "school=north", "part-0.csv"))
		if len(files) != 20 {
			t.Errorf("school_days files: %d", len(files))
		}
		if b, err := os.ReadFile(files[0]); err != nil || !strings.HasPrefix(string(b), "date,school_id,school_name,sessions_made,") {
			t.Errorf("%s: %v %q", files[0], err, b)
		}

		// Days queued of a school the district no longer has are dropped,
		// never delivered.
		e.mustCall("POST", "/v1/admin/warehouses/river-files/backfill", token, `{"startDate": "2026-11-01", "endDate": "2026-11-05"}`, http.StatusAccepted)
		e.mustCall("DELETE", "/v1/admin/districts/river/schools/north", token, "", http.StatusNoContent)
		if err := d.Round(ctx); err != nil {
			t.Fatal(err)
		}
		one = e.mustCall("GET", "/v1/admin/warehouses/river-files", token, "", http.StatusOK)
		if d, _ := one["deliveries"].(map[string]any); fmt.Sprint(d["daysQueued"]) != "0" || d["lastError"] != nil {
			t.Errorf("after north left the district: %v", one)
		}
		if manifests, _ := filepath.Glob(filepath.Join(root, "river", "daily", "v1", "manifests", "*.json")); len(manifests) != 1 {
			t.Errorf("manifests: %v", manifests)
		}

		e.mustCall("DELETE", "/v1/admin/warehouses/river-files", token, "", http.StatusNoContent)
		e.mustCall("GET", "/v1/admin/warehouses/river-files", token, "", http.StatusNotFound)
	})
}

// TestWarehouseFilesPulled asks GET /api/warehouse-files with a school's,
// a district's and a teacher's key, and with bad parameters.
func TestWarehouseFilesPulled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s storetest.Stores) {
		e := newEnv(t, s)
		key := e.school("north", "America/New_York")
		e.send(session("north", "amy", "2026-11-20T15:00:00Z"), message("north", "ben", "main", "2026-11-19T15:00:00Z"))
		districtKey := e.district("river", "UTC", "north")
		e.mustCall("POST", "/v1/admin/groups/north/classes", e.token(), `{"id": "c1", "name": "Math"}`, http.StatusCreated)
		_, teacher, err := e.platform.CreateKey(ctx, "north", "teacher", "c1")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []struct{ name, key, query string }{
			{"school", key, ""}, {"district", districtKey, "&schoolId=north"}, {"district, every school", districtKey, ""},
		} {
			resp := e.do("GET", "/api/warehouse-files?startDate=2026-11-19&endDate=2026-11-20&format=csv"+k.query, k.key, "")
			if resp.status != 200 || resp.header.Get("Content-Type") != "application/zip" {
				t.Fatalf("%s: %d %s", k.name, resp.status, resp.body)
			}
			zr, err := zip.NewReader(bytes.NewReader(resp.body), int64(len(resp.body)))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range zr.File {
				names = append(names, f.Name)
			}
			if len(names) != 2*3+1 || names[0] != "v1/table=student_days/date=2026-11-19/school=north/part-0.csv" {
				t.Errorf("%s: %v", k.name, names)
			}
		}
		for _, tt := range []struct {
			query, key string
			status     int
			want       string
		}{
			{"startDate=2026-11-19", key, 400, "Missing endDate: the files are asked for a range of days (YYYY-MM-DD)"},
			{"startDate=2026-11-19&endDate=2026-11-22", key, 400, "Invalid endDate: 2026-11-22 is after today, 2026-11-21"},
			{"startDate=2025-11-19&endDate=2026-11-20", key, 400, "Invalid range: 367 days, more than 366 a request"},
			{"startDate=2026-11-19&endDate=2026-11-20&format=xlsx", key, 400, `Invalid format: expected parquet or csv, got "xlsx"`},
			{"startDate=2026-11-19&endDate=2026-11-20&interval=day", key, 400, `Unknown parameter "interval": expected startDate, endDate, format, schoolId`},
			{"startDate=2026-11-19&endDate=2026-11-20&schoolId=north", key, 400, "Invalid schoolId: it is for a district's key, and this key is a school's"},
			{"startDate=2026-11-19&endDate=2026-11-20", teacher, 403, "A teacher's key cannot read the school's warehouse files"},
		} {
			resp := e.do("GET", "/api/warehouse-files?"+tt.query, tt.key, "")
			if resp.status != tt.status || resp.errorMessage(t) != tt.want {
				t.Errorf("%s: %d %s, want %d %s", tt.query, resp.status, resp.body, tt.status, tt.want)
			}
		}
		// A school without a plan is left out, and named.
		if _, err := e.platform.CreateGroup(ctx, "east", "East", "UTC"); err != nil {
			t.Fatal(err)
		}
		if err := e.platform.AttachSchool(ctx, "river", "east"); err != nil {
			t.Fatal(err)
		}
		resp := e.do("GET", "/api/warehouse-files?startDate=2026-11-19&endDate=2026-11-20", districtKey, "")
		if resp.status != 200 || resp.header.Get("Schools-Left-Out") != "east" {
			t.Errorf("a school without a plan: %d %v", resp.status, resp.header)
		}
		resp = e.do("GET", "/api/warehouse-files?startDate=2026-11-19&endDate=2026-11-20&schoolId=east", districtKey, "")
		if resp.status != 400 || resp.errorMessage(t) != "Invalid schoolId: no school asked has a valid plan now (east)" {
			t.Errorf("only a school without a plan: %d %s", resp.status, resp.body)
		}
		// Each pull is in the school's access log.
		log := e.mustCall("GET", "/v1/admin/groups/north/access-log", e.token(), "", http.StatusOK)
		if entries, _ := log["entries"].([]any); len(entries) != 4 || entries[0].(map[string]any)["endpoint"] != "/api/warehouse-files" {
			t.Errorf("access log: %v", log)
		}
	})
}
