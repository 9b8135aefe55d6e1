package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/digest/mailtest"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/signin/oidctest"
	"groupanalytics/internal/stores/storetest"
)

// run runs the command line in-process and returns its exit code and
// output.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := run(t, "", args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// newStore returns the path of a fresh, migrated SQLite store.
func newStore(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "t.db")
	mustRun(t, "migrate", "--db", db)
	return db
}

func TestUsageMistakesExitTwo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	tests := []struct {
		args []string
		want string
	}{
		{nil, "usage: groupanalytics COMMAND"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"group", "create", "--db", db}, "missing --id"},
		{[]string{"key", "revoke", "--db", db, "--group", "g"}, "missing --key"},
		{[]string{"group", "list", "--db", db, "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"group", "list", "--db", db, "extra"}, `unexpected argument "extra"`},
		{[]string{"plan", "cancel", "--db", db, "--group", "g", "--plan", "one"}, `invalid value "one"`},
		{[]string{"backup", "--db", db}, "missing --to"},
	}
	for _, tt := range tests {
		code, out, errOut := run(t, "", tt.args...)
		if code != 2 || !strings.Contains(out+errOut, tt.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 and %q", tt.args, code, out+errOut, tt.want)
		}
	}
}

func TestAdminErrorsExitOneWithAMessage(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--tz", "Europe/Berlin")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"group", "create", "--db", db, "--id", "north"}, `Group "north" already exists`},
		{[]string{"group", "create", "--db", db, "--id", "x", "--tz", "Mars/Olympus"}, `Invalid timeZone "Mars/Olympus"`},
		{[]string{"group", "create", "--db", db, "--id", "bad id"}, `Invalid group id "bad id"`},
		{[]string{"plan", "set", "--db", db, "--group", "south"}, `Group "south" not found`},
		{[]string{"plan", "set", "--db", db, "--group", "north", "--start", "2026-02-01", "--end", "2026-01-31"}, "Invalid end: the last day 2026-01-31 is before the start 2026-02-01"},
		{[]string{"plan", "set", "--db", db, "--group", "north", "--start", "2026-02-01", "--end", "2026-01-31T23:00:00Z"}, "Invalid end: 2026-01-31T23:00:00Z is not after the start 2026-02-01"},
		{[]string{"plan", "set", "--db", db, "--group", "north", "--start", "soon"}, `Invalid start: expected a date (2025-09-01) or an RFC 3339 timestamp, got "soon"`},
		{[]string{"key", "revoke", "--db", db, "--group", "north", "--key", "key_nope"}, `Key "key_nope" of group "north" not found`},
		{[]string{"student", "rename", "--db", db, "--group", "north", "--id", "s9", "--name", "X"}, `Student "s9" not found in group "north"`},
		{[]string{"backup", "--db", "postgres://u@127.0.0.1:1/x", "--to", "copy.db"}, "back up PostgreSQL with pg_dump"},
		{[]string{"backup", "--db", db, "--usage", "clickhouse://127.0.0.1:1/x", "--to", "copy.db"}, "backed up with its directory, on PostgreSQL"},
		{[]string{"restore", "--db", db, "--usage", "clickhouse://127.0.0.1:1/x", "--from", "nowhere"}, "holds no manifest.json"},
		{[]string{"backup", "--db", db + ".typo", "--to", "copy.db"}, "no store at"},
	}
	for _, tt := range tests {
		code, _, errOut := run(t, "", tt.args...)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and %q", tt.args, code, errOut, tt.want)
		}
	}
}

// TestPlanSetEchoesTheBoundsAsTyped: plan set says the plan's bounds as
// they were given (an end date is the last day), then the instants stored.
func TestPlanSetEchoesTheBoundsAsTyped(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--tz", "Europe/Berlin")
	tests := []struct {
		start, end, want string
	}{
		{"2025-08-01", "2026-07-31", "added plan 1 to group north: 2025-08-01 through 2026-07-31 (from 2025-07-31T22:00:00.000Z until 2026-07-31T22:00:00.000Z)\n"},
		{"2026-02-01", "2026-02-01", "added plan 2 to group north: 2026-02-01 through 2026-02-01 (from 2026-01-31T23:00:00.000Z until 2026-02-01T23:00:00.000Z)\n"},
		{"2026-03-01", "2026-03-02T12:00:00Z", "added plan 3 to group north: 2026-03-01 until 2026-03-02T12:00:00Z (from 2026-02-28T23:00:00.000Z until 2026-03-02T12:00:00.000Z)\n"},
		{"2026-04-01", "", "added plan 4 to group north: 2026-04-01, open-ended (from 2026-03-31T22:00:00.000Z)\n"},
	}
	for _, tt := range tests {
		args := []string{"plan", "set", "--db", db, "--group", "north", "--start", tt.start}
		if tt.end != "" {
			args = append(args, "--end", tt.end)
		} else {
			args = append(args, "--seats", "250")
		}
		if got := mustRun(t, args...); got != tt.want {
			t.Errorf("plan set %s %s:\n%q\nwant\n%q", tt.start, tt.end, got, tt.want)
		}
	}
	// plan list gives each plan's first and last day as they were set
	// (Berlin), then the instants.
	list := mustRun(t, "plan", "list", "--db", db, "--group", "north")
	for _, want := range []string{
		`(?m)^PLAN +FIRST DAY +LAST DAY +STARTS +ENDS +CANCELLED +VALID NOW +SEATS$`,
		`(?m)^1 +2025-08-01 +2026-07-31 +2025-07-31T22:00:00.000Z +2026-07-31T22:00:00.000Z +- +`,
		`(?m)^2 +2026-02-01 +2026-02-01 +`,
		`(?m)^3 +2026-03-01 +2026-03-02 +`,
		`(?m)^4 +2026-04-01 +- +2026-03-31T22:00:00.000Z +- +- +true +250$`,
		`(?m)^3 +2026-03-01 +2026-03-02 +.* +-$`,
	} {
		if !regexp.MustCompile(want).MatchString(list) {
			t.Errorf("plan list has no line %s:\n%s", want, list)
		}
	}
}

