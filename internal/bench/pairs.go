package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores"
)

// AccessLogCost is what the access log costs a student report: the
// scenario measured in turn on the server, which records each answer, and
// on one that does not (serve --access-log=false), Runs times each; the
// figures are the medians of the runs'.
type AccessLogCost struct {
	Name      string  `json:"name"`
	Runs      int     `json:"runsEach"`
	P50       float64 `json:"p50Ms"`
	P50Off    float64 `json:"p50MsWithout"`
	PerSec    float64 `json:"requestsPerSec"`
	PerSecOff float64 `json:"requestsPerSecWithout"`
}

// SignedInCost is what a signed-in session costs a student report beside
// the school's key: the scenario asked in turn with each, Runs times
// each; the figures are the medians of the runs'.
type SignedInCost struct {
	Name      string  `json:"name"`
	Runs      int     `json:"runsEach"`
	P50       float64 `json:"p50Ms"`
	P50Key    float64 `json:"p50MsWithKey"`
	PerSec    float64 `json:"requestsPerSec"`
	PerSecKey float64 `json:"requestsPerSecWithKey"`
}

// pairRuns is how many times each scenario of a pair is measured each
// way: even, so that each goes first as often.
const pairRuns = 4

// target is where and how a scenario is asked: a server, and the key or
// session (sessionCredential) that asks.
type target struct{ base, key string }

// inTurn measures sc at both targets in turn, pairRuns times each, each
// first every other run (a run may leave the next one a warmer, or busier,
// machine), after one answer each unmeasured (what a first answer costs,
// reading what the engine keeps, is neither's); it returns the medians of
// each's p50 and requests per second.
func inTurn(cfg Config, sc scenario, targets [2]target) (p50, perSec [2]float64, err error) {
	for _, t := range targets {
		if _, _, err := request(t.base, t.key, sc); err != nil {
			return p50, perSec, err
		}
	}
	var p50s, perSecs [2][]float64
	for run := range pairRuns {
		order := []int{0, 1}
		if run%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			rr, _, err := measure(targets[i].base, targets[i].key, sc, cfg)
			if err != nil {
				return p50, perSec, err
			}
			p50s[i], perSecs[i] = append(p50s[i], rr.P50), append(perSecs[i], rr.RequestsPerS)
		}
	}
	for i := range targets {
		p50[i], perSec[i] = percentile(p50s[i], 50), percentile(perSecs[i], 50)
	}
	return p50, perSec, nil
}

// measureAccessLog measures each scenario on srv and on a server like it
// without the access log, in turn.
func measureAccessLog(cfg Config, serverArgs []string, srv *Server, keys benchKeys, scenarios []scenario) ([]AccessLogCost, error) {
	// Its warning that the log is off is expected: errors only.
	off, err := StartServer(cfg.Binary, append(slices.Clone(serverArgs), "--access-log=false", "--log-level", "error"))
	if err != nil {
		return nil, err
	}
	defer off.Stop()
	var costs []AccessLogCost
	for _, sc := range scenarios {
		key := keys.of(sc)
		p50, perSec, err := inTurn(cfg, sc, [2]target{{srv.Base, key}, {off.Base, key}})
		if err != nil {
			return nil, err
		}
		costs = append(costs, AccessLogCost{Name: sc.name, Runs: pairRuns, P50: p50[0], P50Off: p50[1], PerSec: perSec[0], PerSecOff: perSec[1]})
	}
	return costs, nil
}

// measureSignedIn measures each scenario of the main group asked with a
// school administrator's session and with the group's key, in turn.
func measureSignedIn(ctx context.Context, cfg Config, srv *Server, st *stores.Stores, keys benchKeys, scenarios []scenario, now time.Time) ([]SignedInCost, error) {
	session, err := openSession(ctx, st, srv.Base, now)
	if err != nil {
		return nil, err
	}
	var costs []SignedInCost
	for _, sc := range scenarios {
		if sc.group != "" {
			continue // the other group's: the session is the main group's
		}
		p50, perSec, err := inTurn(cfg, sc, [2]target{{srv.Base, session}, {srv.Base, keys.main}})
		if err != nil {
			return nil, err
		}
		costs = append(costs, SignedInCost{Name: sc.name, Runs: pairRuns, P50: p50[0], P50Key: p50[1], PerSec: perSec[0], PerSecKey: perSec[1]})
	}
	return costs, nil
}

// openSession signs a school administrator of the main group in, as
// sign-in would (a provider, the staff member, the session in the store),
// and returns the session's credential, its CSRF token read from
// /api/me as the dashboard reads it.
func openSession(ctx context.Context, st *stores.Stores, base string, now time.Time) (string, error) {
	token, err := addSession(ctx, st, "bench", "bench-main", now, now.Add(24*time.Hour))
	if err != nil {
		return "", err
	}
	req, err := http.NewRequest(http.MethodGet, base+"/api/me", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Cookie", "ga_session="+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var me struct{ CSRFToken string }
	if err := json.NewDecoder(resp.Body).Decode(&me); err != nil || me.CSRFToken == "" {
		return "", fmt.Errorf("the bench's session: GET /api/me answered %d without a CSRF token", resp.StatusCode)
	}
	return sessionCredential + token + " " + me.CSRFToken, nil
}

// addSession adds a provider and a school administrator of group, both
// named by id, and opens their session, ending at expires, as sign-in
// would; it returns the session's token.
func addSession(ctx context.Context, st *stores.Stores, id, group string, now, expires time.Time) (string, error) {
	p := analytics.Provider{ID: id, Name: id, Issuer: "https://idp.example", ClientID: id, ClientSecret: id,
		GroupID: group, EmailDomains: []string{group + ".example"}, Created: now}
	m := analytics.Staff{ID: "stf_" + id, Email: id + "@" + group + ".example", Name: id, Role: analytics.RoleSchoolAdmin, GroupID: group, Created: now}
	token := "gas_" + id
	err := st.Directory.AddProvider(ctx, p)
	if err == nil {
		err = st.Directory.AddStaff(ctx, m)
	}
	if err == nil {
		err = st.Directory.OpenSession(ctx, analytics.Session{TokenHash: analytics.HashSecret(token), Staff: m, ProviderID: p.ID,
			Created: now.Add(-time.Hour), Expires: expires, Idle: 24 * time.Hour})
	}
	return token, err
}

// sessionCredential marks a target's key that is a session: its token
// and CSRF token after it, space-separated.
const sessionCredential = "session "

// setCredential sets the request's key, or its session's cookie and CSRF
// token.
func setCredential(req *http.Request, key string) {
	if session, ok := strings.CutPrefix(key, sessionCredential); ok {
		token, csrf, _ := strings.Cut(session, " ")
		req.Header.Set("Cookie", "ga_session="+token)
		req.Header.Set("X-CSRF-Token", csrf)
		return
	}
	req.Header.Set("x-api-key", key)
}
