package bench

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
)

// ingest sends n events through POST /v1/events in batches of batchSize
// from several connections, and returns the rate. Event ids start with
// prefix, which tells the runs apart.
func ingest(base, token string, cfg Config, now time.Time, prefix string, batchSize, n int) (IngestResult, error) {
	res := IngestResult{BatchSize: batchSize, Connections: cfg.IngestConns}
	var bodies [][]byte
	day := now.Add(-2 * time.Hour)
	for b := 0; b*batchSize < n; b++ {
		batch := make([]platform.EventInput, batchSize)
		for i := range batch {
			k := b*batchSize + i
			batch[i] = platform.EventInput{ID: fmt.Sprintf("%s%09d", prefix, k), GroupID: "bench-ingest", StudentID: studentID(k % 1000),
				OccurredAt: day.Add(time.Duration(k%3600) * time.Second).UTC().Format(time.RFC3339), Kind: analytics.KindMessageSent,
				ChatType: []string{"tutor_me", "test", "flashcard", "material", "live_lecture", "main"}[k%6]}
		}
		body, _ := json.Marshal(batch)
		bodies = append(bodies, body)
	}
	next := make(chan []byte, len(bodies))
	for _, b := range bodies {
		next <- b
	}
	close(next)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	accepted := 0
	start := time.Now()
	for range cfg.IngestConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range next {
				req, _ := http.NewRequest("POST", base+"/v1/events", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				var out platform.IngestResult
				if err == nil {
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("ingest: status %d", resp.StatusCode)
					} else {
						err = json.NewDecoder(resp.Body).Decode(&out)
					}
					resp.Body.Close()
				}
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				accepted += out.Accepted
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	res.Events = accepted
	res.EventsPerSec = float64(accepted) / time.Since(start).Seconds()
	if accepted != len(bodies)*batchSize {
		return res, fmt.Errorf("ingest: %d of %d events accepted", accepted, len(bodies)*batchSize)
	}
	return res, nil
}

// diskBytes is the store's size: the SQLite files, or the PostgreSQL
// database.
func diskBytes(ctx context.Context, db *sql.DB, dialect, dsn string) (int64, error) {
	if dialect == "postgres" {
		var n int64
		err := db.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
		return n, err
	}
	var total int64
	for _, suffix := range []string{"", "-wal"} {
		if st, err := os.Stat(dsn + suffix); err == nil {
			total += st.Size()
		}
	}
	return total, nil
}