func TestImportIsAllOrNothing(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	good := `{"id":"e1","groupId":"north","studentId":"s1","studentName":"Ada","occurredAt":"2025-03-01T10:00:00Z","kind":"chat.message_sent","chatType":"main"}`
	lines := strings.Join([]string{
		good,
		``,
		`{"id":"e2","groupId":"north","studentId":"s1","occurredAt":"2025-03-01T10:00:00Z"}`,
		`{"id":"e3","groupId":"south","studentId":"s1","occurredAt":"2025-03-01T10:00:00Z","kind":"live_lecture.session_created"}`,
		`not json`,
	}, "\n")
	code, _, errOut := run(t, lines, "import", "--db", db)
	want := "line 3: Missing kind\nline 4: Unknown groupId \"south\"\nline 5: Invalid event: expected a JSON object\n"
	if code != 1 || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "3 of 4 lines rejected; nothing was imported") {
		t.Fatalf("exit %d, stderr:\n%s\nwant it to start with:\n%s", code, errOut, want)
	}
	if out := mustRun(t, "student", "list", "--db", db, "--group", "north"); strings.Contains(out, "s1") {
		t.Errorf("a rejected file enrolled a student:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "events.ndjson")
	os.WriteFile(file, []byte(good+"\n"+good+"\n"), 0o600)
	if out := mustRun(t, "import", "--db", db, file); out != "imported 2 events (1 new, 1 duplicate)\n" {
		t.Errorf("import: %q", out)
	}
	os.WriteFile(file, []byte(good+"\n"), 0o600)
	if out := mustRun(t, "import", "--db", db, file); out != "imported 1 event (0 new, 1 duplicate)\n" {
		t.Errorf("import of one line: %q", out)
	}
}

// Lists show a key's or token's prefix ("gak_AB12…") beside its id, and
// operators copy what they see: revoke takes either, and an ambiguous or
// unknown prefix is an error that says to give the id.
func TestRevokeByTheListedPrefix(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	for _, c := range []struct{ what, create, list, revoke, flag string }{
		{"key", "key create --group north", "key list --group north", "key revoke --group north", "--key"},
		{"token", "token create", "token list", "token revoke", "--token"},
	} {
		cmd := func(line string, extra ...string) []string {
			return append(append(strings.Fields(line), "--db", db), extra...)
		}
		mustRun(t, cmd(c.create)...)
		mustRun(t, cmd(c.create)...)
		listed := strings.Split(strings.TrimSpace(mustRun(t, cmd(c.list)...)), "\n")[1:]
		first := strings.Fields(listed[0]) // id, prefix…, ...
		if out := mustRun(t, cmd(c.revoke, c.flag, first[1])...); !strings.Contains(out, "revoked") || !strings.Contains(out, first[0]) {
			t.Errorf("%s revoke %s: %q, want it to revoke %s", c.what, first[1], out, first[0])
		}
		times := regexp.MustCompile(`\d{4}-\d\d-\d\dT`)
		for _, line := range strings.Split(mustRun(t, cmd(c.list)...), "\n") {
			if strings.HasPrefix(line, first[0]) && len(times.FindAllString(line, -1)) != len(times.FindAllString(listed[0], -1))+1 {
				t.Errorf("%s list after revoking %s: %q, want a time of revocation", c.what, first[0], line)
			}
		}
		prefix := strings.SplitN(first[1], "_", 2)[0] + "_ZZZZ"
		code, _, errOut := run(t, "", cmd(c.revoke, c.flag, prefix)...)
		if want := "give the " + c.what + " id"; code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s revoke %s: exit %d, %q; want exit 1 and %q", c.what, prefix, code, errOut, want)
		}
	}
}

func TestEnvironmentOverridesFlagDefaults(t *testing.T) {
	db := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("GROUPANALYTICS_DB", db)
	mustRun(t, "migrate")
	mustRun(t, "group", "create", "--id", "north")
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("GROUPANALYTICS_DB was not used: %v", err)
	}
	other := newStore(t)
	mustRun(t, "group", "create", "--db", other, "--id", "south")
	if out := mustRun(t, "group", "list"); strings.Contains(out, "south") || !strings.Contains(out, "north") {
		t.Errorf("a flag given on the command line must win over the environment:\n%s", out)
	}
}

