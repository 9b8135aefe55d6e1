package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"groupanalytics/internal/bench"
)

// chatTypes of the concurrency test, by id: an event's content is a
// function of its id, so every copy of an id is the same event.
var chatTypes = []string{"tutor_me", "test", "flashcard", "material", "live_lecture", "main"}

func eventOf(n int) map[string]string {
	return map[string]string{
		"id": fmt.Sprintf("ev%05d", n), "groupId": "busy", "studentId": fmt.Sprintf("s%02d", n%13),
		"occurredAt": fmt.Sprintf("2026-03-%02dT%02d:%02d:00Z", 1+n%28, n%24, n%60), "kind": "chat.message_sent",
		"chatType": chatTypes[n%6],
	}
}

// TestTwoServersIngestConcurrently: two server processes on one
// PostgreSQL, four clients each, sending overlapping batches at once; the
// totals equal a brute-force count of the distinct events.
func TestTwoServersIngestConcurrently(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two server processes")
	}
	bin := buildBinary(t)
	for _, kind := range []string{"postgres", "clickhouse"} {
		t.Run(kind, func(t *testing.T) { twoServersIngest(t, bin, storeKinds[kind](t)) })
	}
}

func twoServersIngest(t *testing.T, bin string, stores []string) {
	key, token := setupGroup(t, bin, stores, "busy")
	servers := []*bench.Server{startServer(t, bin, stores), startServer(t, bin, stores)}

	const idSpace = 6000
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := map[int]bool{}
	acceptedTotal := 0
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			base := servers[c%2].Base
			for range 15 {
				var batch []map[string]string
				var ids []int
				for range 300 {
					n := rng.IntN(idSpace)
					batch = append(batch, eventOf(n))
					ids = append(ids, n)
				}
				body, _ := json.Marshal(batch)
				accepted, _, err := postEvents(base, token, body)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acceptedTotal += accepted
				for _, n := range ids {
					sent[n] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	want := map[string]map[string]int64{}
	for n := range sent {
		ev := eventOf(n)
		if want[ev["studentId"]] == nil {
			want[ev["studentId"]] = map[string]int64{}
		}
		want[ev["studentId"]][ev["chatType"]]++
	}
	if acceptedTotal != len(sent) {
		t.Errorf("the servers accepted %d events in all, want %d distinct", acceptedTotal, len(sent))
	}
	for _, srv := range servers {
		got := studentChatCounts(t, srv.Base, key)
		for student, byType := range want {
			for ct, n := range byType {
				if got[student][ct] != n {
					t.Errorf("%s: %s %s = %d, want %d", srv.Base, student, ct, got[student][ct], n)
				}
			}
		}
	}
	t.Logf("%d distinct events of %d sent, through two servers", len(sent), 8*15*300)
}

var chatTitles = map[string]string{"Tutor Me Messages": "tutor_me", "Test Messages": "test", "Flashcard Messages": "flashcard",
	"Material Messages": "material", "Live Lecture Messages": "live_lecture", "Main Chat Messages": "main"}

// studentChatCounts returns each student's message count by chat type.
func studentChatCounts(t *testing.T, base, key string) map[string]map[string]int64 {
	t.Helper()
	counts := map[string]map[string]int64{}
	for student, values := range studentReports(t, base, key, "startDate=2026-03-01&endDate=2026-03-31") {
		counts[student] = map[string]int64{}
		for title, ct := range chatTitles {
			counts[student][ct] = values[title]
		}
	}
	return counts
}
