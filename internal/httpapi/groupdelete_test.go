package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

// TestDeleteGroupRacingIngestion deletes a school while four clients send
// batches holding events of it and of another school. Every batch sent
// after the delete answered has its events of the deleted school
// refused; nothing of that school is left in any table of any store
// (every ClickHouse replica included); the other school counts every
// event it was acknowledged, as a brute force over the answers says; and
// a new school under the same id starts from nothing.
func TestDeleteGroupRacingIngestion(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			var dsn, usage string
			var s storetest.Stores
			if kind == "clickhouse" {
				dsn, usage = storetest.NewPostgresDatabase(t), storetest.NewClickHouseURL(t)
				s = storetest.OpenClickHouse(t, dsn, usage)
			} else {
				dsn = storetest.NewDSN(t, kind)
				s = storetest.SQL(storetest.OpenDSN(t, dsn))
			}
			e := newEnv(t, s)
			e.school("north", "Europe/Berlin")
			southKey := e.school("south", "UTC")
			token := e.token()
			e.mustCall("POST", "/v1/admin/groups/north/digest-recipients", token, `{"address": "head@north.example"}`, 201)

			type answer struct {
				sentAfterDelete bool
				result          platform.IngestResult
			}
			var deleted atomic.Bool
			var mu sync.Mutex
			var answers []answer
			var acked atomic.Int64
			stop := make(chan struct{})
			var writers sync.WaitGroup
			for c := range 4 {
				writers.Go(func() {
					for b := 0; ; b++ {
						select {
						case <-stop:
							return
						default:
						}
						var batch []platform.EventInput
						for j := range 10 {
							for _, g := range []string{"north", "south"} {
								ev := message(g, fmt.Sprintf("s%d", j), "main", "2026-11-20T10:00:00Z")
								ev.ID = fmt.Sprintf("w%d-%d-%d", c, b, j)
								batch = append(batch, ev)
							}
						}
						after := deleted.Load()
						req, _ := http.NewRequest("POST", e.server.URL+"/v1/events", bytes.NewReader([]byte(eventsJSON(batch...))))
						req.Header.Set("Authorization", "Bearer "+token)
						resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
						if err != nil {
							t.Error(err)
							return
						}
						var res platform.IngestResult
						err = json.NewDecoder(resp.Body).Decode(&res)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK || err != nil {
							t.Errorf("batch %d-%d: status %d, %v", c, b, resp.StatusCode, err)
							return
						}
						mu.Lock()
						answers = append(answers, answer{after, res})
						mu.Unlock()
						acked.Add(1)
					}
				})
			}
			for deadline := time.Now().Add(time.Minute); acked.Load() < 12; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					close(stop)
					writers.Wait()
					t.Fatal("twelve batches were not acknowledged within a minute")
				}
			}
			e.mustCall("DELETE", "/v1/admin/groups/north", token, "", http.StatusNoContent)
			deleted.Store(true)
			for at := acked.Load(); acked.Load() < at+12 && !t.Failed(); time.Sleep(time.Millisecond) {
			}
			close(stop)
			writers.Wait()

			var refusedAfter, batchesAfter int
			for _, a := range answers {
				for _, r := range a.result.Rejected {
					if r.Reason != `Unknown groupId "north"` || r.Index%2 != 0 {
						t.Fatalf("rejected %+v", r)
					}
				}
				if a.sentAfterDelete {
					batchesAfter++
					refusedAfter += len(a.result.Rejected)
					if len(a.result.Rejected) != 10 || a.result.Accepted != 10 {
						t.Errorf("a batch sent after the delete: %+v, want north's 10 events refused and south's 10 stored", a.result)
					}
				}
			}
			t.Logf("%d batches, %d sent after the delete answered (%d events of north refused)", len(answers), batchesAfter, refusedAfter)
			if left := storetest.GroupRows(t, dsn, usage, "north"); len(left) > 0 {
				t.Errorf("rows of the deleted group are left: %v", left)
			}
			// South's events of every acknowledged batch are new: the brute
			// force is ten per answer.
			if got := e.reports("chat", southKey, "startDate=2026-11-20&endDate=2026-11-20&students=true"); len(got) != 10 {
				t.Errorf("south has %d students, want 10", len(got))
			}
			if got := e.reports("chat", southKey, "startDate=2026-11-20&endDate=2026-11-20")[0].value("Total Messages"); got != int64(10*len(answers)) {
				t.Errorf("south counts %d messages, want %d (10 per acknowledged batch)", got, 10*len(answers))
			}

			if resp := e.call("GET", "/v1/admin/groups/north", token, ""); resp.status != http.StatusNotFound {
				t.Errorf("GET the deleted group: %d", resp.status)
			}
			if resp := e.call("GET", "/v1/admin/groups/north/digest-recipients", token, ""); resp.status != http.StatusNotFound {
				t.Errorf("the deleted group's recipients: %d", resp.status)
			}

			// A write that checked its groups before the delete, and takes
			// the lock after it, stores nothing of the deleted one.
			late := func(group, id string) analytics.Event {
				at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
				return analytics.Event{GroupID: group, ID: id, StudentID: "late", OccurredAt: at, Day: analytics.DayOf(at, time.UTC), Metric: analytics.MainChatMessages}
			}
			res, err := s.Usage.AppendEvents(ctx, []analytics.Event{late("north", "late-1"), late("south", "late-1")})
			if err != nil || res.Accepted != 1 || len(res.Gone) != 1 || res.Gone[0] != "north" {
				t.Errorf("a late write: %+v, %v; want south's event stored and north gone", res, err)
			}

			// The id again: a new group, which starts from nothing, and
			// whose writes are counted alone as they pass the old one's.
			newKey := e.school("north", "Europe/Berlin")
			for i := range 30 {
				ev := message("north", "n1", "main", "2026-11-20T10:00:00Z")
				ev.ID = fmt.Sprintf("new-%d", i)
				e.send(ev)
				if got := e.reports("chat", newKey, "startDate=2026-11-20&endDate=2026-11-20")[0].value("Total Messages"); got != int64(i+1) {
					t.Fatalf("the new north after %d events counts %d", i+1, got)
				}
			}
		})
	}
}
