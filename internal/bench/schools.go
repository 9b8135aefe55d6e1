package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/sqlstore"
)

// SchoolsResult is the figures of every other school asked for its chat
// group report and student report over the whole period, by Concurrency
// clients: first since the server started (what each school's first
// visit costs), then again; and the server's resident memory after.
type SchoolsResult struct {
	Schools      int       `json:"schools"`
	Clients      int       `json:"clients"`
	GroupFirst   Latencies `json:"groupFirst"`
	StudentFirst Latencies `json:"studentFirst"`
	GroupAgain   Latencies `json:"groupAgain"`
	StudentAgain Latencies `json:"studentAgain"`
	RSSBytes     int64     `json:"serverRSSBytesAfter"`
}

// Latencies are the median and 99th percentile of requests, in ms.
type Latencies struct {
	P50 float64 `json:"p50Ms"`
	P99 float64 `json:"p99Ms"`
}

// schoolKeys creates a key for each other school.
func schoolKeys(ctx context.Context, store *sqlstore.Store, s Scale) ([]string, error) {
	p := platform.New(store, store)
	keys := make([]string, s.OtherGroups)
	for i := range keys {
		var err error
		if _, keys[i], err = p.CreateKey(ctx, fmt.Sprintf("bench-other-%d", i+1), "bench"); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// askEverySchool asks each school (by its key) for its group report and
// its student report, twice over, and reads the server's memory after.
func askEverySchool(srv *Server, keys []string, r analytics.DayRange, cfg Config) (SchoolsResult, error) {
	res := SchoolsResult{Schools: len(keys), Clients: cfg.Concurrency}
	group := scenario{name: "a school's chat group report", endpoint: "chat", r: r}
	students := scenario{name: "a school's chat student report", endpoint: "chat", r: r, params: "students=true"}
	for _, pass := range []struct{ group, students *Latencies }{{&res.GroupFirst, &res.StudentFirst}, {&res.GroupAgain, &res.StudentAgain}} {
		var mu sync.Mutex
		var groupMs, studentMs []float64
		var firstErr error
		next := make(chan string)
		var wg sync.WaitGroup
		for range cfg.Concurrency {
			wg.Go(func() {
				for key := range next {
					for _, sc := range []scenario{group, students} {
						start := time.Now()
						err := timedRequest(srv.Base, key, sc)
						took := ms(time.Since(start))
						mu.Lock()
						if err != nil && firstErr == nil {
							firstErr = err
						}
						if sc.params == "" {
							groupMs = append(groupMs, took)
						} else {
							studentMs = append(studentMs, took)
						}
						mu.Unlock()
					}
				}
			})
		}
		for _, key := range keys {
			next <- key
		}
		close(next)
		wg.Wait()
		if firstErr != nil {
			return res, firstErr
		}
		*pass.group = Latencies{percentile(groupMs, 50), percentile(groupMs, 99)}
		*pass.students = Latencies{percentile(studentMs, 50), percentile(studentMs, 99)}
	}
	var err error
	res.RSSBytes, err = srv.memory("VmRSS")
	return res, err
}
