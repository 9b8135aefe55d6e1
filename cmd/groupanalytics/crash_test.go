package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds the command into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "groupanalytics")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runBinary(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return string(out)
}

// server is a groupanalytics serve process.
type server struct {
	cmd  *exec.Cmd
	base string
}

func startServer(t *testing.T, bin, db string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--db", db, "--addr", addr, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, base: "http://" + addr}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 200 {
		if resp, err := http.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
			return s
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("server did not start")
	return nil
}

const batchSize = 500

// batchBody is batch b: batchSize chat messages of student b, ids unique.
func batchBody(b int) []byte {
	var events []map[string]string
	for i := range batchSize {
		events = append(events, map[string]string{
			"id": fmt.Sprintf("b%03d-%03d", b, i), "groupId": "crash", "studentId": fmt.Sprintf("b%03d", b),
			"occurredAt": "2026-01-05T10:00:00Z", "kind": "chat.message_sent", "chatType": "main",
		})
	}
	body, _ := json.Marshal(events)
	return body
}

func sendBatch(base, token string, b int) (accepted, duplicates int, err error) {
	req, _ := http.NewRequest("POST", base+"/v1/events", bytes.NewReader(batchBody(b)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("status %d", resp.StatusCode)
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
	req, _ := http.NewRequest("POST", base+"/api/groups/chat?students=true&"+query, nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
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
		t.Fatal(err)
	}
	values := map[string]map[string]int64{}
	for _, r := range body.Reports {
		values[r.StudentID] = map[string]int64{}
		for _, m := range r.Data {
			values[r.StudentID][m.Title] = m.Value
		}
	}
	return values
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

// TestCrashLosesNoAcknowledgedEvent kills the server with SIGKILL while a
// client streams batches, restarts it, and checks that every acknowledged
// batch counts exactly once and that re-sending the unacknowledged ones
// leaves no duplicates.
func TestCrashLosesNoAcknowledgedEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server process")
	}
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "crash.db")
	runBinary(t, bin, "migrate", "--db", db)
	runBinary(t, bin, "group", "create", "--db", db, "--id", "crash")
	runBinary(t, bin, "plan", "set", "--db", db, "--group", "crash", "--start", "2025-01-01")
	key := regexp.MustCompile(`gak_\w+`).FindString(runBinary(t, bin, "key", "create", "--db", db, "--group", "crash"))
	token := regexp.MustCompile(`gat_\w+`).FindString(runBinary(t, bin, "token", "create", "--db", db))

	srv := startServer(t, bin, db)
	var acked atomic.Int64
	killed := make(chan struct{})
	go func() {
		for acked.Load() < 12 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(time.Now().UnixNano()%20) * time.Millisecond)
		srv.cmd.Process.Signal(syscall.SIGKILL)
		close(killed)
	}()
	ackedBatches := map[int]bool{}
	firstUnacked := -1
	for b := 0; b < 400; b++ {
		accepted, _, err := sendBatch(srv.base, token, b)
		if err != nil {
			firstUnacked = b
			break
		}
		if accepted != batchSize {
			t.Fatalf("batch %d: accepted %d", b, accepted)
		}
		ackedBatches[b] = true
		acked.Add(1)
	}
	<-killed
	srv.cmd.Wait()
	if firstUnacked < 0 {
		t.Fatal("the server was never killed mid-stream")
	}
	t.Logf("killed after %d acknowledged batches", len(ackedBatches))

	srv = startServer(t, bin, db)
	counts := perBatchCounts(t, srv.base, key)
	for b := range ackedBatches {
		if got := counts[fmt.Sprintf("b%03d", b)]; got != batchSize {
			t.Errorf("acknowledged batch %d counts %d after the crash, want %d", b, got, batchSize)
		}
	}
	if got := counts[fmt.Sprintf("b%03d", firstUnacked)]; got != 0 && got != batchSize {
		t.Errorf("the batch in flight counts %d: a batch is all or nothing", got)
	}
	// The client re-sends what it never saw acknowledged.
	accepted, duplicates, err := sendBatch(srv.base, token, firstUnacked)
	if err != nil || accepted+duplicates != batchSize || (duplicates != 0 && duplicates != batchSize) {
		t.Fatalf("re-sent batch: accepted %d, duplicates %d, %v", accepted, duplicates, err)
	}
	counts = perBatchCounts(t, srv.base, key)
	var total int64
	for id, n := range counts {
		if n != batchSize {
			t.Errorf("%s counts %d, want %d", id, n, batchSize)
		}
		total += n
	}
	if want := int64(len(ackedBatches)+1) * batchSize; total != want {
		t.Errorf("total %d, want %d", total, want)
	}
}
