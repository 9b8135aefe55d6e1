package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
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
func schoolKeys(ctx context.Context, st *stores.Stores, s Scale) ([]string, error) {
	p := platform.New(st.Directory, st.Usage)
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

// maxDistrictSchools is the most schools the bench puts in its district.
const maxDistrictSchools = 1000

// DistrictResult is the figures of a district of the other schools
// (up to maxDistrictSchools): its report over the whole period, one per
// school (schools=true), and its adoption, each first since the server
// started and then again (Runs times).
type DistrictResult struct {
	Schools int                  `json:"schools"`
	Runs    int                  `json:"runs"`
	Asked   map[string]Latencies `json:"asked"`
	First   map[string]float64   `json:"firstMs"`
}

// districtAsks are the district's questions, by name: a path and query.
var districtAsks = []struct{ name, method, path string }{
	{"district report", "POST", "/api/groups/chat"},
	{"schools=true", "POST", "/api/groups/chat?schools=true"},
	{"adoption", "GET", "/api/adoption"},
}

// makeDistrict puts the other schools (up to maxDistrictSchools) in a
// district before the server starts, as a district is before a restart,
// and returns its key.
func makeDistrict(ctx context.Context, st *stores.Stores, s Scale) (string, error) {
	p := platform.New(st.Directory, st.Usage)
	if _, err := p.CreateDistrict(ctx, "bench-district", "Bench District", "UTC"); err != nil {
		return "", err
	}
	for i := range min(s.OtherGroups, maxDistrictSchools) {
		if err := p.AttachSchool(ctx, "bench-district", fmt.Sprintf("bench-other-%d", i+1)); err != nil {
			return "", err
		}
	}
	_, key, err := p.CreateDistrictKey(ctx, "bench-district", "bench")
	return key, err
}

// measureDistrict asks the district's key (makeDistrict) each of
// districtAsks over range r: once, its first answer since the server
// started, then Runs times.
func measureDistrict(srv *Server, key string, schools int, r analytics.DayRange, runs int) (DistrictResult, error) {
	res := DistrictResult{Schools: schools, Runs: runs, Asked: map[string]Latencies{}, First: map[string]float64{}}
	dates := fmt.Sprintf("startDate=%s&endDate=%s", r.First, r.Last)
	for _, ask := range districtAsks {
		sep := "?"
		if strings.Contains(ask.path, "?") {
			sep = "&"
		}
		var took []float64
		for i := range runs + 1 {
			start := time.Now()
			if err := askDistrict(srv.Base, key, ask.method, ask.path+sep+dates); err != nil {
				return res, fmt.Errorf("%s: %w", ask.name, err)
			}
			if i == 0 {
				res.First[ask.name] = ms(time.Since(start))
				continue
			}
			took = append(took, ms(time.Since(start)))
		}
		res.Asked[ask.name] = Latencies{percentile(took, 50), percentile(took, 99)}
	}
	return res, nil
}

// askDistrict sends one district request and reads its answer.
func askDistrict(base, key, method, path string) error {
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("x-api-key", key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return err
}

// measureOthers measures the other schools: as a district of them first
// (its first answers are the first of their data since the server
// started), then each by its own key.
func measureOthers(ctx context.Context, cfg Config, st *stores.Stores, srv *Server, districtKey string, r analytics.DayRange, res *Result) error {
	district, err := measureDistrict(srv, districtKey, min(cfg.Scale.OtherGroups, maxDistrictSchools), r, 30)
	if err != nil {
		return err
	}
	res.District = &district
	others, err := schoolKeys(ctx, st, cfg.Scale)
	if err != nil {
		return err
	}
	if res.Schools, err = askEverySchool(srv, others, r, cfg); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "asked every school\n")
	return nil
}

// print writes the district's figures.
func (d *DistrictResult) print(w io.Writer) {
	fmt.Fprintf(w, "\na district of %d other schools, asked over the whole period (first since start, then p50 and p99 of %d):\n", d.Schools, d.Runs)
	for _, ask := range districtAsks {
		fmt.Fprintf(w, "  %-24s first %7.2f ms  p50 %7.2f ms  p99 %7.2f ms\n", ask.name, d.First[ask.name], d.Asked[ask.name].P50, d.Asked[ask.name].P99)
	}
}
