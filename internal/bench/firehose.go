package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/sqlstore"
)

// Firehose is how a platform sends usage as it happens: one event per
// request, from many connections at once, spread over many schools.
type Firehose struct {
	Groups   int           // schools the events go to, round robin
	Conns    int           // connections sending at once
	Duration time.Duration // how long they send
}

// FirehoseResult is what the firehose measured. Every acknowledged event
// is then looked for in its school's report.
type FirehoseResult struct {
	Groups       int     `json:"groups"`
	Connections  int     `json:"connections"`
	Seconds      float64 `json:"seconds"`
	Requests     int     `json:"requests"`
	Acknowledged int     `json:"acknowledged"`
	EventsPerSec float64 `json:"acknowledgedEventsPerSec"`
	P50          float64 `json:"p50Ms"`
	P99          float64 `json:"p99Ms"`
	Max          float64 `json:"maxMs"`
	// Refused are the 503s (the store behind or away), Failed the other
	// answers that were not 200 and the requests that got no answer.
	Refused int `json:"refused"`
	Failed  int `json:"failed"`
	// PastTimeout are the answers that came later than the server's store
	// timeout: none should.
	PastTimeout int `json:"pastStoreTimeout"`
	// CountedNotAcknowledged are events the reports count though their
	// request was not acknowledged (a refusal whose write had landed).
	CountedNotAcknowledged int `json:"countedNotAcknowledged"`
}

// storeTimeout is the server's --store-timeout (its default).
const storeTimeout = 10 * time.Second

// firehoseGroup names the firehose's school i.
func firehoseGroup(i int) string { return fmt.Sprintf("bench-fh-%04d", i) }

// setUpFirehose creates the firehose's schools, each with a plan and a key,
// and returns their keys.
func setUpFirehose(ctx context.Context, store *sqlstore.Store, groups int) ([]string, error) {
	p := platform.New(store, store)
	keys := make([]string, groups)
	for i := range groups {
		id := firehoseGroup(i)
		if _, err := p.CreateGroup(ctx, id, id, "UTC"); err != nil {
			return nil, err
		}
		if _, err := p.AddPlan(ctx, id, "2000-01-01", ""); err != nil {
			return nil, err
		}
		var err error
		if _, keys[i], err = p.CreateKey(ctx, id, "bench"); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// firehose sends one event per request from fh.Conns connections for
// fh.Duration, spread over the schools round robin, then checks that each
// school's report counts every event acknowledged for it.
func firehose(base, token string, keys []string, fh Firehose, day analytics.Day) (FirehoseResult, error) {
	res := FirehoseResult{Groups: len(keys), Connections: fh.Conns}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: fh.Conns, DisableCompression: true}, Timeout: 2 * storeTimeout}
	noon := day.Start(time.UTC).Add(12 * time.Hour)
	var mu sync.Mutex
	var latencies []float64
	acked := make([]int, len(keys))   // by school
	refused := make([]int, len(keys)) // by school: 503s and requests without an answer
	var next int
	start := time.Now()
	deadline := start.Add(fh.Duration)
	var wg sync.WaitGroup
	for range fh.Conns {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				mu.Lock()
				n := next
				next++
				mu.Unlock()
				g := n % len(keys)
				body, _ := json.Marshal([]platform.EventInput{{ID: fmt.Sprintf("fh%09d", n), GroupID: firehoseGroup(g),
					StudentID: studentID(n / len(keys) % 500), OccurredAt: noon.Add(time.Duration(n%3600) * time.Second).Format(time.RFC3339),
					Kind: analytics.KindMessageSent, ChatType: "tutor_me"}})
				req, _ := http.NewRequest("POST", base+"/v1/events", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				sent := time.Now()
				resp, err := client.Do(req)
				took := time.Since(sent)
				var out platform.IngestResult
				status := 0
				if err == nil {
					status = resp.StatusCode
					if status == http.StatusOK {
						err = json.NewDecoder(resp.Body).Decode(&out)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				res.Requests++
				latencies = append(latencies, ms(took))
				if took > storeTimeout {
					res.PastTimeout++
				}
				switch {
				case err == nil && status == http.StatusOK && out.Accepted == 1:
					acked[g]++
				case status == http.StatusServiceUnavailable:
					res.Refused++
					refused[g]++
				default:
					res.Failed++
					refused[g]++ // it may have been written all the same
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	for _, a := range acked {
		res.Acknowledged += a
	}
	res.EventsPerSec = float64(res.Acknowledged) / res.Seconds
	slices.Sort(latencies)
	res.P50, res.P99 = percentile(latencies, 50), percentile(latencies, 99)
	if len(latencies) > 0 {
		res.Max = latencies[len(latencies)-1]
	}
	// Every acknowledged event is in its school's next report, once; one
	// whose request was refused may be there too, but no other.
	sc := scenario{endpoint: "chat", r: analytics.DayRange{First: day, Last: day}}
	for g, key := range keys {
		body, _, err := request(base, key, sc)
		if err != nil {
			return res, fmt.Errorf("firehose: %s's report: %w", firehoseGroup(g), err)
		}
		var answer struct {
			Reports []struct {
				Data []struct{ Value int }
			}
		}
		if err := json.Unmarshal(body, &answer); err != nil || len(answer.Reports) != 1 {
			return res, fmt.Errorf("firehose: %s's report: %v: %.200s", firehoseGroup(g), err, body)
		}
		counted := answer.Reports[0].Data[0].Value
		if counted < acked[g] || counted > acked[g]+refused[g] {
			return res, fmt.Errorf("firehose: %s counts %d events, but %d were acknowledged and %d refused", firehoseGroup(g), counted, acked[g], refused[g])
		}
		res.CountedNotAcknowledged += counted - acked[g]
	}
	return res, nil
}