// TestDocumentedEnvironmentIsTaken: every flag that docs/operating.md's
// table gives an environment variable takes it.
func TestDocumentedEnvironmentIsTaken(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| `(GROUPANALYTICS_[A-Z_]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 10 {
		t.Fatalf("found %d rows of flags in docs/operating.md", len(rows))
	}
	for _, row := range rows {
		if !configFlags[row[1]] {
			t.Errorf("--%s: docs/operating.md says %s sets it, but the environment is not read for it", row[1], row[2])
		}
	}
}

func TestMemoryLimitFlag(t *testing.T) {
	for _, c := range []struct {
		in   string
		want memoryLimit
		err  bool
	}{
		{"256MiB", 256 << 20, false}, {"2GiB", 2 << 30, false}, {"off", -1, false},
		{"256", 0, true}, {"0MiB", 0, true}, {"-1GiB", 0, true}, {"1.5GiB", 0, true}, {"256MB", 0, true},
	} {
		var m memoryLimit
		err := m.Set(c.in)
		if m != c.want || (err != nil) != c.err {
			t.Errorf("%q: %d, %v; want %d, error %v", c.in, m, err, c.want, c.err)
		}
		if err == nil && m.String() != c.in {
			t.Errorf("%q is written back as %q", c.in, m.String())
		}
	}
}

// TestMemoryLimitApplied: a serving process runs under the default memory
// limit, or the flag's, or GOMEMLIMIT's, and then collects at gcPercent
// unless GOGC is set; with the limit off, Go's defaults stand.
func TestMemoryLimitApplied(t *testing.T) {
	limit, percent := debug.SetMemoryLimit(-1), debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetMemoryLimit(limit); debug.SetGCPercent(percent) })
	for _, c := range []struct {
		flag             memoryLimit
		gomemlimit, gogc string
		wantLimit        int64
		wantPercent      int
	}{
		{0, "", "", defaultMemoryLimit, gcPercent},
		{2 << 30, "", "", 2 << 30, gcPercent},
		{0, "1GiB", "", math.MaxInt64, gcPercent}, // the runtime read GOMEMLIMIT at start; here, none
		{0, "", "150", defaultMemoryLimit, 100},
		{-1, "", "", math.MaxInt64, 100},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		debug.SetGCPercent(100)
		t.Setenv("GOMEMLIMIT", c.gomemlimit)
		t.Setenv("GOGC", c.gogc)
		c.flag.apply()
		gotLimit, gotPercent := debug.SetMemoryLimit(-1), debug.SetGCPercent(100)
		if gotLimit != c.wantLimit || gotPercent != c.wantPercent {
			t.Errorf("--memory-limit %v, GOMEMLIMIT %q, GOGC %q: limit %d, GOGC %d; want %d, %d",
				c.flag, c.gomemlimit, c.gogc, gotLimit, gotPercent, c.wantLimit, c.wantPercent)
		}
	}
}

// TestEnvironmentNeverNamesWhatIsDeleted: the environment sets where and
// how commands run, never what they work on.
func TestEnvironmentNeverNamesWhatIsDeleted(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	mustRun(t, "student", "add", "--db", db, "--group", "north", "--id", "s1", "--name", "Ada")
	t.Setenv("GROUPANALYTICS_ID", "s1")
	t.Setenv("GROUPANALYTICS_GROUP", "north")
	code, _, errOut := run(t, "", "student", "delete", "--db", db)
	if code != 2 || !strings.Contains(errOut, "missing --group, --id") {
		t.Errorf("student delete without --group and --id: exit %d, %q; want exit 2 naming both", code, errOut)
	}
	if out := mustRun(t, "student", "list", "--db", db, "--group", "north"); !strings.Contains(out, "s1") {
		t.Errorf("the environment chose a student to delete:\n%s", out)
	}
}

// TestAdminCommandsRefuseAMissingStore: a mistyped --db is an error, not a
// new empty store; migrate creates one.
func TestAdminCommandsRefuseAMissingStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "typo.db")
	code, _, errOut := run(t, "", "group", "list", "--db", db)
	if code != 1 || !strings.Contains(errOut, "no store at "+db) {
		t.Errorf("group list on a missing file: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("group list created %s", db)
	}
	mustRun(t, "migrate", "--db", db)
	mustRun(t, "group", "list", "--db", db)
}

// TestBackupIsWholeOrAbsent: a backup that fails once the copy is made
// (here: --to names a directory, which the copy cannot replace) leaves no
// partial file and what --to named as it was; one that works replaces the
// copy before it whole.
func TestBackupIsWholeOrAbsent(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	dir := t.TempDir()
	blocked := filepath.Join(dir, "blocked.db")
	if err := os.MkdirAll(filepath.Join(blocked, "kept"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "", "backup", "--db", db, "--to", blocked)
	if code != 1 || !strings.Contains(errOut, "copy to "+blocked) {
		t.Errorf("backup over a directory: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(blocked, "kept")); err != nil {
		t.Errorf("a failed backup changed what --to named: %v", err)
	}
	to := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(to, []byte("yesterday's copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "backup", "--db", db, "--to", to)
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("after the backups the directory holds %d entries, want blocked.db and copy.db", len(entries))
	}
	if out := mustRun(t, "group", "list", "--db", to); !strings.Contains(out, "north") {
		t.Errorf("the copy's groups: %q", out)
	}
}

// TestUnreachableStoreSaysWhy: an admin command against a PostgreSQL that
// does not answer prints the host and the driver's reason, not only
// "Service unavailable", and no password.
func TestUnreachableStoreSaysWhy(t *testing.T) {
	addr := freeAddr(t) // nothing listens here
	code, _, errOut := run(t, "", "group", "list", "--db", "postgres://ops:s3cret@"+addr+"/x?sslmode=disable&connect_timeout=2")
	if code != 1 || !strings.Contains(errOut, addr) || !strings.Contains(errOut, "refused") {
		t.Errorf("exit %d, stderr %q: want exit 1 with the address and the reason", code, errOut)
	}
	if strings.Contains(errOut, "s3cret") {
		t.Errorf("the password reached the output: %q", errOut)
	}
}

// askUntilUp sends a request to a server that may still be starting, again
// every 20 ms until it answers, and fails the test, with the server's log,
// if it never does.
func askUntilUp(t *testing.T, method, url, header, value, body string, log fmt.Stringer) *http.Response {
	t.Helper()
	var lastErr error
	for range 100 {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if header != "" {
			req.Header.Set(header, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			return resp
		}
		lastErr = err
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s %s: no answer (%v)\n%s", method, url, lastErr, log)
	return nil
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestAdminThenServe drives the admin commands a new operator would use,
// then the real server, in-process, until it shuts down gracefully.
func TestAdminThenServe(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside", "--tz", "America/New_York")
	mustRun(t, "plan", "set", "--db", db, "--group", "north", "--start", "2025-01-01")
	out := mustRun(t, "key", "create", "--db", db, "--group", "north", "--label", "reports")
	key := regexp.MustCompile(`gak_[A-Z0-9]+`).FindString(out)
	if key == "" {
		t.Fatalf("no key in %q", out)
	}
	if list := mustRun(t, "key", "list", "--db", db, "--group", "north"); strings.Contains(list, key) || !strings.Contains(list, key[:8]+"…") {
		t.Errorf("key list must show the prefix only:\n%s", list)
	}
	mustRun(t, "student", "add", "--db", db, "--group", "north", "--id", "s2", "--name", "Bea")
	events := `{"id":"e1","groupId":"north","studentId":"s1","studentName":"Ada","occurredAt":"2025-03-01T10:00:00Z","kind":"live_lecture.session_created"}`
	if code, _, errOut := run(t, events, "import", "--db", db, "-"); code != 0 {
		t.Fatal(errOut)
	}
	mustRun(t, "student", "rename", "--db", db, "--group", "north", "--id", "s1", "--name", "Ada L.")
	if out := mustRun(t, "rebuild", "--db", db); !strings.HasPrefix(out, "rebuilt the rollups of 1 group") {
		t.Errorf("rebuild: %q", out)
	}

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var stderr bytes.Buffer
	go func() { done <- Main(ctx, []string{"serve", "--db", db, "--addr", addr}, nil, io.Discard, &stderr) }()
	resp := askUntilUp(t, "POST", "http://"+addr+"/api/groups/live-lecture?students=true&startDate=2025-03-01&endDate=2025-03-01",
		"x-api-key", key, "", &stderr)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"success":true,"reports":[` +
		`{"startDate":"2025-03-01T05:00:00.000Z","endDate":"2025-03-02T04:59:59.999Z","studentName":"Ada L.","studentId":"s1","data":[{"title":"Sessions Made","value":1},{"title":"Chat Messages","value":0}]},` +
		`{"startDate":"2025-03-01T05:00:00.000Z","endDate":"2025-03-02T04:59:59.999Z","studentName":"Bea","studentId":"s2","data":[{"title":"Sessions Made","value":0},{"title":"Chat Messages","value":0}]}]}` + "\n"
	if string(body) != want {
		t.Errorf("got  %s\nwant %s", body, want)
	}
	listed := strings.Fields(mustRun(t, "key", "list", "--db", db, "--group", "north"))
	keyID := listed[slices.IndexFunc(listed, func(f string) bool { return strings.HasPrefix(f, "key_") })]
	mustRun(t, "key", "revoke", "--db", db, "--group", "north", "--key", keyID)
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/groups/chat", nil)
	req.Header.Set("x-api-key", key)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("revoked key: %v %v", resp.StatusCode, err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not shut down")
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("log line is not JSON: %s", line)
		}
	}
	if strings.Contains(stderr.String(), key) || !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("log:\n%s", stderr.String())
	}
	if n := strings.Count(stderr.String(), `"msg":"weekly digests off: no --smtp-url"`); n != 1 {
		t.Errorf("serve without --smtp-url said %d times that digests are off:\n%s", n, stderr.String())
	}
}

// TestStaffCommands: staff add, list and remove, of a school and of a
// district, and the command's own refusals.
func TestStaffCommands(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside")
	mustRun(t, "class", "create", "--db", db, "--group", "north", "--id", "bio", "--name", "Biology")
	mustRun(t, "district", "create", "--db", db, "--id", "river", "--name", "River District")
	out := mustRun(t, "staff", "add", "--db", db, "--group", "north", "--email", "Ortiz@North.Example", "--name", "Ms Ortiz", "--role", "teacher", "--class", "bio")
	if !regexp.MustCompile(`^added Ms Ortiz \(ortiz@north\.example\) to the staff of group north as teacher of bio: stf_\w+\n$`).MatchString(out) {
		t.Errorf("staff add: %q", out)
	}
	if out := mustRun(t, "staff", "add", "--db", db, "--district", "river", "--email", "data@river.example", "--role", "district-admin"); !strings.HasPrefix(out, "added data@river.example (data@river.example) to the staff of district river as district-admin: stf_") {
		t.Errorf("staff add --district: %q", out)
	}
	if code, _, errOut := run(t, "", "staff", "add", "--db", db, "--group", "north", "--email", "x@north.example", "--role", "teacher"); code != 1 || !strings.Contains(errOut, "Invalid classIds: a teacher needs at least one class") {
		t.Errorf("a teacher without classes: exit %d, %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "staff", "list", "--db", db); code != 1 || !strings.Contains(errOut, "staff list takes --group ID (a school's staff) or --district ID (a district's), one of them") {
		t.Errorf("staff list without an owner: exit %d, %s", code, errOut)
	}
	list := mustRun(t, "staff", "list", "--db", db, "--group", "north")
	m := regexp.MustCompile(`^ID +EMAIL +NAME +ROLE +CLASSES\n(stf_\w+) +ortiz@north\.example +Ms Ortiz +teacher +bio\n$`).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("staff list:\n%s", list)
	}
	if out := mustRun(t, "staff", "remove", "--db", db, "--staff", m[1]); out != "removed staff member "+m[1]+"\n" {
		t.Errorf("staff remove: %q", out)
	}
	if list := mustRun(t, "staff", "list", "--db", db, "--group", "north"); strings.Count(list, "\n") != 1 {
		t.Errorf("staff list after remove:\n%s", list)
	}
}

