package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

// token creates a platform token.
func (e *testEnv) token() string {
	e.t.Helper()
	_, secret, err := e.platform.CreateToken(ctx, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// call sends a platform API request with a bearer token and a JSON body.
func (e *testEnv) call(method, path, token, body string) response {
	e.t.Helper()
	header := []string{"Content-Type", "application/json"}
	if token != "" {
		header = append(header, "Authorization", "Bearer "+token)
	}
	return e.do(method, path, "", body, header...)
}

func (e *testEnv) mustCall(method, path, token, body string, status int) map[string]any {
	e.t.Helper()
	resp := e.call(method, path, token, body)
	if resp.status != status {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.status, resp.body, status)
	}
	if len(resp.body) == 0 {
		return nil
	}
	return resp.json(e.t)
}

func eventsJSON(events ...platform.EventInput) string {
	b, _ := json.Marshal(events)
	return string(b)
}

func ingestResult(t *testing.T, resp response) platform.IngestResult {
	t.Helper()
	if resp.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", resp.status, resp.body)
	}
	var res platform.IngestResult
	if err := json.Unmarshal(resp.body, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRevokedTokenStopsWorking: a token in use, which the service keeps
// for a moment after it was accepted, stops working at once when the
// service revokes it, and within a second or so when another process
// (the CLI, here a platform of its own on the same directory) does.
func TestRevokedTokenStopsWorking(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		e.school("north", "UTC")
		cli := platform.New(e.platform.Directory, e.platform.Usage)
		for _, by := range []struct {
			name     string
			platform *platform.Platform
			within   time.Duration
		}{{"the service", e.platform, 0}, {"another process", cli, 3 * time.Second}} {
			token, secret, err := e.platform.CreateToken(ctx, by.name)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				e.mustCall("GET", "/v1/admin/groups", secret, "", http.StatusOK)
			}
			if err := by.platform.RevokeToken(ctx, token.ID); err != nil {
				t.Fatal(err)
			}
			revoked := time.Now()
			for e.call("GET", "/v1/admin/groups", secret, "").status != http.StatusUnauthorized {
				if time.Since(revoked) > by.within {
					t.Fatalf("revoked by %s, the token still works after %v", by.name, time.Since(revoked).Round(time.Millisecond))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
}

func TestPlatformTokenScoping(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		token := e.token()
		revoked, revokedSecret, _ := e.platform.CreateToken(ctx, "old")
		e.platform.RevokeToken(ctx, revoked.ID)
		for name, header := range map[string][]string{
			"no token":           nil,
			"unknown token":      {"Authorization", "Bearer gat_NOPE"},
			"revoked token":      {"Authorization", "Bearer " + revokedSecret},
			"basic auth":         {"Authorization", "Basic " + token},
			"school key":         {"x-api-key", key},
			"school key, bearer": {"Authorization", "Bearer " + key},
			"token in x-api-key": {"x-api-key", token},
			"empty bearer":       {"Authorization", "Bearer "},
		} {
			for _, req := range [][2]string{{"GET", "/v1/admin/groups"}, {"POST", "/v1/events"}, {"DELETE", "/v1/admin/groups/north/students/s1"}} {
				resp := e.do(req[0], req[1], "", "[]", header...)
				if resp.status != http.StatusUnauthorized || resp.header.Get("WWW-Authenticate") != "Bearer" {
					t.Errorf("%s on %s %s: %d %s, want 401", name, req[0], req[1], resp.status, resp.body)
				}
				resp.errorMessage(t)
			}
		}
		// And a platform token never reads a school's reports.
		for name, header := range map[string][]string{
			"token as x-api-key": {"x-api-key", token},
			"token as bearer":    {"Authorization", "Bearer " + token},
		} {
			resp := e.do("POST", "/api/groups/chat", "", "", header...)
			if resp.status != http.StatusForbidden || resp.errorMessage(t) != "Unauthorized" {
				t.Errorf("%s on a report endpoint: %d %s, want 403", name, resp.status, resp.body)
			}
		}
	})
}

func TestIngestArrayAndNDJSON(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		token := e.token()
		first := message("north", "s1", "main", "2026-11-21T10:00:00Z")
		first.ID, first.StudentName = "e1", "Ada"
		second := session("north", "s2", "2026-11-21T10:00:00Z")
		second.ID = "e2"
		res := ingestResult(t, e.call("POST", "/v1/events", token, eventsJSON(first, second, first)))
		if res.Accepted != 2 || res.Duplicates != 1 || len(res.Rejected) != 0 {
			t.Errorf("array: %+v", res)
		}
		third := message("north", "s1", "test", "2026-11-21T11:00:00Z")
		third.ID = "e3"
		b1, _ := json.Marshal(third)
		b2, _ := json.Marshal(first)
		ndjson := string(b1) + "\n\n" + string(b2) + "\n"
		res = ingestResult(t, e.do("POST", "/v1/events", "", ndjson, "Authorization", "Bearer "+token, "Content-Type", "application/x-ndjson"))
		if res.Accepted != 1 || res.Duplicates != 1 {
			t.Errorf("ndjson: %+v", res)
		}
		r := e.reports("chat", key, "startDate=2026-11-21")[0]
		if r.value("Total Messages") != 2 || *r.NumStudentsUsed != 1 {
			t.Errorf("report after ingestion: %+v", r)
		}
		if res := ingestResult(t, e.call("POST", "/v1/events", token, "[]")); res.Accepted != 0 || res.Rejected == nil {
			t.Errorf("empty batch: %+v", res)
		}
	})
}

