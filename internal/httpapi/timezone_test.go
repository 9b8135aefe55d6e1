package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/platform"
)

// TestTimeZoneChangeRacingIngestion changes a school's time zone three
// times while two clients send events near midnight, then checks every
// daily student report against a school created in the last zone and
// sent the same events: the rollups were rebuilt in each new zone, and
// no event racing a change was cut in the old one.
func TestTimeZoneChangeRacingIngestion(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		token := e.token()
		var mu sync.Mutex
		var sent []platform.EventInput
		stop := make(chan struct{})
		var writers sync.WaitGroup
		for c := range 2 {
			writers.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), 1))
				for b := 0; ; b++ {
					select {
					case <-stop:
						return
					default:
					}
					var batch []platform.EventInput
					for j := range 20 {
						// Around midnight in UTC, Tokyo or Los Angeles.
						at := time.Date(2026, 11, 10+rng.IntN(10), []int{0, 15, 8}[rng.IntN(3)], rng.IntN(60), 0, 0, time.UTC).Add(-30 * time.Minute)
						ev := message("north", fmt.Sprintf("s%d", rng.IntN(8)), "main", at.Format(time.RFC3339))
						ev.ID = fmt.Sprintf("w%d-%d-%d", c, b, j)
						batch = append(batch, ev)
					}
					resp := e.call("POST", "/v1/events", token, eventsJSON(batch...))
					var res platform.IngestResult
					if resp.status != http.StatusOK || json.Unmarshal(resp.body, &res) != nil || res.Accepted != len(batch) {
						t.Errorf("batch %d-%d: %d %s", c, b, resp.status, resp.body)
						return
					}
					mu.Lock()
					sent = append(sent, batch...)
					mu.Unlock()
				}
			})
		}
		for _, zone := range []string{"Asia/Tokyo", "America/Los_Angeles", "Asia/Tokyo"} {
			time.Sleep(50 * time.Millisecond)
			got := e.mustCall("PATCH", "/v1/admin/groups/north", token, fmt.Sprintf(`{"timeZone": %q}`, zone), http.StatusOK)
			if got["timeZone"] != zone {
				t.Errorf("PATCH timeZone %s: %v", zone, got)
			}
		}
		time.Sleep(50 * time.Millisecond)
		close(stop)
		writers.Wait()
		t.Logf("%d events sent across three changes of zone", len(sent))

		refKey := e.school("ref", "Asia/Tokyo")
		for i := range sent {
			sent[i].GroupID = "ref"
		}
		for start := 0; start < len(sent); start += 1000 {
			e.send(sent[start:min(start+1000, len(sent))]...)
		}
		const query = "startDate=2026-11-09&endDate=2026-11-21&interval=day&students=true"
		for _, ep := range []string{"chat", "live-lecture"} {
			if got, want := e.reports(ep, key, query), e.reports(ep, refKey, query); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the school whose zone changed differs from one made in the zone", ep)
			}
		}
		if resp := e.call("PATCH", "/v1/admin/groups/north", token, `{"timeZone": "Mars/Olympus"}`); resp.status != 400 {
			t.Errorf("an unknown zone: %d %s", resp.status, resp.body)
		}
		if resp := e.call("PATCH", "/v1/admin/groups/north", token, `{}`); resp.status != 400 || resp.errorMessage(t) != "Invalid body: give one or more of name, timeZone, minCellSize, retention and inactiveAfter" {
			t.Errorf("an empty change: %d %s", resp.status, resp.body)
		}
	})
}
