package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

// RefusalsResult is how long the report endpoint took to refuse each
// cause, asked in turn until the runs could see a difference of
// refusalsResolution between two causes' medians, or MaxRequests each.
// The promise (docs/decisions.md, R4) is that no pair differs: every |z|
// under 3 and every median within refusalsResolution.
type RefusalsResult struct {
	Causes   []RefusalCause `json:"causes"`
	Requests int            `json:"requestsPerCause"`
	// Resolution is the smallest difference of medians, in µs, that the
	// runs would tell from noise at |z| = 3.
	Resolution    float64 `json:"resolutionMicros"`
	MaxZ          float64 `json:"maxAbsZ"`
	MaxZPair      string  `json:"maxAbsZPair"`
	MaxMedianDiff float64 `json:"maxMedianDiffMicros"`
	MaxDiffPair   string  `json:"maxMedianDiffPair"`
}

// RefusalCause is one cause's median time to a refusal, in µs.
type RefusalCause struct {
	Name   string  `json:"name"`
	Median float64 `json:"medianMicros"`
}

// refusalsResolution is the difference of medians, in µs, that the runs go
// on until they can see.
const refusalsResolution = 20

// refusalsConns is how many connections ask at once, each every cause in
// turn, in an order of its own.
const refusalsConns = 4

// timeRefusals measures the refusals by cause, unless cfg asks none.
func timeRefusals(ctx context.Context, cfg Config, st *stores.Stores, base string, now time.Time, res *Result) error {
	if cfg.Refusals == 0 {
		return nil
	}
	causes, err := refusalCauses(ctx, st, now)
	if err == nil {
		res.Refusals, err = measureRefusals(base, causes, cfg.Refusals)
	}
	if err != nil {
		return fmt.Errorf("refusals: %w", err)
	}
	fmt.Fprintf(cfg.Out, "measured the refusals by cause\n")
	return nil
}

// refusalCauses makes a credential of each cause of a refusal: keys of a
// school and of a district, unknown, revoked, or without a valid plan; no
// key; sessions unknown, expired and signed out.
func refusalCauses(ctx context.Context, st *stores.Stores, now time.Time) (map[string]string, error) {
	p := platform.New(st.Directory, st.Usage)
	causes := map[string]string{"no key": "", "unknown key": "gak_BENCHNOTAKEYATALLXXXXXXXX",
		"unknown district's key": "gad_BENCHNOTAKEYATALLXXXXXXXX", "unknown session": sessionCredential + "gas_BENCHNOSUCHSESSION x"}
	plans := []struct{ group, cause, starts, ends string }{{"bench-refused", "revoked key", "2000-01-01", ""},
		{"bench-ended", "ended plan", "2000-01-01", "2001-01-01"}, {"bench-future", "future plan", "2999-01-01", ""},
		{"bench-cancelled", "cancelled plan", "2000-01-01", ""}}
	for _, pl := range plans {
		if _, err := p.CreateGroup(ctx, pl.group, pl.group, "UTC"); err != nil {
			return nil, err
		}
		plan, err := p.AddPlan(ctx, pl.group, pl.starts, pl.ends, 0)
		if err == nil && pl.cause == "cancelled plan" {
			_, err = p.CancelPlan(ctx, pl.group, plan.ID)
		}
		if err != nil {
			return nil, err
		}
		k, secret, err := p.CreateKey(ctx, pl.group, "bench")
		if err == nil && pl.cause == "revoked key" {
			err = p.RevokeKey(ctx, pl.group, k.ID)
		}
		if err != nil {
			return nil, err
		}
		causes[pl.cause] = secret
	}
	for _, d := range []struct{ id, school, cause string }{{"bench-refused-d", "bench-refused", "revoked district's key"},
		{"bench-ended-d", "bench-ended", "district without a valid plan"}} {
		if _, err := p.CreateDistrict(ctx, d.id, d.id, "UTC"); err != nil {
			return nil, err
		}
		if err := p.AttachSchool(ctx, d.id, d.school); err != nil {
			return nil, err
		}
		k, secret, err := p.CreateDistrictKey(ctx, d.id, "bench")
		if err == nil && d.cause == "revoked district's key" {
			err = p.RevokeDistrictKey(ctx, d.id, k.ID)
		}
		if err != nil {
			return nil, err
		}
		causes[d.cause] = secret
	}
	for i, s := range []struct {
		cause string
		lasts time.Duration
	}{{"expired session", -time.Minute}, {"signed-out session", time.Hour}} {
		token, err := addSession(ctx, st, fmt.Sprintf("bench-refused-%d", i), "bench-refused", now, now.Add(s.lasts))
		if err == nil && s.cause == "signed-out session" {
			err = st.Directory.CloseSession(ctx, analytics.HashSecret(token))
		}
		if err != nil {
			return nil, err
		}
		causes[s.cause] = sessionCredential + token + " x"
	}
	return causes, nil
}