func TestIngestRejectionReasons(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		e.school("north", "UTC")
		token := e.token()
		long := strings.Repeat("x", 129)
		batch := `[
			{"id":"ok","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"chat.message_sent","chatType":"main"},
			{"id":"a","groupId":"south","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"chat.message_sent","chatType":"main"},
			{"id":"b","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"chat.message_sent","chatType":"main"},
			{"groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"chat.message_sent","chatType":"main"},
			{"id":"c","groupId":"north","occurredAt":"2026-11-21T10:00:00Z","kind":"chat.message_sent","chatType":"main"},
			{"id":"d","groupId":"north","studentId":"s1","kind":"chat.message_sent","chatType":"main"},
			{"id":"e","groupId":"north","studentId":"s1","occurredAt":"2026-11-21 10:00","kind":"chat.message_sent","chatType":"main"},
			{"id":"f","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T12:05:01Z","kind":"chat.message_sent","chatType":"main"},
			{"id":"g","groupId":"north","studentId":"s1","occurredAt":"1999-12-31T23:59:59Z","kind":"chat.message_sent","chatType":"main"},
			{"id":"h","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z"},
			{"id":"i","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"chat.reaction"},
			{"id":"j","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"chat.message_sent"},
			{"id":"k","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"chat.message_sent","chatType":"gossip"},
			{"id":"l","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"live_lecture.session_created","chatType":"main"},
			{"id":"` + long + `","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"live_lecture.session_created"},
			{"id":"m","groupId":"north","studentId":7,"occurredAt":"2026-11-21T10:00:00Z","kind":"live_lecture.session_created"},
			"not an object",
			{"id":"n","groupId":"north","studentId":"s1","studentName":"bad\u0007name","occurredAt":"2026-11-21T10:00:00Z","kind":"live_lecture.session_created"},
			{"id":"o","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"live_lecture.session_created","colour":"red"},
			{"id":"ok2","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T12:04:59+00:00","kind":"live_lecture.session_created"}
		]`
		res := ingestResult(t, e.call("POST", "/v1/events", token, batch))
		want := []string{
			`Unknown groupId "south"`, "Missing groupId", "Missing id", "Missing studentId", "Missing occurredAt",
			`Invalid occurredAt: expected an RFC 3339 timestamp with offset, got "2026-11-21 10:00"`,
			"Invalid occurredAt: 2026-11-21T12:05:01Z is more than 5m0s in the future",
			"Invalid occurredAt: 1999-12-31T23:59:59Z is before 2000-01-01",
			"Missing kind", `Unknown kind "chat.reaction": expected live_lecture.session_created or chat.message_sent`,
			"Missing chatType", `Unknown chatType "gossip": expected tutor_me, test, flashcard, material, live_lecture or main`,
			"Invalid chatType: only chat.message_sent events have one", "Invalid id: longer than 128 characters",
			"Invalid studentId: expected a string", "Invalid event: expected a JSON object", "Invalid studentName: contains control characters",
			`Invalid event: unknown field "colour"`,
		}
		if res.Accepted != 2 || len(res.Rejected) != len(want) {
			t.Fatalf("accepted %d, rejected %d: %+v", res.Accepted, len(res.Rejected), res.Rejected)
		}
		for i, r := range res.Rejected {
			if r.Index != i+1 || r.Reason != want[i] {
				t.Errorf("rejection %d: %d %q, want %d %q", i, r.Index, r.Reason, i+1, want[i])
			}
		}
	})
}

