package cli

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/stores/storetest"
)

// demoRun is a demo running in-process.
type demoRun struct {
	stdout, stderr syncWriter
	done           chan int
	cancel         context.CancelFunc
}

// startDemo runs the demo with args and waits until it serves, or until
// it stops (its exit code is then in done).
func startDemo(t *testing.T, args ...string) *demoRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &demoRun{done: make(chan int, 1), cancel: cancel}
	go func() {
		d.done <- Main(ctx, append([]string{"demo", "--log-level", "warn"}, args...), nil, &d.stdout, &d.stderr)
	}()
	t.Cleanup(d.stop)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(d.stdout.String(), "Serving on ") && time.Now().Before(deadline) {
		select {
		case code := <-d.done:
			d.done <- code
			return d
		case <-time.After(20 * time.Millisecond):
		}
	}
	return d
}

// stop stops the demo and waits for it.
func (d *demoRun) stop() {
	d.cancel()
	code := <-d.done
	d.done <- code
}

// exited is the demo's exit code, or -1 while it runs.
func (d *demoRun) exited() int {
	select {
	case code := <-d.done:
		d.done <- code
		return code
	default:
		return -1
	}
}

// key is the first school's key the demo printed.
func (d *demoRun) key() string { return regexp.MustCompile(`gak_\w+`).FindString(d.stdout.String()) }

// chat asks for the chat report of the demo's first school with key, and
// returns its status.
func chatStatus(t *testing.T, addr, key string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/groups/chat?students=true", nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fingerprint is what a directory of SQLite files holds: every file's
// name and the hash of its bytes.
func fingerprint(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

func sameFiles(t *testing.T, what string, before, after map[string][32]byte) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s: files %v, then %v", what, len(before), len(after))
	}
	for name, sum := range before {
		if after[name] != sum {
			t.Errorf("%s: %s changed", what, name)
		}
	}
}

// The demo never changes a store it did not make: not one --db names,
// not one GROUPANALYTICS_DB names (demo does not read it), not another
// running demo's; a demo that cannot listen touches nothing; a demo run
// again after the last stopped starts afresh in its own store.
func TestDemoNeverTouchesAnotherStore(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the demo's default store is under it
	realDir := t.TempDir()
	real := filepath.Join(realDir, "school.db")
	mustRun(t, "migrate", "--db", real)
	mustRun(t, "group", "create", "--db", real, "--id", "northside-high", "--name", "Our own Northside")
	mustRun(t, "token", "create", "--db", real, "--label", "ours")
	before := fingerprint(t, realDir)

	// Through --db: refused, naming the store and what to do.
	d := startDemo(t, "--db", real, "--addr", freeAddr(t))
	if d.exited() != 1 || !strings.Contains(d.stderr.String(), "school.db: it holds a store that demo did not make") {
		t.Errorf("demo --db on a store of someone's own: exit %d\n%s%s", d.exited(), d.stdout.String(), d.stderr.String())
	}
	sameFiles(t, "demo --db", before, fingerprint(t, realDir))

	// Through GROUPANALYTICS_DB: not read; the demo makes its own store.
	t.Setenv("GROUPANALYTICS_DB", real)
	addr := freeAddr(t)
	first := startDemo(t, "--addr", addr)
	if first.exited() != -1 || !strings.Contains(first.stdout.String(), "a demo store at "+filepath.Join(os.Getenv("TMPDIR"), "groupanalytics-demo.db")) {
		t.Fatalf("demo with GROUPANALYTICS_DB set: exit %d\n%s%s", first.exited(), first.stdout.String(), first.stderr.String())
	}
	sameFiles(t, "GROUPANALYTICS_DB", before, fingerprint(t, realDir))
	key := first.key()
	if code := chatStatus(t, addr, key); code != http.StatusOK {
		t.Fatalf("the demo's key: %d", code)
	}

	// A second demo on the same store while the first serves: refused.
	second := startDemo(t, "--addr", freeAddr(t))
	if second.exited() != 1 || !strings.Contains(second.stderr.String(), "another demo is serving it") {
		t.Errorf("a second demo on the running one's store: exit %d\n%s", second.exited(), second.stderr.String())
	}
	// One on the same address, with a store of its own: fails before
	// it makes the store.
	other := filepath.Join(t.TempDir(), "other.db")
	third := startDemo(t, "--addr", addr, "--db", other)
	if third.exited() != 1 || !strings.Contains(third.stderr.String(), "address already in use") ||
		!strings.Contains(third.stderr.String(), "pick another address with --addr") {
		t.Errorf("a demo on a busy address: exit %d\n%s", third.exited(), third.stderr.String())
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a demo that could not listen made %s (%v)", other, err)
	}
	// The first serves on, its keys accepted.
	time.Sleep(100 * time.Millisecond)
	if code := chatStatus(t, addr, key); code != http.StatusOK {
		t.Errorf("the first demo's key after the others tried: %d", code)
	}

	// Stopped and run again: the same store, loaded afresh (the old keys
	// are gone with their schools, and the counts are not doubled).
	first.stop()
	var wantEvents string
	if m := regexp.MustCompile(`with 3 groups and (\d+) events`).FindStringSubmatch(first.stdout.String()); m != nil {
		wantEvents = m[1]
	}
	again := startDemo(t, "--addr", addr)
	if again.exited() != -1 || !strings.Contains(again.stdout.String(), "with 3 groups and "+wantEvents+" events") {
		t.Fatalf("the demo again: exit %d\n%s%s", again.exited(), again.stdout.String(), again.stderr.String())
	}
	if code := chatStatus(t, addr, key); code != http.StatusForbidden {
		t.Errorf("the last run's key: %d, want 403", code)
	}
	if code := chatStatus(t, addr, again.key()); code != http.StatusOK {
		t.Errorf("the new key: %d", code)
	}
	again.stop()
	sameFiles(t, "after every demo", before, fingerprint(t, realDir))
}