// TestProviderCommands: provider add (its secret from a file or standard
// input, never printed), list and remove.
func TestProviderCommands(t *testing.T) {
	db := newStore(t)
	mustRun(t, "district", "create", "--db", db, "--id", "river", "--name", "River District")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "provider", "add", "--db", db, "--district", "river", "--id", "river-google", "--name", "Google",
		"--issuer", "https://accounts.google.com", "--client-id", "abc", "--client-secret-file", secret, "--domain", "River.Example", "--skip-discovery")
	if out != "added sign-in provider river-google (https://accounts.google.com) for district river: emails of river.example\n" {
		t.Errorf("provider add: %q", out)
	}
	if code, out, _ := run(t, "other-secret\n", "provider", "add", "--db", db, "--district", "river", "--id", "river-ms", "--issuer", "https://login.microsoftonline.com/tenant/v2.0",
		"--client-id", "def", "--client-secret-file", "-", "--domain", "river.example", "--skip-discovery"); code != 0 || strings.Contains(out, "other-secret") {
		t.Errorf("provider add, its secret from standard input: exit %d, %q", code, out)
	}
	if code, _, errOut := run(t, "", "provider", "add", "--db", db, "--district", "river", "--id", "p", "--issuer", "https://idp.example",
		"--client-id", "a", "--client-secret-file", secret, "--skip-discovery"); code != 1 || !strings.Contains(errOut, "Missing emailDomains") {
		t.Errorf("provider add without a domain: exit %d, %s", code, errOut)
	}
	list := mustRun(t, "provider", "list", "--db", db, "--district", "river")
	if !regexp.MustCompile(`^ID +NAME +ISSUER +CLIENT +DOMAINS\nriver-google +Google +https://accounts\.google\.com +abc +river\.example\nriver-ms +river-ms +\S+ +def +river\.example\n$`).MatchString(list) ||
		strings.Contains(list, "secret") {
		t.Errorf("provider list:\n%s", list)
	}
	if out := mustRun(t, "provider", "remove", "--db", db, "--provider", "river-ms"); out != "removed sign-in provider river-ms\n" {
		t.Errorf("provider remove: %q", out)
	}

	// Without --skip-discovery, the issuer is checked against its
	// discovery document: one that differs from the document's by a
	// trailing slash is refused, naming the document's; one that cannot
	// be reached is refused, saying how to go on.
	op := oidctest.Start(t, nil, "ga-cli", "http://127.0.0.1:1/oidc/callback")
	add := func(id, issuer string) (int, string) {
		code, _, errOut := run(t, "", "provider", "add", "--db", db, "--district", "river", "--id", id, "--issuer", issuer,
			"--client-id", "ga-cli", "--client-secret-file", secret, "--domain", "river.example")
		return code, errOut
	}
	if code, errOut := add("river-slash", op.Issuer+"/"); code != 1 || !strings.Contains(errOut, `its discovery document says the issuer is "`+op.Issuer+`"`) {
		t.Errorf("an issuer with a trailing slash: exit %d, %s", code, errOut)
	}
	if code, errOut := add("river-away", "http://127.0.0.1:1"); code != 1 || !strings.Contains(errOut, "could not be reached") || !strings.Contains(errOut, "skip this check") {
		t.Errorf("an issuer not reachable: exit %d, %s", code, errOut)
	}
	if code, errOut := add("river-exact", op.Issuer); code != 0 {
		t.Errorf("the document's issuer: exit %d, %s", code, errOut)
	}
}