func TestIngestLimitsAndMalformedBodies(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		e.school("north", "UTC")
		token := e.token()
		ev := `{"id":"x","groupId":"north","studentId":"s1","occurredAt":"2026-11-21T10:00:00Z","kind":"live_lecture.session_created"}`
		tooMany := "[" + strings.TrimSuffix(strings.Repeat(ev+",", 10_001), ",") + "]"
		resp := e.call("POST", "/v1/events", token, tooMany)
		if resp.status != http.StatusRequestEntityTooLarge || resp.errorMessage(t) != "Too many events: 10001, at most 10000 per request" {
			t.Errorf("10,001 events: %d %s", resp.status, resp.body)
		}
		huge := `[{"id":"` + strings.Repeat("x", 11<<20) + `"}]`
		if resp := e.call("POST", "/v1/events", token, huge); resp.status != http.StatusRequestEntityTooLarge {
			t.Errorf("11 MiB: %d", resp.status)
		}
		for _, body := range []string{"", "[1, 2", `{"id": "x"}`, "null"} {
			resp := e.call("POST", "/v1/events", token, body)
			if resp.status != http.StatusBadRequest || !strings.HasPrefix(resp.errorMessage(t), "Invalid body") {
				t.Errorf("body %q: %d %s", body, resp.status, resp.body)
			}
		}
		// NDJSON is read as such only when sent as application/x-ndjson.
		for _, contentType := range []string{"", "text/plain", "application/json"} {
			resp := e.do("POST", "/v1/events", "", ev+"\n"+ev+"\n", "Authorization", "Bearer "+token, "Content-Type", contentType)
			if want := "Invalid body: expected a JSON array of events, or NDJSON with Content-Type application/x-ndjson"; resp.status != http.StatusBadRequest || resp.errorMessage(t) != want {
				t.Errorf("NDJSON sent as %q: %d %s, want a 400 saying %q", contentType, resp.status, resp.body, want)
			}
		}
	})
}

// TestIngestRacingBatchesCountEachEventOnce: two clients send overlapping
// batches at once; every distinct event is counted once.
func TestIngestRacingBatchesCountEachEventOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		token := e.token()
		const distinct = 600
		batches := make([][]platform.EventInput, 8)
		for b := range batches {
			for i := range 200 {
				n := (b*150 + i) % distinct // neighbouring batches share 50 ids
				ev := message("north", fmt.Sprintf("s%d", n%17), "tutor_me", "2026-11-20T10:00:00Z")
				ev.ID = fmt.Sprintf("e%04d", n)
				batches[b] = append(batches[b], ev)
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted := 0
		for round := range 2 { // the second round re-sends everything
			for b := range batches {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res := ingestResult(t, e.call("POST", "/v1/events", token, eventsJSON(batches[(b+round)%len(batches)]...)))
					mu.Lock()
					accepted += res.Accepted
					mu.Unlock()
				}()
			}
			wg.Wait()
		}
		if accepted != distinct {
			t.Errorf("accepted %d in all, want %d", accepted, distinct)
		}
		if got := e.reports("chat", key, "startDate=2026-11-20")[0].value("Tutor Me Messages"); got != distinct {
			t.Errorf("report counts %d, want %d", got, distinct)
		}
	})
}