// measureRefusals asks the report endpoint with each cause's credential,
// every cause in turn on each of refusalsConns connections, in rounds,
// until the runs can see refusalsResolution or maxRequests were asked of
// each cause.
func measureRefusals(base string, causes map[string]string, maxRequests int) (RefusalsResult, error) {
	names := slices.Sorted(maps.Keys(causes))
	took := map[string][]float64{}
	var res RefusalsResult
	round := min(maxRequests, 200)
	for res.Requests < maxRequests {
		got, err := refusalRound(base, causes, names, round/refusalsConns)
		if err != nil {
			return res, err
		}
		for name, t := range got {
			took[name] = append(took[name], t...)
		}
		res.Requests = len(took[names[0]])
		if res.Resolution = resolution(took); res.Resolution <= refusalsResolution {
			break
		}
	}
	for i, a := range names {
		res.Causes = append(res.Causes, RefusalCause{Name: a, Median: percentile(took[a], 50)})
		for _, b := range names[i+1:] {
			pair := a + " / " + b
			if z := math.Abs(mannWhitneyZ(took[a], took[b])); z >= res.MaxZ {
				res.MaxZ, res.MaxZPair = z, pair
			}
			if d := math.Abs(percentile(took[a], 50) - percentile(took[b], 50)); d >= res.MaxMedianDiff {
				res.MaxMedianDiff, res.MaxDiffPair = d, pair
			}
		}
	}
	return res, nil
}

// refusalRound asks each cause n times on each connection, the causes in
// an order shuffled anew on each pass, and returns each one's times in µs.
func refusalRound(base string, causes map[string]string, names []string, n int) (map[string][]float64, error) {
	took := map[string][]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, refusalsConns)
	for range refusalsConns {
		wg.Go(func() {
			order := slices.Clone(names)
			for range n {
				rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, name := range order {
					t, err := askRefused(base, causes[name])
					if err != nil {
						errs <- fmt.Errorf("%s: %w", name, err)
						return
					}
					mu.Lock()
					took[name] = append(took[name], t)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return took, <-errs
}

// askRefused asks a report with a credential that must be refused, and
// returns how long the answer took to come whole, in µs.
func askRefused(base, key string) (float64, error) {
	req, err := http.NewRequest("POST", base+"/api/groups/chat", nil)
	if err != nil {
		return 0, err
	}
	if key != "" {
		setCredential(req, key)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := float64(time.Since(start).Nanoseconds()) / 1e3
	if err == nil && (resp.StatusCode != http.StatusForbidden || string(body) != `{"error":"Unauthorized"}`+"\n") {
		err = fmt.Errorf("answered %d %s, not 403 Unauthorized", resp.StatusCode, body)
	}
	return took, err
}

// resolution is the smallest difference of two causes' medians that runs
// of this size tell from noise at |z| = 3: 3σ√(2/n), σ read off the
// spread between the quartiles (1.349σ for a normal spread), which a few
// slow answers do not inflate.
func resolution(took map[string][]float64) float64 {
	var all []float64
	n := math.MaxInt
	for _, t := range took {
		all = append(all, t...)
		n = min(n, len(t))
	}
	sigma := (percentile(all, 75) - percentile(all, 25)) / 1.349
	return 3 * sigma * math.Sqrt(2/float64(n))
}

// mannWhitneyZ is the Mann-Whitney U test's z of a against b, ties given
// their mean rank: near 0 when neither tends to be the larger.
func mannWhitneyZ(a, b []float64) float64 {
	type value struct {
		v   float64
		ofA bool
	}
	all := make([]value, 0, len(a)+len(b))
	for _, v := range a {
		all = append(all, value{v, true})
	}
	for _, v := range b {
		all = append(all, value{v, false})
	}
	slices.SortFunc(all, func(x, y value) int { return cmp.Compare(x.v, y.v) })
	var rankA float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		mean := float64(i+j+1) / 2
		for _, x := range all[i:j] {
			if x.ofA {
				rankA += mean
			}
		}
		i = j
	}
	na, nb := float64(len(a)), float64(len(b))
	u := rankA - na*(na+1)/2
	return (u - na*nb/2) / math.Sqrt(na*nb*(na+nb+1)/12)
}

func (r RefusalsResult) print(w io.Writer) {
	if r.Requests == 0 {
		return
	}
	fmt.Fprintf(w, "\nrefusals of the report endpoint by cause, %d requests each from %d connections in turn (resolution %.0f µs):\n",
		r.Requests, refusalsConns, r.Resolution)
	for _, c := range r.Causes {
		fmt.Fprintf(w, "  %-32s median %8.0f µs\n", c.Name, c.Median)
	}
	fmt.Fprintf(w, "  largest |z| %.1f (%s); largest difference of medians %.0f µs (%s)\n", r.MaxZ, r.MaxZPair, r.MaxMedianDiff, r.MaxDiffPair)
}