// TestDistrictDigestCommands: a district's recipients added, listed and
// removed with --district, and its digest sent to try it.
func TestDistrictDigestCommands(t *testing.T) {
	db := newStore(t)
	mail := mailtest.Start(t, mailtest.Options{})
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside")
	mustRun(t, "plan", "set", "--db", db, "--group", "north", "--start", "2025-01-01")
	mustRun(t, "district", "create", "--db", db, "--id", "river", "--name", "River District")
	mustRun(t, "district", "attach", "--db", db, "--district", "river", "--group", "north")
	if out := mustRun(t, "recipient", "add", "--db", db, "--district", "river", "--address", "data@river.example"); out != "data@river.example will receive the weekly digest of district river\n" {
		t.Errorf("recipient add --district: %q", out)
	}
	for _, args := range [][]string{
		{"recipient", "add", "--address", "a@river.example"},
		{"recipient", "add", "--group", "north", "--district", "river", "--address", "a@river.example"},
		{"recipient", "list"},
		{"digest", "send", "--to", "a@river.example"},
	} {
		if code, _, errOut := run(t, "", append(args, "--db", db)...); code != 1 || !strings.Contains(errOut, "takes --group ID (a school's digest) or --district ID (a district's), one of them") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if code, _, errOut := run(t, "", "recipient", "add", "--db", db, "--district", "river", "--address", "b@river.example", "--class", "bio"); code != 1 || !strings.Contains(errOut, "takes no --class") {
		t.Errorf("recipient add --district --class: exit %d, %s", code, errOut)
	}
	if list := mustRun(t, "recipient", "list", "--db", db, "--district", "river"); !regexp.MustCompile(`^ADDRESS +ADDED +CLASS\ndata@river\.example +\S+ +-\n$`).MatchString(list) {
		t.Errorf("recipient list --district:\n%s", list)
	}
	out := mustRun(t, "digest", "send", "--db", db, "--district", "river", "--to", "data@river.example", "--week", "2026-W46",
		"--smtp-url", mail.URL(), "--public-url", "https://analytics.example")
	if out != "sent the digest of district river for 2026-W46 to data@river.example\n" {
		t.Errorf("digest send --district: %q", out)
	}
	m, err := mailtest.Parse(mail.WaitFor(t, 1, 10*time.Second)[0].Data)
	if err != nil || !strings.Contains(m.Parts["text/plain"], "Weekly digest of River District, 9–15 November 2026 (UTC)") ||
		!strings.Contains(m.Parts["text/plain"], "Northside") || !strings.HasPrefix(m.Header.Get("List-Unsubscribe"), "<https://analytics.example/unsubscribe?token=gau_") {
		t.Errorf("the district's trial digest (%v):\n%s", err, m.Parts["text/plain"])
	}
	if out := mustRun(t, "recipient", "remove", "--db", db, "--district", "river", "--address", "data@river.example"); out != "data@river.example will no longer receive the weekly digest of district river\n" {
		t.Errorf("recipient remove --district: %q", out)
	}
}

// TestDigestCommands: recipient add, list and remove; digest send to try
// a digest; and serve sending the week's digest to a recipient, once,
// through a real SMTP server that wants credentials.
func TestDigestCommands(t *testing.T) {
	db := newStore(t)
	mail := mailtest.Start(t, mailtest.Options{User: "ops", Pass: "pa55word"})
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside")
	mustRun(t, "plan", "set", "--db", db, "--group", "north", "--start", "2025-01-01")
	if out := mustRun(t, "recipient", "add", "--db", db, "--group", "north", "--address", "Head@North.Example"); out != "Head@north.example will receive the weekly digest of group north\n" {
		t.Errorf("recipient add: %q", out)
	}
	if code, _, errOut := run(t, "", "recipient", "add", "--db", db, "--group", "north", "--address", "Head@north.example"); code != 1 ||
		!strings.Contains(errOut, `Head@north.example already receives the digest of group "north"`) {
		t.Errorf("a recipient added twice: exit %d, %s", code, errOut)
	}
	mustRun(t, "recipient", "add", "--db", db, "--group", "north", "--address", "staff@north.example")
	mustRun(t, "recipient", "remove", "--db", db, "--group", "north", "--address", "staff@north.example")
	mustRun(t, "class", "create", "--db", db, "--group", "north", "--id", "bio", "--name", "Biology")
	if out := mustRun(t, "recipient", "add", "--db", db, "--group", "north", "--address", "ortiz@north.example", "--class", "bio"); out != "ortiz@north.example will receive the weekly digest of class bio of group north\n" {
		t.Errorf("recipient add --class: %q", out)
	}
	if list := mustRun(t, "recipient", "list", "--db", db, "--group", "north"); !regexp.MustCompile(`^ADDRESS +ADDED +CLASS\nHead@north\.example +\d{4}-\S+ +-\nortiz@north\.example +\S+ +bio\n$`).MatchString(list) || strings.Contains(list, "staff") {
		t.Errorf("recipient list:\n%s", list)
	}
	mustRun(t, "recipient", "remove", "--db", db, "--group", "north", "--address", "ortiz@north.example")

	public := []string{"--smtp-url", mail.URL(), "--public-url", "https://analytics.example"}
	if code, _, errOut := run(t, "", "digest", "send", "--db", db, "--group", "north", "--to", "x@north.example"); code != 1 || !strings.Contains(errOut, "needs --smtp-url") {
		t.Errorf("digest send without SMTP: exit %d, %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "digest", "send", "--db", db, "--group", "north", "--to", "x@north.example", "--smtp-url", mail.URL()); code != 1 || !strings.Contains(errOut, "--smtp-url needs --public-url") {
		t.Errorf("digest send without a public URL: exit %d, %s", code, errOut)
	}
	out := mustRun(t, append([]string{"digest", "send", "--db", db, "--group", "north", "--to", "trial@north.example", "--week", "2026-W46"}, public...)...)
	if out != "sent the digest of group north for 2026-W46 to trial@north.example\n" {
		t.Errorf("digest send: %q", out)
	}
	trial := mail.WaitFor(t, 1, 10*time.Second)[0]
	m, err := mailtest.Parse(trial.Data)
	if err != nil || trial.From != "digest@analytics.example" || m.Header.Get("List-Unsubscribe") != "" ||
		!strings.Contains(m.Parts["text/plain"], "https://analytics.example/?endDate=2026-11-15&interval=day&startDate=2026-11-09") {
		t.Errorf("the trial digest (%v) from %s:\n%s", err, trial.From, trial.Data)
	}

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var stderr syncWriter
	go func() {
		done <- Main(ctx, append([]string{"serve", "--db", db, "--addr", addr, "--digest-interval", "50ms"}, public...), nil, io.Discard, &stderr)
	}()
	msgs := mail.WaitFor(t, 2, 20*time.Second)
	time.Sleep(300 * time.Millisecond) // six more rounds
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d:\n%s", code, stderr.String())
	}
	if n := len(mail.Messages()); n != 2 || msgs[1].To[0] != "Head@north.example" {
		t.Errorf("%d messages, the second to %v; want one digest to the recipient", n, msgs[1].To)
	}
	logs := stderr.String()
	if !strings.Contains(logs, `"msg":"weekly digests on","smtp":"`+mail.Addr+`"`) || !strings.Contains(logs, `"msg":"digest sent"`) || strings.Contains(logs, "pa55word") {
		t.Errorf("log:\n%s", logs)
	}
}

// TestVersion: the version command names the build and its Go release.
func TestVersion(t *testing.T) {
	out := mustRun(t, "version")
	if !strings.HasPrefix(out, "groupanalytics ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("version: %q", out)
	}
}

// syncWriter is a buffer that a server goroutine writes while the test reads.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}
func (w *syncWriter) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.buf.String() }

// The demo's events end the day before the day it is given (the day it
// starts, in each group's zone, or the day after --until), so that its
// numbers are the same whenever in that day it starts; none is on or
// after that day.
func TestDemoEventsDependOnTheDayNotTheTime(t *testing.T) {
	for _, dg := range demoGroups {
		loc, _ := analytics.LoadZone(dg.zone)
		stop := analytics.DateDay(2026, 11, 20)
		early, _ := demoEvents(rand.New(rand.NewPCG(1, 2)), dg, stop)
		late, _ := demoEvents(rand.New(rand.NewPCG(1, 2)), dg, stop)
		if !reflect.DeepEqual(early, late) {
			t.Errorf("%s: %d events, then %d", dg.id, len(early), len(late))
		}
		start := stop.Start(loc)
		for _, raw := range early {
			var e platform.EventInput
			json.Unmarshal(raw, &e)
			if at, err := time.Parse(time.RFC3339, e.OccurredAt); err != nil || !at.Before(start) {
				t.Fatalf("%s: event %s at %s (%v), want it before the day the demo starts", dg.id, e.ID, e.OccurredAt, err)
			}
		}
	}
}