// TestAdminAPI walks every admin endpoint the way an operator would.
func TestAdminAPI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s storetest.Stores) {
		e := newEnvWith(t, s, func(c *httpapi.Config) { c.WarehouseDir = t.TempDir() })
		token := e.token()
		g := e.mustCall("POST", "/v1/admin/groups", token, `{"id": "north", "name": "Northside", "timeZone": "America/New_York"}`, 201)
		if g["id"] != "north" || g["timeZone"] != "America/New_York" {
			t.Errorf("created group: %v", g)
		}
		e.mustCall("POST", "/v1/admin/groups", token, `{"id": "south"}`, 201)
		if groups := e.mustCall("GET", "/v1/admin/groups", token, "", 200)["groups"].([]any); len(groups) != 2 {
			t.Errorf("groups: %v", groups)
		}
		if got := e.mustCall("GET", "/v1/admin/groups/south", token, "", 200); got["timeZone"] != "UTC" || got["name"] != "south" {
			t.Errorf("south: %v", got)
		}
		if got := e.mustCall("PATCH", "/v1/admin/groups/south", token, `{"name": "Southside"}`, 200); got["name"] != "Southside" || got["timeZone"] != "UTC" {
			t.Errorf("renamed south: %v", got)
		}
		if resp := e.call("PATCH", "/v1/admin/groups/south", token, `{"name": ""}`); resp.status != 400 || resp.errorMessage(t) != "Missing name" {
			t.Errorf("an empty name: %d %s", resp.status, resp.body)
		}
		plan := e.mustCall("POST", "/v1/admin/groups/north/plans", token, `{"start": "2025-01-01", "end": "2026-12-31"}`, 201)
		if plan["start"] != "2025-01-01T05:00:00.000Z" || plan["end"] != "2027-01-01T05:00:00.000Z" || plan["validNow"] != true ||
			plan["firstDay"] != "2025-01-01" || plan["lastDay"] != "2026-12-31" {
			t.Errorf("plan: %v", plan)
		}
		created := e.mustCall("POST", "/v1/admin/groups/north/keys", token, `{"label": "dashboard"}`, 201)
		key := created["key"].(string)
		if !strings.HasPrefix(key, created["prefix"].(string)) {
			t.Errorf("created key: %v", created)
		}
		e.mustCall("POST", "/v1/admin/groups/north/students", token, `{"id": "s1", "name": "Ada"}`, 201)
		e.mustCall("POST", "/v1/admin/groups/north/students", token, `{"id": "s2", "name": "Bea"}`, 201)
		e.mustCall("PATCH", "/v1/admin/groups/north/students/s2", token, `{"name": "Beatrice"}`, 200)
		students := e.mustCall("GET", "/v1/admin/groups/north/students", token, "", 200)["students"].([]any)
		if len(students) != 2 || students[1].(map[string]any)["name"] != "Beatrice" {
			t.Errorf("students: %v", students)
		}
		const recipients = "/v1/admin/groups/north/digest-recipients"
		e.mustCall("POST", recipients, token, `{"address": "head@north.example"}`, 201)
		e.mustCall("POST", recipients, token, `{"address": "staff@north.example"}`, 201)
		e.mustCall("DELETE", recipients+"/staff@north.example", token, "", 204)
		if list := e.mustCall("GET", recipients, token, "", 200)["recipients"].([]any); len(list) != 1 {
			t.Errorf("recipients: %v", list)
		}
		rs, err := e.platform.Directory.Recipients(ctx, "north")
		if err != nil || len(rs) != 1 {
			t.Fatalf("recipients: %v, %v", rs, err)
		}
		for _, method := range []string{"GET", "POST"} { // the page, then its button
			if resp := e.do(method, "/unsubscribe?token="+rs[0].Token, "", ""); resp.status != 200 {
				t.Errorf("%s /unsubscribe: %d", method, resp.status)
			}
		}
		if reps := e.reports("live-lecture", key, ""); len(reps) != 1 {
			t.Errorf("the new key reads %d group reports, want 1", len(reps))
		}
		if reps := e.reports("chat", key, "students=true"); len(reps) != 2 {
			t.Errorf("the new key reads %d student reports, want 2", len(reps))
		}
		keys := e.keysOnceUsed("north", token)
		if len(keys) != 1 || keys[0].(map[string]any)["lastUsedAt"] == nil || keys[0].(map[string]any)["key"] != nil {
			t.Errorf("keys: %v", keys)
		}
		e.mustCall("DELETE", "/v1/admin/groups/north/students/s1", token, "", 204)
		e.mustCall("DELETE", "/v1/admin/groups/north/keys/"+created["id"].(string), token, "", 204)
		if resp := e.reportRequest("chat", key, "", ""); resp.status != http.StatusForbidden {
			t.Errorf("revoked key: %d", resp.status)
		}
		key2 := e.mustCall("POST", "/v1/admin/groups/north/keys", token, `{}`, 201)["key"].(string)
		id := fmt.Sprint(plan["id"])
		cancelled := e.mustCall("POST", "/v1/admin/groups/north/plans/"+id+"/cancel", token, "", 200)
		if cancelled["cancelledAt"] == nil || cancelled["validNow"] != false {
			t.Errorf("cancelled plan: %v", cancelled)
		}
		if resp := e.reportRequest("chat", key2, "", ""); resp.status != http.StatusForbidden {
			t.Errorf("key of a group whose plan was cancelled: %d", resp.status)
		}
		if plans := e.mustCall("GET", "/v1/admin/groups/north/plans", token, "", 200)["plans"].([]any); len(plans) != 1 {
			t.Errorf("plans: %v", plans)
		}
		// An open-ended plan has no last day; one that ends at a time
		// has the day that time falls on (New York) as its last.
		if open := e.mustCall("POST", "/v1/admin/groups/north/plans", token, `{"start": "2026-01-01"}`, 201); open["firstDay"] != "2026-01-01" || open["lastDay"] != nil {
			t.Errorf("an open-ended plan: %v", open)
		}
		if timed := e.mustCall("POST", "/v1/admin/groups/north/plans", token, `{"start": "2026-01-01T12:00:00Z", "end": "2026-02-01T03:00:00Z"}`, 201); timed["firstDay"] != "2026-01-01" || timed["lastDay"] != "2026-01-31" {
			t.Errorf("a plan of RFC 3339 times: %v", timed)
		}
		if plans := e.mustCall("GET", "/v1/admin/groups/north/plans", token, "", 200)["plans"].([]any); len(plans) != 3 || plans[1].(map[string]any)["lastDay"] != nil {
			t.Errorf("plans: %v", plans)
		}

		errorsWanted := []struct {
			method, path, body string
			status             int
			message            string
		}{
			{"POST", "/v1/admin/groups", `{"id": "north"}`, 409, `Group "north" already exists`},
			{"POST", "/v1/admin/groups", `{"id": "x", "timeZone": "Nowhere/City"}`, 400, `Invalid timeZone "Nowhere/City": expected an IANA time zone such as Europe/Berlin`},
			{"POST", "/v1/admin/groups", `{"id": "x", "zone": "UTC"}`, 400, `Invalid body: unknown field "zone"`},
			{"POST", "/v1/admin/groups", `{"id": 5}`, 400, "Invalid id: expected a string"},
			{"POST", "/v1/admin/groups", `[]`, 400, "Invalid body: expected a JSON object"},
			{"GET", "/v1/admin/groups/nope", "", 404, `Group "nope" not found`},
			{"GET", "/v1/admin/groups/nope/keys", "", 404, `Group "nope" not found`},
			{"POST", "/v1/admin/groups/nope/keys", `{}`, 404, `Group "nope" not found`},
			{"POST", "/v1/admin/groups/nope/plans", `{}`, 404, `Group "nope" not found`},
			{"POST", "/v1/admin/groups/north/plans", `{"start": "soon"}`, 400, `Invalid start: expected a date (2025-09-01) or an RFC 3339 timestamp, got "soon"`},
			{"POST", "/v1/admin/groups/north/plans/99/cancel", "", 404, `Plan 99 of group "north" not found`},
			{"POST", "/v1/admin/groups/north/plans/abc/cancel", "", 404, `Plan "abc" of group "north" not found`},
			{"DELETE", "/v1/admin/groups/north/keys/key_nope", "", 404, `Key "key_nope" of group "north" not found`},
			{"POST", "/v1/admin/groups/north/students", `{"id": "s2", "name": "Again"}`, 409, `Student "s2" already exists in group "north"`},
			{"POST", "/v1/admin/groups/north/students", `{"id": "s3"}`, 400, "Missing studentName"},
			{"POST", "/v1/admin/groups/nope/students", `{"id": "s3", "name": "X"}`, 404, `Group "nope" not found`},
			{"PATCH", "/v1/admin/groups/north/students/s1", `{"name": "Ghost"}`, 404, `Student "s1" not found in group "north"`},
			{"DELETE", "/v1/admin/groups/north/students/s9", "", 404, `Student "s9" not found in group "north"`}, // s1, erased, answers 204 again (TestDeletionReceipts)
			{"DELETE", "/v1/admin/groups/south/students/s2", "", 404, `Student "s2" not found in group "south"`},
			{"PUT", "/v1/admin/groups", "", 405, "Method not allowed"},
		}
		for _, w := range errorsWanted {
			resp := e.call(w.method, w.path, token, w.body)
			if resp.status != w.status || resp.errorMessage(t) != w.message {
				t.Errorf("%s %s %s: %d %s, want %d %s", w.method, w.path, w.body, resp.status, resp.body, w.status, w.message)
			}
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			e.do("GET", path, "", "")
		}
		e.do("GET", "/openapi.json", "", "")
		ingestResult(t, e.call("POST", "/v1/events", token, eventsJSON(session("north", "s2", "2026-11-21T10:00:00Z"))))
		staffAndProvidersTour(e, token)
		checkEveryOperationAnswered(t)
	})
}

