package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // to check the copies as plain SQLite files
)

// TestBackupWhileIngesting takes five backups of a SQLite store while four
// clients ingest, none of whose batches may fail. Each copy must pass
// SQLite's integrity check and hold every batch acknowledged before its
// backup began, whole, and none sent after it ended; served, its reports
// must equal the brute force over its raw events. Then the service is
// restored from the last copy as docs/operating.md says (stop, put the copy in
// place, delete the old write-ahead log, start) and answers as the copy
// does.
func TestBackupWhileIngesting(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes")
	}
	t.Parallel() // it waits on its backups: beside the package's other waiting tests
	bin := buildBinary(t)
	live := filepath.Join(t.TempDir(), "live.db")
	key, token := setupGroup(t, bin, []string{"--db", live}, "crash")
	srv := startServer(t, bin, []string{"--db", live})

	var mu sync.Mutex
	sent, acked := map[int]bool{}, map[int]bool{}
	snapshot := func(m map[int]bool) map[int]bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(m)
	}
	next, stop := 0, make(chan struct{})
	var clients sync.WaitGroup
	for range 4 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for {
				mu.Lock()
				b := next
				next++
				sent[b] = true
				mu.Unlock()
				select {
				case <-stop:
					return
				default:
				}
				if b >= 1000 { // batchStudent numbers 1,000 students
					return
				}
				accepted, _, err := sendBatch(srv.Base, token, b)
				if err != nil || accepted != batchSize {
					t.Errorf("batch %d during backups: accepted %d, %v", b, accepted, err)
					return
				}
				mu.Lock()
				acked[b] = true
				mu.Unlock()
			}
		}()
	}
	for deadline := time.Now().Add(time.Minute); len(snapshot(acked)) < 8; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(stop)
			clients.Wait()
			t.Fatal("eight batches were not acknowledged within a minute")
		}
	}
	type backup struct {
		path             string
		ackedBefore      map[int]bool // acknowledged before the backup began
		sentBeforeTheEnd map[int]bool
	}
	var backups []backup
	dir := t.TempDir()
	for i := range 5 {
		b := backup{path: filepath.Join(dir, fmt.Sprintf("copy%d.db", i)), ackedBefore: snapshot(acked)}
		runBinary(t, bin, "backup", "--db", live, "--to", b.path)
		b.sentBeforeTheEnd = snapshot(sent)
		backups = append(backups, b)
		time.Sleep(30 * time.Millisecond)
	}
	close(stop)
	clients.Wait()
	t.Logf("%d batches acknowledged during the backups", len(acked))

	var last map[string]int64
	for i, b := range backups {
		events := checkCopy(t, b.path)
		for batch := range b.ackedBefore {
			if events[batchStudent(batch)] != batchSize {
				t.Errorf("copy %d: batch %d, acknowledged before the backup, has %d events", i, batch, events[batchStudent(batch)])
			}
		}
		for batch := range 1000 {
			if n := events[batchStudent(batch)]; n != 0 && (n != batchSize || !b.sentBeforeTheEnd[batch]) {
				t.Errorf("copy %d: batch %d has %d events (sent before the backup ended: %v)", i, batch, n, b.sentBeforeTheEnd[batch])
			}
		}
		copySrv := startServer(t, bin, []string{"--db", b.path})
		if got := reportCounts(t, copySrv.Base, key); !maps.Equal(got, events) {
			t.Errorf("copy %d: reports %v, its events %v", i, got, events)
		}
		copySrv.Cmd.Process.Kill()
		copySrv.Cmd.Wait()
		last = events
	}

	// Restore the last copy over the live store.
	srv.Cmd.Process.Signal(syscall.SIGKILL)
	srv.Cmd.Wait()
	copyBytes, err := os.ReadFile(backups[len(backups)-1].path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(live, copyBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, stale := range []string{live + "-wal", live + "-shm"} {
		if err := os.Remove(stale); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	srv = startServer(t, bin, []string{"--db", live})
	if got := reportCounts(t, srv.Base, key); !maps.Equal(got, last) {
		t.Errorf("restored: reports %v, the copy's events %v", got, last)
	}
	if accepted, _, err := sendBatch(srv.Base, token, 999); err != nil || accepted != batchSize {
		t.Errorf("ingesting after the restore: accepted %d, %v", accepted, err)
	}
}

// checkCopy runs SQLite's integrity check on the copy at path and returns
// the brute force: each student's events, counted from the raw events.
func checkCopy(t *testing.T, path string) map[string]int64 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("%s: integrity check: %q, %v", path, check, err)
	}
	rows, err := db.Query(`SELECT student_id, count(*) FROM events GROUP BY student_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	events := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		events[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// reportCounts returns each student's messages as the service reports
// them, after checking that the group report's total is their sum.
func reportCounts(t *testing.T, base, key string) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	var sum int64
	for student, n := range perBatchCounts(t, base, key) {
		if n != 0 {
			counts[student] = n
			sum += n
		}
	}
	req, _ := http.NewRequest("POST", base+"/api/groups/chat?startDate=2026-01-05&endDate=2026-01-05", nil)
	req.Header.Set("x-api-key", key)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Reports []struct {
			Data []struct {
				Title string `json:"title"`
				Value int64  `json:"value"`
			} `json:"data"`
		} `json:"reports"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Reports) != 1 {
		t.Fatalf("group report: %v", err)
	}
	for _, m := range body.Reports[0].Data {
		if m.Title == "Total Messages" && m.Value != sum {
			t.Errorf("group report: %d messages, the students' reports %d", m.Value, sum)
		}
	}
	return counts
}