// migrate says what it did: the migrations it applied to a new store, and
// that a second run had nothing to do.
func TestMigrateSaysWhatItDid(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	code, out, errOut := run(t, "", "migrate", "--db", db)
	if code != 0 || !regexp.MustCompile(`^migrated the store: \d+ migrations applied\n$`).MatchString(out) || !strings.Contains(errOut, "msg=migrated") {
		t.Errorf("migrate of a new store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out := mustRun(t, "migrate", "--db", db); out != "the store already had the newest schema: nothing to migrate\n" {
		t.Errorf("migrate again: %q", out)
	}
}

// TestGroupRenameAndDelete: group rename, and group delete, which wants
// --yes and leaves nothing of the group: its id names a new group after.
func TestGroupRenameAndDelete(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside")
	mustRun(t, "plan", "set", "--db", db, "--group", "north", "--start", "2025-01-01")
	mustRun(t, "recipient", "add", "--db", db, "--group", "north", "--address", "head@north.example")
	events := `{"id":"e1","groupId":"north","studentId":"s1","studentName":"Ada","occurredAt":"2025-03-01T10:00:00Z","kind":"live_lecture.session_created"}`
	if code, _, errOut := run(t, events, "import", "--db", db, "-"); code != 0 {
		t.Fatal(errOut)
	}
	if out := mustRun(t, "group", "rename", "--db", db, "--group", "north", "--name", "Northside High"); out != "renamed group north: Northside High\n" {
		t.Errorf("group rename: %q", out)
	}
	if list := mustRun(t, "group", "list", "--db", db); !strings.Contains(list, "Northside High") {
		t.Errorf("group list after the rename:\n%s", list)
	}
	if code, _, errOut := run(t, "", "group", "delete", "--db", db, "--group", "north"); code != 1 || !strings.Contains(errOut, "group delete erases group north and all its usage for good: add --yes") {
		t.Errorf("group delete without --yes: exit %d, %s", code, errOut)
	}
	if out := mustRun(t, "group", "delete", "--db", db, "--group", "north", "--yes"); !strings.HasPrefix(out, "deleted group north") {
		t.Errorf("group delete: %q", out)
	}
	if left := storetest.GroupRows(t, db, "", "north"); len(left) > 0 {
		t.Errorf("rows left: %v", left)
	}
	if code, _, errOut := run(t, "", "group", "delete", "--db", db, "--group", "north", "--yes"); code != 1 || !strings.Contains(errOut, `Group "north" not found`) {
		t.Errorf("group delete again: exit %d, %s", code, errOut)
	}
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	if list := mustRun(t, "student", "list", "--db", db, "--group", "north"); strings.Contains(list, "Ada") {
		t.Errorf("the new north has the old one's students:\n%s", list)
	}
}

// TestGroupSetTimeZone: a new zone moves an event near midnight to the
// day it falls on there.
func TestGroupSetTimeZone(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	events := `{"id":"e1","groupId":"north","studentId":"s1","occurredAt":"2025-03-01T23:30:00Z","kind":"live_lecture.session_created"}`
	if code, _, errOut := run(t, events, "import", "--db", db, "-"); code != 0 {
		t.Fatal(errOut)
	}
	if out := mustRun(t, "group", "set-timezone", "--db", db, "--group", "north", "--tz", "Asia/Tokyo"); out != "group north is on Asia/Tokyo: its rollups were rebuilt in it\n" {
		t.Errorf("group set-timezone: %q", out)
	}
	if code, _, errOut := run(t, "", "group", "set-timezone", "--db", db, "--group", "north", "--tz", "Mars/Olympus"); code != 1 || !strings.Contains(errOut, `Invalid timeZone "Mars/Olympus"`) {
		t.Errorf("an unknown zone: exit %d, %s", code, errOut)
	}
	s := storetest.OpenDSN(t, db)
	g, err := s.Group(context.Background(), "north")
	if err != nil || g.TimeZone != "Asia/Tokyo" {
		t.Fatalf("north: %+v, %v", g, err)
	}
	rollups, err := s.GroupRollups(context.Background(), "north", analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: analytics.DateDay(2025, 3, 1), Last: analytics.DateDay(2025, 3, 2)}})
	if err != nil || len(rollups) != 1 || rollups[0].Key != analytics.DateDay(2025, 3, 2) {
		t.Errorf("the day rollups: %+v, %v; want one, of 2 March (Tokyo)", rollups, err)
	}
}

// TestRetention: a group's retention set, listed and refused out of
// range; a run deletes the older days' usage once, and its receipt is
// listed.
func TestRetention(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	old := time.Now().UTC().AddDate(0, 0, -50).Format(time.RFC3339)
	events := fmt.Sprintf(`{"id":"e1","groupId":"north","studentId":"s1","occurredAt":%q,"kind":"live_lecture.session_created"}
{"id":"e2","groupId":"north","studentId":"s1","occurredAt":%q,"kind":"live_lecture.session_created"}
`, old, time.Now().UTC().Add(-time.Hour).Format(time.RFC3339))
	if code, _, errOut := run(t, events, "import", "--db", db, "-"); code != 0 {
		t.Fatal(errOut)
	}
	if out := mustRun(t, "group", "set-retention", "--db", db, "--group", "north", "--keep", "40d"); out != "group north keeps 40d of usage: the next retention run deletes the usage of older days\n" {
		t.Errorf("set-retention 40d: %q", out)
	}
	if out := mustRun(t, "group", "list", "--db", db); !regexp.MustCompile(`(?m)^north .* off +40d$`).MatchString(out) {
		t.Errorf("group list:\n%s", out)
	}
	first := time.Now().UTC().AddDate(0, 0, -39).Format(time.DateOnly)
	if out := mustRun(t, "retention", "run", "--db", db); !strings.HasPrefix(out, "group north: deleted the usage before "+first+" (sqlite events 1, ") {
		t.Errorf("retention run: %q", out)
	}
	if out := mustRun(t, "retention", "run", "--db", db); out != "nothing to delete: every group's usage is within its retention\n" {
		t.Errorf("retention run again: %q", out)
	}
	if out := mustRun(t, "receipt", "list", "--db", db); !strings.Contains(out, "usage expired before "+first) || !strings.Contains(out, "retention 40d") {
		t.Errorf("receipt list:\n%s", out)
	}
	for _, keep := range []string{"20d", "1y", "40"} {
		if code, _, errOut := run(t, "", "group", "set-retention", "--db", db, "--group", "north", "--keep", keep); code != 1 || !strings.Contains(errOut, "Invalid retention") {
			t.Errorf("--keep %s: exit %d, %s", keep, code, errOut)
		}
	}
	if out := mustRun(t, "group", "set-retention", "--db", db, "--group", "north", "--keep", "off"); out != "group north keeps all its usage\n" {
		t.Errorf("set-retention off: %q", out)
	}
}

// TestGroupSetInactiveAfter: set, and refused out of range or for a
// group that does not exist.
func TestGroupSetInactiveAfter(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	if out := mustRun(t, "group", "set-inactive-after", "--db", db, "--group", "north", "--days", "14"); out != "group north counts a student as stopped after 14 days without use\n" {
		t.Errorf("set-inactive-after 14: %q", out)
	}
	for _, days := range []string{"0", "367", "x"} {
		if code, _, errOut := run(t, "", "group", "set-inactive-after", "--db", db, "--group", "north", "--days", days); code == 0 ||
			days != "x" && !strings.Contains(errOut, "Invalid inactiveAfter") {
			t.Errorf("--days %s: exit %d, %s", days, code, errOut)
		}
	}
	if code, _, errOut := run(t, "", "group", "set-inactive-after", "--db", db, "--group", "south", "--days", "3"); code != 1 || !strings.Contains(errOut, `"south"`) {
		t.Errorf("an unknown group: exit %d, %s", code, errOut)
	}
}