// staffAndProvidersTour calls each staff, sign-in provider, LTI platform
// and warehouse operation once with success (TestStaff,
// TestSignInProviders and the others try them whole; their files run
// after this one).
func staffAndProvidersTour(e *testEnv, token string) {
	e.district("tour", "UTC", "north")
	if r := e.do("POST", "/signout", "", ""); r.status != http.StatusNoContent {
		e.t.Errorf("POST /signout without a session: %d %s, want 204", r.status, r.body)
	}
	for owner, role := range map[string]string{"/v1/admin/groups/north": "school-admin", "/v1/admin/districts/tour": "district-admin"} {
		m := e.mustCall("POST", owner+"/staff", token, `{"email": "tour@north.example", "role": "`+role+`"}`, http.StatusCreated)
		e.mustCall("GET", owner+"/staff", token, "", http.StatusOK)
		e.mustCall("DELETE", "/v1/admin/staff/"+m["id"].(string), token, "", http.StatusNoContent)
		id := "tour-" + role
		e.mustCall("POST", owner+"/sign-in-providers", token, `{"id": "`+id+`", "issuer": "https://idp.example", "clientId": "a", "clientSecret": "b", "emailDomains": ["north.example"], "skipDiscovery": true}`, http.StatusCreated)
		e.mustCall("GET", owner+"/sign-in-providers", token, "", http.StatusOK)
		e.mustCall("DELETE", "/v1/admin/sign-in-providers/"+id, token, "", http.StatusNoContent)
		e.mustCall("POST", owner+"/lti-platforms", token, `{"id": "`+id+`", "issuer": "https://lms.example/`+id+`", "clientId": "a", "deploymentIds": ["d"],
			"authUrl": "https://lms.example/auth", "tokenUrl": "https://lms.example/token", "jwksUrl": "https://lms.example/jwks"}`, http.StatusCreated)
		e.mustCall("GET", owner+"/lti-platforms", token, "", http.StatusOK)
		e.mustCall("DELETE", "/v1/admin/lti-platforms/"+id, token, "", http.StatusNoContent)
		e.mustCall("POST", owner+"/warehouses", token, `{"id": "`+id+`", "folder": "`+id+`"}`, http.StatusCreated)
		e.mustCall("GET", owner+"/warehouses", token, "", http.StatusOK)
		e.mustCall("GET", "/v1/admin/warehouses/"+id, token, "", http.StatusOK)
		e.mustCall("POST", "/v1/admin/warehouses/"+id+"/backfill", token, `{"startDate": "2026-11-01", "endDate": "2026-11-02"}`, http.StatusAccepted)
		e.mustCall("DELETE", "/v1/admin/warehouses/"+id, token, "", http.StatusNoContent)
	}
	if r := e.do("GET", "/api/warehouse-files?startDate=2026-11-01&endDate=2026-11-02", e.key("north"), ""); r.status != http.StatusOK {
		e.t.Errorf("GET /api/warehouse-files: %d %s", r.status, r.body)
	}
}