// demo --db postgres://… makes its store in an empty database, prints the
// keys without the URL's password, serves them, and can run again on it;
// a database that holds a store of someone's own is refused untouched.
func TestDemoOnPostgres(t *testing.T) {
	db := storetest.NewPostgresDatabase(t)
	addr := freeAddr(t)
	d := startDemo(t, "--db", db, "--addr", addr)
	if d.key() == "" || !strings.Contains(d.stdout.String(), "a demo store at postgres://") {
		t.Fatalf("demo printed no key:\n%s%s", d.stdout.String(), d.stderr.String())
	}
	if code := chatStatus(t, addr, d.key()); code != http.StatusOK {
		t.Fatalf("report: %d", code)
	}
	if students := mustRun(t, "student", "list", "--db", db, "--group", "northside-high"); strings.Count(students, "\n") != 241 {
		t.Errorf("northside-high in PostgreSQL: %d lines, want 240 students and a header", strings.Count(students, "\n"))
	}
	if second := startDemo(t, "--db", db, "--addr", freeAddr(t)); second.exited() != 1 || !strings.Contains(second.stderr.String(), "another demo is serving it") {
		t.Errorf("a second demo on the database: exit %d\n%s", second.exited(), second.stderr.String())
	}
	d.stop()
	if again := startDemo(t, "--db", db, "--addr", addr); again.exited() != -1 || chatStatus(t, addr, again.key()) != http.StatusOK {
		t.Errorf("the demo again on its database: exit %d\n%s", again.exited(), again.stderr.String())
	}

	ours := storetest.NewPostgresDatabase(t)
	mustRun(t, "migrate", "--db", ours)
	mustRun(t, "group", "create", "--db", ours, "--id", "northside-high")
	groups := mustRun(t, "group", "list", "--db", ours)
	refused := startDemo(t, "--db", ours, "--addr", freeAddr(t))
	if refused.exited() != 1 || !strings.Contains(refused.stderr.String(), "it holds a store that demo did not make") {
		t.Errorf("demo on a database of someone's own: exit %d\n%s", refused.exited(), refused.stderr.String())
	}
	if after := mustRun(t, "group", "list", "--db", ours); after != groups {
		t.Errorf("groups before:\n%s\nafter:\n%s", groups, after)
	}
}

