package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	reportengine "groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
)

// FuzzAdminPathsAndEventIDs: any string as a group, student, key or plan id
// in an admin path, or as the ids of an event, gets an answer below 500
// in the error body's form, from SQLite and from PostgreSQL alike.
func FuzzAdminPathsAndEventIDs(f *testing.F) {
	for _, seed := range []string{"north", "a\x00", "\xff\xfe", "\xed\xa0\x80", " ", "", "..", "%", "a/b", "north\x00", strings.Repeat("x", 200), "key_abc", "1"} {
		f.Add(seed)
	}
	type target struct{ base, token string }
	var targets []target
	for _, dialect := range []string{"sqlite", "postgres"} {
		store := storetest.Open(f, dialect)
		p := platform.New(store, store)
		if _, err := p.CreateGroup(ctx, "north", "North", "UTC"); err != nil {
			f.Fatal(err)
		}
		_, token, err := p.CreateToken(ctx, "fuzz")
		if err != nil {
			f.Fatal(err)
		}
		srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: reportengine.NewEngine(store, store), Platform: platform.New(store, store), Ready: store.Ping,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
		f.Cleanup(srv.Close)
		targets = append(targets, target{srv.URL, token})
	}
	f.Fuzz(func(t *testing.T, id string) {
		seg := url.PathEscape(id)
		event, _ := json.Marshal([]map[string]string{{"id": id, "groupId": id, "studentId": id, "studentName": id,
			"occurredAt": "2026-11-20T10:00:00Z", "kind": "live_lecture.session_created"},
			{"id": id, "groupId": "north", "studentId": id, "occurredAt": "2026-11-20T10:00:00Z", "kind": "live_lecture.session_created"}})
		for _, tg := range targets {
			for _, req := range []struct{ method, path, body string }{
				{"GET", "/v1/admin/groups/" + seg, ""},
				{"GET", "/v1/admin/groups/" + seg + "/plans", ""},
				{"GET", "/v1/admin/groups/" + seg + "/keys", ""},
				{"POST", "/v1/admin/groups/" + seg + "/plans/" + seg + "/cancel", ""},
				{"DELETE", "/v1/admin/groups/north/keys/" + seg, ""},
				{"DELETE", "/v1/admin/groups/north/students/" + seg, ""},
				{"PATCH", "/v1/admin/groups/north/students/" + seg, `{"name": "X"}`},
				{"POST", "/v1/events", string(event)},
			} {
				r, err := http.NewRequest(req.method, tg.base+req.path, strings.NewReader(req.body))
				if err != nil {
					continue // not a URL a client can send
				}
				r.Header.Set("Authorization", "Bearer "+tg.token)
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatalf("%s %s: %v", req.method, req.path, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var answer map[string]any
				if resp.StatusCode >= 500 || resp.StatusCode >= 400 && (json.Unmarshal(body, &answer) != nil || answer["error"] == nil) {
					t.Fatalf("%s %s on %s: %d %s", req.method, req.path, tg.base, resp.StatusCode, body)
				}
			}
		}
	})
}