// checkEveryOperationAnswered fails unless every operation of the document
// has answered a documented success, checked against its schema.
func checkEveryOperationAnswered(t *testing.T) {
	d := openAPI()
	d.mu.Lock()
	defer d.mu.Unlock()
	for tpl, ops := range d.doc["paths"].(map[string]any) {
		for method, op := range ops.(map[string]any) {
			ok := false
			for status := range op.(map[string]any)["responses"].(map[string]any) {
				if status[0] == '2' && d.seen[strings.ToUpper(method)+" "+tpl+" "+status] {
					ok = true
				}
			}
			if !ok {
				t.Errorf("openapi: no test got a success from %s %s", strings.ToUpper(method), tpl)
			}
		}
	}
}

// TestDeleteStudentErasesUsage: group totals drop by exactly that student's counts.
func TestDeleteStudentErasesUsage(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "Europe/Berlin")
		token := e.token()
		var events []platform.EventInput
		for i := range 300 {
			ct := []string{"tutor_me", "test", "live_lecture", "main"}[i%4]
			at := fmt.Sprintf("2025-%02d-%02dT%02d:30:00Z", 1+i%12, 1+i%28, i%24)
			events = append(events, message("north", fmt.Sprintf("s%d", i%7), ct, at))
			if i%3 == 0 {
				events = append(events, session("north", fmt.Sprintf("s%d", i%5), at))
			}
		}
		e.send(events...)
		query := "startDate=2025-01-01&endDate=2025-12-31"
		before := map[string]report{"live-lecture": e.reports("live-lecture", key, query)[0], "chat": e.reports("chat", key, query)[0]}
		share := map[string]report{}
		for _, endpoint := range []string{"live-lecture", "chat"} {
			for _, r := range e.reports(endpoint, key, query+"&students=true") {
				if *r.StudentID == "s3" {
					share[endpoint] = r
				}
			}
		}
		e.mustCall("DELETE", "/v1/admin/groups/north/students/s3", token, "", 204)
		for _, endpoint := range []string{"live-lecture", "chat"} {
			after := e.reports(endpoint, key, query)[0]
			for _, m := range before[endpoint].Data {
				if got, want := after.value(m.Title), m.Value-share[endpoint].value(m.Title); got != want {
					t.Errorf("%s %s after deletion: %d, want %d", endpoint, m.Title, got, want)
				}
			}
			if *after.NumStudentsUsed != *before[endpoint].NumStudentsUsed-1 {
				t.Errorf("%s numStudentsUsed: %d, want %d", endpoint, *after.NumStudentsUsed, *before[endpoint].NumStudentsUsed-1)
			}
			for _, r := range e.reports(endpoint, key, query+"&students=true&interval=month") {
				if *r.StudentID == "s3" {
					t.Fatalf("%s still reports the deleted student", endpoint)
				}
			}
		}
	})
}

