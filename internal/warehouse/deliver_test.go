package warehouse_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
	"groupanalytics/internal/warehouse"
)

// The S3-compatible server of the tests: deploy/s3/server's SeaweedFS,
// which .ci/run starts, with its district's identity and bucket.
const (
	s3AccessKey = "test-district"
	s3SecretKey = "test-district-secret"
	s3Bucket    = "warehouse"
)

// requireS3 returns the test S3 server's address, or skips the test (in
// CI, fails it) when none answers.
func requireS3(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no S3 server")
	}
	endpoint := os.Getenv("GROUPANALYTICS_TEST_S3")
	if endpoint == "" {
		endpoint = "http://127.0.0.1:20700"
	}
	resp, err := http.Get(endpoint + "/" + s3Bucket)
	if err == nil {
		resp.Body.Close()
		return endpoint
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("an S3 server is required in CI: %v", err)
	}
	t.Skipf("no S3 server at %s (%v): run deploy/s3/server start", endpoint, err)
	return ""
}

// admin asks the platform API with a platform token.
func (e *env) admin(method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	if e.token == "" {
		_, secret, err := e.platform.CreateToken(ctx, "test")
		e.must(nil, err)
		e.token = secret
	}
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, e.server.URL+path, r)
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// bucketFiles downloads every object under prefix into a new directory.
func bucketFiles(t *testing.T, endpoint, prefix string) string {
	t.Helper()
	u, _ := url.Parse(endpoint)
	client, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for obj := range client.ListObjects(ctx, s3Bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		name := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(obj.Key, prefix+"/")))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := client.FGetObject(ctx, s3Bucket, obj.Key, name, minio.GetObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// manifests reads the runs' manifests under dir, oldest first.
func manifests(t *testing.T, dir string) []warehouse.Manifest {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "v1", "manifests", "*.json"))
	slices.Sort(names)
	var out []warehouse.Manifest
	for _, n := range names {
		b, _ := os.ReadFile(n)
		var m warehouse.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestDeliveriesToABucket delivers a district's files to a real
// S3-compatible server: credentials refused when the warehouse is added,
// the schedule's days once they end, a backfill, a failure tried again
// after its backoff, and an erasure's rewrite; the files read back add up
// to the reports, and a day written again holds no row twice.
func TestDeliveriesToABucket(t *testing.T) {
	endpoint := requireS3(t)
	storetest.Each(t, func(t *testing.T, s storetest.Stores) {
		e := newEnv(t, s)
		keys := e.metro(8)
		// The bucket, through a proxy that the test cuts to fail a run.
		proxy := storetest.NewProxy(t, strings.TrimPrefix(endpoint, "http://"))
		prefix := fmt.Sprintf("districts/metro-%s-%d", filepath.Base(t.Name()), time.Now().UnixNano())
		bucket := map[string]any{"endpoint": "http://" + proxy.Addr(), "name": s3Bucket, "prefix": prefix,
			"accessKeyId": s3AccessKey, "secretAccessKey": "not-" + s3SecretKey}

		status, out := e.admin("POST", "/v1/admin/districts/metro/warehouses", map[string]any{"id": "metro-lake", "bucket": bucket})
		if status != 400 || !strings.Contains(fmt.Sprint(out["error"]), "refused a test write") || strings.Contains(fmt.Sprint(out), s3SecretKey) {
			t.Fatalf("wrong secret: %d %v", status, out)
		}
		bucket["secretAccessKey"] = s3SecretKey
		status, out = e.admin("POST", "/v1/admin/districts/metro/warehouses", map[string]any{"id": "metro-lake", "bucket": bucket})
		if status != 201 || out["firstDate"] != "2026-11-21" || strings.Contains(fmt.Sprint(out), s3SecretKey) {
			t.Fatalf("add: %d %v", status, out)
		}

		clock := now
		d := &warehouse.Deliverer{Directory: s.Directory, Engine: e.engine, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Now: func() time.Time { return clock }}
		round := func() {
			t.Helper()
			if err := d.Round(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// At noon in New York it is 1 a.m. in Auckland: south's first day
		// has ended, north's has not.
		round()
		runs := manifests(t, bucketFiles(t, endpoint, prefix))
		if len(runs) != 1 || len(runs[0].Files) != 3 || runs[0].Files[0].School != "south" || runs[0].StartDate != "2026-11-21" ||
			runs[0].EndDate != "2026-11-21" {
			t.Fatalf("the first run: %+v", runs)
		}
		// Two days later, north's two days and south's next two.
		clock = now.Add(48 * time.Hour)
		round()
		runs = manifests(t, bucketFiles(t, endpoint, prefix))
		if len(runs) != 2 || len(runs[1].Files) != 4*3 || runs[1].StartDate != "2026-11-21" || runs[1].EndDate != "2026-11-23" {
			t.Fatalf("the schedule's second run: %+v", runs[1:])
		}
		round() // nothing more is due
		if runs := manifests(t, bucketFiles(t, endpoint, prefix)); len(runs) != 2 {
			t.Fatalf("a run with nothing due: %d runs", len(runs))
		}

		// A backfill of the month before, through a failure: the proxy
		// cut, the run fails and waits its backoff.
		status, out = e.admin("POST", "/v1/admin/warehouses/metro-lake/backfill", map[string]any{"startDate": "2026-10-25", "endDate": "2026-11-20"})
		if status != 202 || out["daysQueued"] != float64(2*27) {
			t.Fatalf("backfill: %d %v", status, out)
		}
		proxy.Cut()
		if err := d.Round(ctx); err == nil {
			t.Fatal("a run through a cut connection did not fail")
		}
		status, out = e.admin("GET", "/v1/admin/warehouses/metro-lake", nil)
		deliveries, _ := out["deliveries"].(map[string]any)
		if status != 200 || deliveries["failures"] != float64(1) || deliveries["lastError"] == nil || deliveries["daysQueued"] != float64(54) ||
			deliveries["retryAt"] != analytics.FormatTime(clock.Add(time.Minute)) {
			t.Fatalf("after a failure: %d %v", status, out)
		}
		proxy.Start(t)
		round() // within the backoff: not tried
		clock = clock.Add(time.Minute)
		round()
		status, out = e.admin("GET", "/v1/admin/warehouses/metro-lake", nil)
		deliveries, _ = out["deliveries"].(map[string]any)
		if deliveries["failures"] != float64(0) || deliveries["daysQueued"] != float64(0) || deliveries["lastError"] != nil {
			t.Fatalf("after the retry: %d %v", status, out)
		}
		dir := bucketFiles(t, endpoint, prefix)
		db := duckDB(t)
		for school, key := range keys {
			checkTotals(t, e, db, dir, analytics.FormatParquet, school, key, "2026-10-25", "2026-11-20")
		}

		// An erasure: the days that held the student are written again
		// without them, and the manifest says which.
		var held []string
		rows, err := db.Query(`SELECT DISTINCT strftime(date, '%Y-%m-%d') FROM ` + reader(dir, analytics.FormatParquet, warehouse.StudentDays) +
			` WHERE student_id = 'north-s03' ORDER BY 1`)
		e.must(nil, err)
		for rows.Next() {
			var day string
			rows.Scan(&day)
			held = append(held, day)
		}
		rows.Close()
		if len(held) == 0 {
			t.Fatal("north-s03 used nothing")
		}
		e.must(nil, e.platform.DeleteStudent(ctx, "north", "north-s03"))
		round()
		dir = bucketFiles(t, endpoint, prefix)
		runs = manifests(t, dir)
		var rewritten []string
		for _, day := range runs[len(runs)-1].Rewritten {
			if day.School != "north" {
				t.Errorf("rewritten: %+v", day)
			}
			rewritten = append(rewritten, day.Date)
		}
		if !slices.Equal(rewritten, held) {
			t.Errorf("rewritten %v, the student's days %v", rewritten, held)
		}
		db = duckDB(t)
		var theirs, twice int
		e.must(nil, db.QueryRow(`SELECT count(*) FROM `+reader(dir, analytics.FormatParquet, warehouse.StudentDays)+
			` WHERE student_id = 'north-s03'`).Scan(&theirs))
		e.must(nil, db.QueryRow(`SELECT count(*) FROM (SELECT date, school_id, student_id FROM `+
			reader(dir, analytics.FormatParquet, warehouse.StudentDays)+` GROUP BY ALL HAVING count(*) > 1)`).Scan(&twice))
		if theirs != 0 || twice != 0 {
			t.Errorf("after the erasure: %d rows of the student, %d rows twice", theirs, twice)
		}
		for school, key := range keys {
			checkTotals(t, e, db, dir, analytics.FormatParquet, school, key, "2026-10-25", "2026-11-20")
		}

		// Every delivery is in each school's access log.
		status, out = e.admin("GET", "/v1/admin/groups/north/access-log", nil)
		entries, _ := out["entries"].([]any)
		if status != 200 || len(entries) < 2 {
			t.Fatalf("north's access log: %d %v", status, out)
		}
		for _, entry := range entries {
			entry := entry.(map[string]any)
			if entry["warehouse"] != "metro-lake" || entry["endpoint"] != "warehouse" || entry["key"] != nil {
				t.Errorf("a delivery's entry: %v", entry)
			}
		}
	})
}