// demo --usage clickhouse://… makes its usage store in a database that no
// other directory fills, and refuses, untouched, one that holds another
// directory's events (its group ids could be the demo's).
func TestDemoOnClickHouse(t *testing.T) {
	usage := storetest.NewClickHouseURL(t)
	ours := storetest.NewPostgresDatabase(t)
	mustRun(t, "group", "create", "--db", ours, "--usage", usage, "--id", "northside-high")
	event := `{"id": "e-1", "groupId": "northside-high", "studentId": "s-1", "occurredAt": "2026-11-02T10:00:00Z", "kind": "live_lecture.session_created"}`
	if code, out, errOut := run(t, event, "import", "--db", ours, "--usage", usage); code != 0 {
		t.Fatalf("import: %d %s%s", code, out, errOut)
	}
	// The demo sees what ClickHouse holds, not what waits in another
	// directory's write-behind log: the import's event is applied first
	// (the import applies it as it closes, unless ClickHouse is slow then).
	if _, err := storetest.OpenClickHouse(t, ours, usage).Usage.Settle(context.Background(), "northside-high"); err != nil {
		t.Fatalf("applying the import's event: %v", err)
	}
	refused := startDemo(t, "--db", storetest.NewPostgresDatabase(t), "--usage", usage, "--addr", freeAddr(t))
	if refused.exited() != 1 || !strings.Contains(refused.stderr.String(), "holds 1 events of groups that the demo's directory does not place") {
		t.Errorf("demo on another directory's ClickHouse database: exit %d\n%s", refused.exited(), refused.stderr.String())
	}
	if got := storetest.RawClickHouseEvents(t, usage, "northside-high"); len(got) != 1 {
		t.Errorf("our school's events after the demo: %v", got)
	}

	addr := freeAddr(t)
	own := storetest.NewPostgresDatabase(t)
	fresh := storetest.NewClickHouseURL(t)
	for range 2 { // made, then made again on its own stores
		d := startDemo(t, "--db", own, "--usage", fresh, "--addr", addr)
		if d.exited() != -1 || chatStatus(t, addr, d.key()) != http.StatusOK {
			t.Fatalf("demo on ClickHouse: exit %d\n%s%s", d.exited(), d.stdout.String(), d.stderr.String())
		}
		d.stop()
	}
}

// TestDemoClasses: the demo's first school has two classes, and a teacher's
// key of the first, which the demo prints with a line on what it sees:
// through HTTP, that class's students alone.
func TestDemoClasses(t *testing.T) {
	base, keys := demoServer(t)
	get := func(key, method, path string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	classes := func(key string) string {
		t.Helper()
		_, body := get(key, "GET", "/api/classes")
		var out []string
		for _, c := range body["classes"].([]any) {
			c := c.(map[string]any)
			out = append(out, fmt.Sprintf("%s %s %v", c["id"], c["name"], c["students"]))
		}
		return fmt.Sprint(body["forClasses"], out)
	}
	if got, want := classes(keys["northside-high"]), "false [chem-9a Chemistry 9A 28 hist-9b History 9B 30]"; got != want {
		t.Errorf("the school's classes: %s, want %s", got, want)
	}
	teacher := keys[demoTeacher]
	if got, want := classes(teacher), "true [chem-9a Chemistry 9A 28]"; got != want {
		t.Errorf("the teacher's classes: %s, want %s", got, want)
	}
	_, body := get(teacher, "POST", "/api/groups/chat?students=true")
	var ids []string
	for _, r := range body["reports"].([]any) {
		ids = append(ids, r.(map[string]any)["studentId"].(string))
	}
	slices.Sort(ids)
	if len(ids) != 28 || ids[0] != "nort-s001" || ids[27] != "nort-s028" {
		t.Errorf("the teacher's key's students: %v", ids)
	}
	if status, body := get(teacher, "POST", "/api/groups/chat?classId=hist-9b"); status != 400 || body["error"] != `Invalid classId: no class "hist-9b" in this group` {
		t.Errorf("the teacher's key asking for the other class: %d %v", status, body)
	}

	var out strings.Builder
	printDemo(&env{stdout: &out}, "demo.db", "http://127.0.0.1:8080", keys, "gat_T", 1, time.Now())
	if want := "  Classes Chemistry 9A (28 students) and History 9B (30); a teacher's key of Chemistry 9A sees that class's students alone, here and in the dashboard:\n" +
		"  curl -s -X POST 'http://127.0.0.1:8080/api/groups/chat?students=true&startDate="; !strings.Contains(out.String(), want) ||
		!strings.Contains(out.String(), "-H 'x-api-key: "+teacher+"'\n") {
		t.Errorf("the demo prints:\n%s\nwant the classes and the teacher's key", out.String())
	}
}