// TestLargeBatchCountsEachEventOnce sends batches big enough for
// PostgreSQL's COPY path, with ids repeated inside the batch and ids
// stored before.
func TestLargeBatchCountsEachEventOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		token := e.token()
		event := func(n int) platform.EventInput {
			ev := message("north", fmt.Sprintf("s%03d", n%150), []string{"tutor_me", "main", "test"}[n%3],
				fmt.Sprintf("2026-10-%02dT10:00:00Z", 1+n%31))
			ev.ID = fmt.Sprintf("big-%05d", n)
			return ev
		}
		var first []platform.EventInput
		for n := range 500 {
			first = append(first, event(n))
		}
		ingestResult(t, e.call("POST", "/v1/events", token, eventsJSON(first...)))
		var big []platform.EventInput
		for n := range 3000 {
			big = append(big, event(n)) // 0..499 were stored before
		}
		big = append(big, big[1000:1200]...) // repeated within the batch
		res := ingestResult(t, e.call("POST", "/v1/events", token, eventsJSON(big...)))
		if res.Accepted != 2500 || res.Duplicates != 700 {
			t.Errorf("large batch: %+v, want 2500 accepted and 700 duplicates", res)
		}
		r := e.reports("chat", key, "startDate=2026-10-01&endDate=2026-10-31")[0]
		if r.value("Total Messages") != 3000 || r.value("Main Chat Messages") != 1000 || *r.NumStudentsUsed != 150 {
			t.Errorf("report after the large batch: %+v", r)
		}
		res = ingestResult(t, e.call("POST", "/v1/events", token, eventsJSON(big...)))
		if res.Accepted != 0 || res.Duplicates != len(big) {
			t.Errorf("the same large batch again: %+v", res)
		}
	})
}