// TestGroupSetMinCellSize: set, listed, turned off, and refused out of
// range.
func TestGroupSetMinCellSize(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	if out := mustRun(t, "group", "set-min-cell-size", "--db", db, "--group", "north", "--size", "10"); out != "group north hides figures of fewer than 10 students\n" {
		t.Errorf("set-min-cell-size 10: %q", out)
	}
	if out := mustRun(t, "group", "list", "--db", db); !regexp.MustCompile(`(?m)^north .* 10 +off$`).MatchString(out) {
		t.Errorf("group list:\n%s", out)
	}
	if out := mustRun(t, "group", "set-min-cell-size", "--db", db, "--group", "north", "--size", "0"); out != "group north shows every figure\n" {
		t.Errorf("set-min-cell-size 0: %q", out)
	}
	if out := mustRun(t, "group", "list", "--db", db); !regexp.MustCompile(`(?m)^north .* off +off$`).MatchString(out) {
		t.Errorf("group list:\n%s", out)
	}
	for _, size := range []string{"1", "101"} {
		if code, _, errOut := run(t, "", "group", "set-min-cell-size", "--db", db, "--group", "north", "--size", size); code != 1 || !strings.Contains(errOut, "Invalid minCellSize "+size+": expected 0 (off) or 2 to 100") {
			t.Errorf("--size %s: exit %d, %s", size, code, errOut)
		}
	}
	if code, _, _ := run(t, "", "group", "set-min-cell-size", "--db", db, "--group", "north"); code != 2 {
		t.Errorf("without --size: exit %d, want 2", code)
	}
}

// TestAccessLogCommand: access-log lists a group's entries (none yet: the
// header alone), and refuses an unknown group or a bad day.
func TestAccessLogCommand(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside")
	if out := mustRun(t, "access-log", "--db", db, "--group", "north"); !regexp.MustCompile(`^AT +KEY +CLIENT +ENDPOINT +DAYS +INTERVAL +STUDENTS\n$`).MatchString(out) {
		t.Errorf("access-log of a group nobody asked about: %q", out)
	}
	for _, args := range [][]string{{"--group", "nowhere"}, {"--group", "north", "--since", "yesterday"}} {
		if code, _, _ := run(t, "", append([]string{"access-log", "--db", db}, args...)...); code == 0 {
			t.Errorf("access-log %v: exit 0, want a failure", args)
		}
	}
}

// TestServeWithoutAccessLog: serve --access-log=false answers student
// reports without recording them, and says so when it starts; the
// environment cannot turn the log off.
func TestServeWithoutAccessLog(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside")
	mustRun(t, "plan", "set", "--db", db, "--group", "north", "--start", "2025-01-01")
	key := regexp.MustCompile(`gak_[A-Z0-9]+`).FindString(mustRun(t, "key", "create", "--db", db, "--group", "north", "--label", "reports"))
	mustRun(t, "student", "add", "--db", db, "--group", "north", "--id", "s1", "--name", "Ada")
	t.Setenv("GROUPANALYTICS_ACCESS_LOG", "false")
	for _, c := range []struct {
		args    []string
		entries int
	}{{[]string{"--access-log=false"}, 0}, {nil, 1}} {
		addr := freeAddr(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int)
		var stderr bytes.Buffer
		go func() {
			done <- Main(ctx, append([]string{"serve", "--db", db, "--addr", addr}, c.args...), nil, io.Discard, &stderr)
		}()
		resp := askUntilUp(t, "POST", "http://"+addr+"/api/groups/chat?students=true&startDate=2025-03-01&endDate=2025-03-01",
			"x-api-key", key, "", &stderr)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("serve %v: no student report:\n%s", c.args, stderr.String())
		}
		resp.Body.Close()
		cancel()
		<-done
		lines := strings.Split(strings.TrimSpace(mustRun(t, "access-log", "--db", db, "--group", "north")), "\n")
		if len(lines) != 1+c.entries {
			t.Errorf("serve %v: %d access log entries, want %d", c.args, len(lines)-1, c.entries)
		}
		if warned := strings.Contains(stderr.String(), `"msg":"access log off: answers that carry student-level data are not recorded"`); warned != (c.entries == 0) {
			t.Errorf("serve %v: warned %v that the access log is off:\n%s", c.args, warned, stderr.String())
		}
	}
}

// TestStudentExportCommand: student export writes a new zip of the
// student's data, and never over a file that exists.
func TestStudentExportCommand(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside")
	if code, _, errOut := run(t, `{"id":"e1","groupId":"north","studentId":"s1","studentName":"Ada","occurredAt":"2026-01-05T10:00:00Z","kind":"chat.message_sent","chatType":"main"}`+"\n",
		"import", "--db", db); code != 0 {
		t.Fatal(errOut)
	}
	to := filepath.Join(t.TempDir(), "ada.zip")
	if out := mustRun(t, "student", "export", "--db", db, "--group", "north", "--id", "s1", "--to", to); out != "wrote "+to+": student s1 of group north, 1 event, 0 access records\n" {
		t.Errorf("student export: %q", out)
	}
	z, err := zip.OpenReader(to)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
	}
	z.Close()
	if fmt.Sprint(names) != "[student.json events.jsonl events.csv access-log.jsonl access-log.csv]" {
		t.Errorf("the zip holds %v", names)
	}
	if code, _, _ := run(t, "", "student", "export", "--db", db, "--group", "north", "--id", "s1", "--to", to); code == 0 {
		t.Error("student export over a file that exists: exit 0, want a failure")
	}
	if code, _, _ := run(t, "", "student", "export", "--db", db, "--group", "north", "--id", "nobody", "--to", to+"2"); code == 0 {
		t.Error("student export of an unknown student: exit 0, want a failure")
	}
}

// TestReceiptList: a student erased and a group deleted from the command
// line leave receipts that say so, listed by receipt list.
func TestReceiptList(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "Northside")
	mustRun(t, "student", "add", "--db", db, "--group", "north", "--id", "s1", "--name", "Ada")
	mustRun(t, "student", "delete", "--db", db, "--group", "north", "--id", "s1")
	mustRun(t, "group", "delete", "--db", db, "--group", "north", "--yes")
	out := mustRun(t, "receipt", "list", "--db", db)
	if !regexp.MustCompile(`^FINISHED +GROUP +ACTION +STUDENT +BY +DELETED\n`+
		`\S+ +north +group deleted +- +command line +.*sqlite groups 1\n`+
		`\S+ +north +student erased +s1 +command line +sqlite students 1\n$`).MatchString(out) || strings.Contains(out, "Ada") {
		t.Errorf("receipt list:\n%s", out)
	}
}

