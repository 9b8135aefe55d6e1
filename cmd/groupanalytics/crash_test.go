package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"groupanalytics/internal/bench"
	"groupanalytics/internal/stores/storetest"
)

// commandTimeout bounds each command a test runs (an admin command, a
// move), so that one that hangs fails its test by name rather than
// running into go test's timeout with every other test.
const commandTimeout = 3 * time.Minute

// runCommand runs the command with args within commandTimeout and returns
// what it printed.
func runCommand(bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after %v: %w", commandTimeout, err)
	}
	return out, err
}

func runBinary(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := runCommand(bin, args...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return string(out)
}

// client is the tests' HTTP client: a request that hangs fails its test,
// once it is past the server's default store timeout (10 s), which bounds
// every answer. It keeps a connection open for each of a firehose's
// clients, as a platform would.
var client = &http.Client{Timeout: 15 * time.Second, Transport: keepAlive()}

func keepAlive() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return tr
}

// startServer starts serve on the stores that the flags name (--db and
// --usage), killed when the test ends.
func startServer(t *testing.T, bin string, stores []string) *bench.Server {
	t.Helper()
	s, err := bench.StartServer(bin, stores)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Cmd.Process.Kill(); s.Cmd.Wait() })
	return s
}

// setupGroup creates the group with a plan from 2025 on, a report key for
// it and a platform token, through the command line, and returns the key
// and the token.
func setupGroup(t *testing.T, bin string, stores []string, group string) (key, token string) {
	t.Helper()
	admin := func(args ...string) string { return runBinary(t, bin, append(args, stores...)...) }
	admin("migrate")
	admin("group", "create", "--id", group)
	admin("plan", "set", "--group", group, "--start", "2025-01-01")
	key = regexp.MustCompile(`gak_\w+`).FindString(admin("key", "create", "--group", group))
	token = regexp.MustCompile(`gat_\w+`).FindString(admin("token", "create"))
	return key, token
}

const batchSize = 500

// batchStudent is the student of batch b's events.
func batchStudent(b int) string { return fmt.Sprintf("b%03d", b) }

// batchBody is batch b: batchSize chat messages of student b, ids unique.
func batchBody(b int) []byte {
	var events []map[string]string
	for i := range batchSize {
		events = append(events, map[string]string{
			"id": fmt.Sprintf("b%03d-%03d", b, i), "groupId": "crash", "studentId": batchStudent(b),
			"occurredAt": "2026-01-05T10:00:00Z", "kind": "chat.message_sent", "chatType": "main",
		})
	}
	body, _ := json.Marshal(events)
	return body
}

func sendBatch(base, token string, b int) (accepted, duplicates int, err error) {
	return postEvents(base, token, batchBody(b))
}

// postEvents sends a batch of events and returns what the answer counts.
func postEvents(base, token string, body []byte) (accepted, duplicates int, err error) {
	req, _ := http.NewRequest("POST", base+"/v1/events", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("POST /v1/events: status %d", resp.StatusCode)
	}
	var res struct{ Accepted, Duplicates int }
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return 0, 0, err
	}
	return res.Accepted, res.Duplicates, nil
}

// studentReports asks the chat endpoint for student reports of the query
// and returns each student's metric values by title.
func studentReports(t *testing.T, base, key, query string) map[string]map[string]int64 {
	t.Helper()
	status, values, err := askStudentReports(base, key, query)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Fatalf("student reports: status %d", status)
	}
	return values
}

