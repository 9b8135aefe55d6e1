package httpapi_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/stores/storetest"
)

// limitedEnv is a server on SQLite with the given limits.
func limitedEnv(t *testing.T, limits httpapi.Limits) *testEnv {
	return newEnvWith(t, storetest.OpenKind(t, "sqlite"), func(c *httpapi.Config) { c.Limits = limits })
}

// quotaOf reads the RateLimit headers: limit, remaining, reset.
func quotaOf(t *testing.T, resp response) [3]int {
	t.Helper()
	var q [3]int
	for i, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		v, err := strconv.Atoi(resp.header.Get(name))
		if err != nil {
			t.Fatalf("%s: %q (status %d)", name, resp.header.Get(name), resp.status)
		}
		q[i] = v
	}
	return q
}

func (e *testEnv) advance(d time.Duration) { e.clock.Set(e.clock.Now().Add(d)) }

// TestRateLimitPerKey: each key has its own budget, told in the RateLimit
// headers of every answer; past it, a 429 with Retry-After; it refills with
// time.
func TestRateLimitPerKey(t *testing.T) {
	e := limitedEnv(t, httpapi.Limits{Key: httpapi.Rate{N: 3, Per: time.Minute}})
	key, other := e.school("north", "UTC"), e.key("north")
	south := e.school("south", "UTC")
	const query = "startDate=2025-01-01&endDate=2025-01-31"
	for i := range 3 {
		resp := e.reportRequest("chat", key, query, "")
		if q := quotaOf(t, resp); resp.status != http.StatusOK || q[0] != 3 || q[1] != 2-i || q[2] < 20*(i+1) || q[2] > 20*(i+1)+1 {
			t.Errorf("request %d: %d, quota %v", i+1, resp.status, q)
		}
	}
	resp := e.reportRequest("live-lecture", key, query, "")
	if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") != "20" || quotaOf(t, resp)[1] != 0 {
		t.Fatalf("over the limit: %d, Retry-After %q, %s", resp.status, resp.header.Get("Retry-After"), resp.body)
	}
	if msg := resp.json(t)["error"]; msg != "Too many requests: at most 3 requests per minute for one key; retry in 20 s" {
		t.Errorf("message %q", msg)
	}
	for name, k := range map[string]string{"another key of the group": other, "another group's key": south} {
		if resp := e.reportRequest("chat", k, query, ""); resp.status != http.StatusOK || quotaOf(t, resp)[1] != 2 {
			t.Errorf("%s: %d, quota %v: want its own budget", name, resp.status, quotaOf(t, resp))
		}
	}
	e.advance(20 * time.Second)
	if resp := e.reportRequest("chat", key, query, ""); resp.status != http.StatusOK || quotaOf(t, resp)[1] != 0 {
		t.Errorf("20 s later: %d, quota %v, want one more request", resp.status, quotaOf(t, resp))
	}
	e.advance(time.Hour)
	if resp := e.reportRequest("chat", key, query, ""); quotaOf(t, resp) != [3]int{3, 2, 20} {
		t.Errorf("an hour later: quota %v, want a full budget less this request", quotaOf(t, resp))
	}
}

// TestRateLimitPerToken: platform tokens have budgets of their own.
func TestRateLimitPerToken(t *testing.T) {
	e := limitedEnv(t, httpapi.Limits{Token: httpapi.Rate{N: 2, Per: time.Second}})
	token, other := e.token(), e.token()
	for i := range 2 {
		if resp := e.call("GET", "/v1/admin/groups", token, ""); resp.status != http.StatusOK || quotaOf(t, resp)[1] != 1-i {
			t.Errorf("request %d: %d %v", i+1, resp.status, quotaOf(t, resp))
		}
	}
	resp := e.call("POST", "/v1/events", token, "[]")
	if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") != "1" {
		t.Errorf("over the limit: %d, Retry-After %q", resp.status, resp.header.Get("Retry-After"))
	}
	if resp := e.call("GET", "/v1/admin/groups", other, ""); resp.status != http.StatusOK {
		t.Errorf("another token: %d", resp.status)
	}
	e.advance(time.Second)
	if resp := e.call("GET", "/v1/admin/groups", token, ""); resp.status != http.StatusOK {
		t.Errorf("a second later: %d", resp.status)
	}
}

// TestFailedAuthLimit: failed key checks are limited per client address;
// past the limit every request of that address that needs a key is
// refused before the check, a valid key's too, so that the answer says
// nothing of the key. Other addresses, told by the trusted proxy's header,
// are not held back.
func TestFailedAuthLimit(t *testing.T) {
	e := limitedEnv(t, httpapi.Limits{FailedAuth: httpapi.Rate{N: 3, Per: time.Minute}, ClientIPHeader: "X-Forwarded-For"})
	key := e.school("north", "UTC")
	token := e.token()
	from := func(addr string) []string { return []string{"X-Forwarded-For", "203.0.113.9, " + addr} }
	post := func(k, addr string) response {
		return e.do("POST", "/api/groups/chat", k, "", from(addr)...)
	}
	for i := range 3 {
		if resp := post("gak_guess"+strconv.Itoa(i), "198.51.100.1"); resp.status != http.StatusForbidden || quotaOf(t, resp)[1] != 2-i {
			t.Errorf("guess %d: %d %v", i+1, resp.status, quotaOf(t, resp))
		}
	}
	for name, k := range map[string]string{"a fourth guess": "gak_guess4", "the right key": key} {
		if resp := post(k, "198.51.100.1"); resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") != "20" {
			t.Errorf("%s from the guessing address: %d, Retry-After %q, want 429", name, resp.status, resp.header.Get("Retry-After"))
		}
	}
	if resp := e.do("GET", "/v1/admin/groups", "", "", append(from("198.51.100.1"), "Authorization", "Bearer "+token)...); resp.status != http.StatusTooManyRequests {
		t.Errorf("a platform token from the guessing address: %d, want 429", resp.status)
	}
	if resp := post(key, "198.51.100.2"); resp.status != http.StatusOK {
		t.Errorf("another address: %d", resp.status)
	}
	e.advance(20 * time.Second)
	if resp := post(key, "198.51.100.1"); resp.status != http.StatusOK {
		t.Errorf("20 s later: %d", resp.status)
	}
}

// TestNoLimitsNoHeaders: with every limit off, no RateLimit headers.
func TestNoLimitsNoHeaders(t *testing.T) {
	e := limitedEnv(t, httpapi.Limits{})
	key := e.school("north", "UTC")
	for range 100 {
		if resp := e.reportRequest("chat", key, "", ""); resp.status != http.StatusOK || resp.header.Get("RateLimit-Limit") != "" {
			t.Fatalf("%d %v", resp.status, resp.header)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want httpapi.Rate
		ok   bool
	}{
		{"60/m", httpapi.Rate{N: 60, Per: time.Minute}, true},
		{"5/s", httpapi.Rate{N: 5, Per: time.Second}, true},
		{"1000/h", httpapi.Rate{N: 1000, Per: time.Hour}, true},
		{"off", httpapi.Rate{}, true},
		{"0/m", httpapi.Rate{}, false},
		{"60", httpapi.Rate{}, false},
		{"60/d", httpapi.Rate{}, false},
		{"x/m", httpapi.Rate{}, false},
	} {
		got, err := httpapi.ParseRate(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParseRate(%q) = %v, %v", c.in, got, err)
		}
	}
}