// TestHelp: every command's --help (and help COMMAND) prints its usage and
// flags on standard output and exits 0; a group of commands named alone,
// or with --help, lists its commands; the lists' columns are aligned.
func TestHelp(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{append(strings.Fields(c.name), "--help"), append([]string{"help"}, strings.Fields(c.name)...),
			append(strings.Fields(c.name), "-h")} {
			code, out, errOut := run(t, "", args...)
			if code != 0 || !strings.HasPrefix(out, strings.TrimSpace("usage: groupanalytics "+c.name+" "+c.args)+"\n") ||
				!strings.Contains(out, c.summary+".") || errOut != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 0 and the command's usage", args, code, out, errOut)
			}
			if strings.Contains(c.args, "--") && !strings.Contains(out, "\nFlags:\n") {
				t.Errorf("%v names no flags:\n%s", args, out)
			}
		}
	}
	// aligned checks that every command listed has its summary in one column.
	aligned := func(what, out string) {
		t.Helper()
		columns := map[int]bool{}
		for _, line := range strings.Split(out, "\n") {
			for _, c := range commands {
				if rest, ok := strings.CutPrefix(line, "  "+c.name+"  "); ok {
					columns[len(line)-len(strings.TrimLeft(rest, " "))] = true
				}
			}
		}
		if len(columns) != 1 {
			t.Errorf("%s: summaries start at columns %v:\n%s", what, slices.Collect(maps.Keys(columns)), out)
		}
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		code, out, _ := run(t, "", args...)
		if code != 0 || !strings.HasPrefix(out, "usage: groupanalytics COMMAND [FLAGS]\n") {
			t.Errorf("%v: exit %d, %q; want exit 0 and the usage", args, code, out)
		}
		aligned(args[0], out)
	}
	for _, args := range [][]string{{"group"}, {"group", "--help"}, {"key"}, {"help", "group"}} {
		code, out, errOut := run(t, "", args...)
		want := map[bool]int{true: 2, false: 0}[len(args) == 1]
		group := args[0]
		if group == "help" {
			group = args[1]
		}
		if code != want || !strings.HasPrefix(out, "usage: groupanalytics "+group+" COMMAND") || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and the group's commands", args, code, out, errOut, want)
			continue
		}
		for _, c := range commands {
			if listed := strings.Contains(out, "\n  "+c.name+" "); listed != strings.HasPrefix(c.name, group+" ") {
				t.Errorf("%v lists %s: %v", args, c.name, listed)
			}
		}
		aligned(strings.Join(args, " "), out)
	}
	if code, _, errOut := run(t, "", "group", "bogus"); code != 2 || !strings.Contains(errOut, `unknown command "group bogus"`) ||
		!strings.Contains(errOut, "group create") || strings.Contains(errOut, "key create") {
		t.Errorf("group bogus: exit %d, %q", code, errOut)
	}
}

// TestLTIPlatformCommands: a school's LMS registered by hand, listed, and
// removed; one without a deployment, or of plain http elsewhere than on
// loopback, refused, saying why.
func TestLTIPlatformCommands(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	add := []string{"lti", "platform", "add", "--db", db, "--group", "north", "--id", "north-canvas", "--name", "Canvas",
		"--issuer", "https://canvas.instructure.com", "--client-id", "10000000000042", "--auth-url", "https://sso.canvaslms.com/api/lti/authorize_redirect",
		"--token-url", "https://sso.canvaslms.com/login/oauth2/token", "--jwks-url", "https://sso.canvaslms.com/api/lti/security/jwks"}
	if code, _, errOut := run(t, "", add...); code != 1 || !strings.Contains(errOut, "Missing deploymentIds") {
		t.Errorf("a platform without a deployment: exit %d, %s", code, errOut)
	}
	if code, _, errOut := run(t, "", append(slices.Clone(add), "--deployment", "42:abc", "--auth-url", "http://lms.example/auth")...); code != 1 || !strings.Contains(errOut, "Invalid authUrl") {
		t.Errorf("a platform's endpoint of plain http: exit %d, %s", code, errOut)
	}
	if out := mustRun(t, append(add, "--deployment", "42:abc", "--deployment", "42:abc")...); out != "registered LTI platform north-canvas (https://canvas.instructure.com, client 10000000000042) for group north: deployments 42:abc\n" {
		t.Errorf("lti platform add: %q", out)
	}
	if out := mustRun(t, "lti", "platform", "list", "--db", db, "--group", "north"); !regexp.MustCompile(`^ID +NAME +ISSUER +CLIENT +DEPLOYMENTS\nnorth-canvas +Canvas +https://canvas\.instructure\.com +10000000000042 +42:abc\n$`).MatchString(out) {
		t.Errorf("lti platform list:\n%s", out)
	}
	if out := mustRun(t, "lti", "platform", "remove", "--db", db, "--platform", "north-canvas"); out != "removed LTI platform north-canvas: its launches' sessions have ended\n" {
		t.Errorf("lti platform remove: %q", out)
	}
	if out := mustRun(t, "lti", "platform", "register-url", "--db", db, "--group", "north", "--public-url", "https://analytics.example.org/"); !regexp.MustCompile(
		`^https://analytics\.example\.org/lti/register\?token=gar_[A-Z0-9]{26}\n\(for group north: paste it into the LMS where it asks for a tool's registration URL; usable once, until \d{4}-\d\d-\d\dT`).MatchString(out) {
		t.Errorf("lti platform register-url: %q", out)
	}
	if code, _, errOut := run(t, "", "lti", "platform", "register-url", "--db", db, "--group", "north"); code != 2 || !strings.Contains(errOut, "public-url") {
		t.Errorf("lti platform register-url without --public-url: exit %d, %s", code, errOut)
	}
}

// TestWarehouseCommands: warehouse add (a folder; a bucket that cannot
// be reached refused), list, show, backfill and remove.
func TestWarehouseCommands(t *testing.T) {
	db := newStore(t)
	mustRun(t, "district", "create", "--db", db, "--id", "river", "--name", "River District")
	out := mustRun(t, "warehouse", "add", "--db", db, "--district", "river", "--id", "river-files", "--folder", "river", "--format", "csv")
	if !regexp.MustCompile(`^added warehouse river-files for district river: csv files to folder:river, daily from \d{4}-\d\d-\d\d\n$`).MatchString(out) {
		t.Errorf("warehouse add: %q", out)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "", "warehouse", "add", "--db", db, "--district", "river", "--id", "river-lake", "--endpoint", "http://127.0.0.1:1",
		"--bucket", "data", "--access-key-id", "a", "--secret-access-key-file", secret)
	if code != 1 || !strings.Contains(errOut, `The bucket "data" refused a test write`) || strings.Contains(errOut, "s3cret") {
		t.Errorf("warehouse add, a bucket not reachable: exit %d, %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "warehouse", "add", "--db", db, "--id", "w", "--folder", "x"); code != 1 ||
		!strings.Contains(errOut, "warehouse add takes --group ID (a school's warehouse) or --district ID") {
		t.Errorf("warehouse add without an owner: exit %d, %s", code, errOut)
	}
	if list := mustRun(t, "warehouse", "list", "--db", db, "--district", "river"); !regexp.MustCompile(`^ID +FORMAT +DESTINATION +FROM\nriver-files +csv +folder:river +\S+\n$`).MatchString(list) {
		t.Errorf("warehouse list:\n%s", list)
	}
	mustRun(t, "group", "create", "--db", db, "--id", "north", "--name", "North")
	mustRun(t, "district", "attach", "--db", db, "--district", "river", "--group", "north")
	mustRun(t, "plan", "set", "--db", db, "--group", "north", "--start", "2024-01-01")
	if out := mustRun(t, "warehouse", "backfill", "--db", db, "--warehouse", "river-files", "--start", "2024-03-01", "--end", "2024-03-10"); out !=
		"queued 10 school days of warehouse river-files: serve delivers them in its next runs\n" {
		t.Errorf("warehouse backfill: %q", out)
	}
	if show := mustRun(t, "warehouse", "show", "--db", db, "--warehouse", "river-files"); !strings.Contains(show, "days queued: 10; last run: never\n") {
		t.Errorf("warehouse show:\n%s", show)
	}
	if out := mustRun(t, "warehouse", "remove", "--db", db, "--warehouse", "river-files"); out != "removed warehouse river-files (its files stay where they are)\n" {
		t.Errorf("warehouse remove: %q", out)
	}
}