// askStudentReports is studentReports, which answered status.
func askStudentReports(base, key, query string) (status int, values map[string]map[string]int64, err error) {
	req, _ := http.NewRequest("POST", base+"/api/groups/chat?students=true&"+query, nil)
	req.Header.Set("x-api-key", key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, nil
	}
	var body struct {
		Reports []struct {
			StudentID string `json:"studentId"`
			Data      []struct {
				Title string `json:"title"`
				Value int64  `json:"value"`
			} `json:"data"`
		} `json:"reports"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return resp.StatusCode, nil, err
	}
	values = map[string]map[string]int64{}
	for _, r := range body.Reports {
		values[r.StudentID] = map[string]int64{}
		for _, m := range r.Data {
			values[r.StudentID][m.Title] = m.Value
		}
	}
	return resp.StatusCode, values, nil
}

// perBatchCounts reads how many messages each batch's student has.
func perBatchCounts(t *testing.T, base, key string) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	for student, values := range studentReports(t, base, key, "startDate=2026-01-05&endDate=2026-01-05") {
		counts[student] = values["Total Messages"]
	}
	return counts
}

// storeKinds are the stores the process tests run on: the flags of each,
// made for the test.
var storeKinds = map[string]func(t *testing.T) []string{
	"sqlite":   func(t *testing.T) []string { return []string{"--db", filepath.Join(t.TempDir(), "test.db")} },
	"postgres": func(t *testing.T) []string { return []string{"--db", storetest.NewPostgresDatabase(t)} },
	"clickhouse": func(t *testing.T) []string {
		return []string{"--db", storetest.NewPostgresDatabase(t), "--usage", storetest.NewClickHouseURL(t)}
	},
}

// streamUntilFault sends batch after batch, calls fault once twelve are
// acknowledged, and stops at the first batch that fails, or after 400. It
// returns the acknowledged batches and the one that failed, if one did,
// else -1.
func streamUntilFault(t *testing.T, base, token string, fault func()) (acked map[int]bool, failed int) {
	t.Helper()
	var count atomic.Int64
	faulted, streamEnded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(faulted)
		for count.Load() < 12 {
			select {
			case <-streamEnded: // a batch failed before the fault
				return
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(time.Duration(time.Now().UnixNano()%20) * time.Millisecond)
		fault()
	}()
	acked = map[int]bool{}
	failed = -1
	for b := 0; b < 400; b++ {
		accepted, _, err := sendBatch(base, token, b)
		if err != nil {
			failed = b
			if len(acked) < 12 {
				close(streamEnded)
				<-faulted
				t.Fatalf("batch %d failed before the fault: %v", b, err)
			}
			break
		}
		if accepted != batchSize {
			t.Fatalf("batch %d: accepted %d", b, accepted)
		}
		acked[b] = true
		count.Add(1)
	}
	<-faulted
	if failed >= 0 {
		t.Logf("the fault hit after %d acknowledged batches", len(acked))
	}
	return acked, failed
}

// checkEveryBatchOnce checks, after a fault and recovery, that every
// acknowledged batch counts exactly once and the batch in flight (if one
// failed: inFlight >= 0) all or not at all; then it re-sends that batch,
// as the client would, until it is acknowledged, and checks that it
// counts once too.
func checkEveryBatchOnce(t *testing.T, base, key, token string, acked map[int]bool, inFlight int) {
	t.Helper()
	counts := perBatchCounts(t, base, key)
	for b := range acked {
		if got := counts[batchStudent(b)]; got != batchSize {
			t.Errorf("acknowledged batch %d counts %d after the fault, want %d", b, got, batchSize)
		}
	}
	if inFlight < 0 {
		if len(counts) != len(acked) {
			t.Errorf("%d students counted, want the %d of the acknowledged batches", len(counts), len(acked))
		}
		return
	}
	if got := counts[batchStudent(inFlight)]; got != 0 && got != batchSize {
		t.Errorf("the batch in flight counts %d: a batch is all or nothing", got)
	}
	var accepted, duplicates int
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if accepted, duplicates, err = sendBatch(base, token, inFlight); err == nil {
			break
		}
	}
	if err != nil || accepted+duplicates != batchSize || (duplicates != 0 && duplicates != batchSize) {
		t.Fatalf("re-sent batch: accepted %d, duplicates %d, %v", accepted, duplicates, err)
	}
	t.Logf("re-sent batch %d: accepted %d, duplicates %d", inFlight, accepted, duplicates)
	counts = perBatchCounts(t, base, key)
	if _, enrolled := counts[batchStudent(inFlight)]; !enrolled {
		t.Errorf("the re-sent batch's student is not enrolled")
	}
	var total int64
	for id, n := range counts {
		if n != batchSize {
			t.Errorf("%s counts %d, want %d", id, n, batchSize)
		}
		total += n
	}
	if want := int64(len(acked)+1) * batchSize; total != want {
		t.Errorf("total %d, want %d", total, want)
	}
}

// TestCrashLosesNoAcknowledgedEvent kills the server with SIGKILL while a
// client streams batches, restarts it, and checks that every acknowledged
// batch counts exactly once and that re-sending the unacknowledged ones
// leaves no duplicates.
func TestCrashLosesNoAcknowledgedEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server process")
	}
	bin := buildBinary(t)
	for _, kind := range []string{"sqlite", "clickhouse"} {
		t.Run(kind, func(t *testing.T) {
			stores := storeKinds[kind](t)
			key, token := setupGroup(t, bin, stores, "crash")
			srv := startServer(t, bin, stores)
			acked, inFlight := streamUntilFault(t, srv.Base, token, func() { srv.Cmd.Process.Signal(syscall.SIGKILL) })
			if inFlight < 0 {
				t.Fatal("the fault never hit the stream")
			}
			srv.Cmd.Wait()
			srv = startServer(t, bin, stores)
			checkEveryBatchOnce(t, srv.Base, key, token, acked, inFlight)
		})
	}
}

// TestCrashKeepsEveryDisclosureRecorded kills the server with SIGKILL while
// clients ask for student reports, each of its own day, restarts it, and
// checks that every answer whose students' figures reached a client left
// its access log entry (docs/decisions.md, "The access log"): the entry
// is written (on SQLite to the journal beside the store, on PostgreSQL
// committed to access_pending) before the first figure goes out, so no
// crash of the service can leave a disclosure without its record. Answers
// cut short may have entries too (the log over-records, never
// under-records), but none that was not asked.
func TestCrashKeepsEveryDisclosureRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server process")
	}
	bin := buildBinary(t)
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			stores := storeKinds[kind](t)
			key, token := setupGroup(t, bin, stores, "crash")
			stores = append(stores, "--key-rate-limit", "off")
			srv := startServer(t, bin, stores)
			if _, _, err := sendBatch(srv.Base, token, 0); err != nil {
				t.Fatal(err)
			}
			first := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			day := func(i int) string { return first.AddDate(0, 0, i).Format(time.DateOnly) }

			const clients, perClient, killAfter = 4, 150, 40
			var next, disclosedCount atomic.Int64
			disclosed := make([]atomic.Bool, clients*perClient)
			killed := make(chan struct{})
			done := make(chan struct{}, clients)
			for range clients {
				go func() {
					defer func() { done <- struct{}{} }()
					for {
						i := int(next.Add(1)) - 1
						if i >= len(disclosed) {
							return
						}
						got, err := askDisclosure(srv.Base, key, day(i))
						if got {
							disclosed[i].Store(true)
							if disclosedCount.Add(1) == killAfter {
								srv.Cmd.Process.Signal(syscall.SIGKILL)
								close(killed)
							}
						}
						if err != nil {
							return
						}
					}
				}()
			}
			select {
			case <-killed:
			case <-time.After(time.Minute):
				t.Fatal("the clients never saw enough answers")
			}
			for range clients {
				<-done
			}
			srv.Cmd.Wait()
			asked := int(min(next.Load(), int64(len(disclosed))))

			srv = startServer(t, bin, stores)
			logged := accessEntries(t, srv.Base, key)
			entries := map[string]int{} // by day
			for _, e := range logged {
				entries[e]++
			}
			for i := range disclosed {
				switch n := entries[day(i)]; {
				case disclosed[i].Load() && n != 1:
					t.Errorf("the answer of %s reached its client, and has %d entries", day(i), n)
				case i >= asked && n != 0:
					t.Errorf("%s was never asked, and has %d entries", day(i), n)
				}
			}
			t.Logf("%d answers asked, %d reached their clients, %d entries after the crash", asked, disclosedCount.Load(), len(logged))
		})
	}
}

// askDisclosure asks for the student reports of one day and tells whether
// any student's figures came back, the answer whole or not.
func askDisclosure(base, key, day string) (disclosed bool, err error) {
	req, _ := http.NewRequest("POST", base+"/api/groups/chat?students=true&startDate="+day+"&endDate="+day, nil)
	req.Header.Set("x-api-key", key)
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return bytes.Contains(body, []byte(`"studentId"`)), err
}

// accessEntries reads the whole access log of the key's group and returns
// each entry's first day.
func accessEntries(t *testing.T, base, key string) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/access-log?limit=1000", nil)
	req.Header.Set("x-api-key", key)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Entries []struct {
			StartDate string `json:"startDate"`
		} `json:"entries"`
		Next *string `json:"next"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/access-log: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	if page.Next != nil {
		t.Fatal("the log holds more entries than the clients asked for")
	}
	days := make([]string, len(page.Entries))
	for i, e := range page.Entries {
		days[i] = e.StartDate
	}
	return days
}
