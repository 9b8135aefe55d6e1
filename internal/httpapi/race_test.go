package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

// The race test: writers ingest overlapping batches (re-sent ids, names
// that change from one copy to the next) through two servers, each with a
// store of its own on one database, as two processes would have, while
// others erase students, enrol them again and rebuild the rollups. After
// each round settles, every report must equal a brute-force count over the
// events that the answers acknowledged and no erasure took back.

const (
	raceStudents = 8
	raceIDs      = 300 // event ids per round
	// Events from contestBase on belong to one student per round, whom
	// the round's contest sends for and erases at the same time, and no
	// one sends for after.
	contestBase = 1_000_000
)

// raceEvent is event n of a round: its content is a function of its id, so
// that every copy of an id is the same event (only the name sent varies).
func raceEvent(id string, n int) platform.EventInput {
	in := platform.EventInput{ID: id, GroupID: "race", StudentID: raceStudent(n),
		OccurredAt: fmt.Sprintf("2026-03-%02dT%02d:%02d:00Z", 1+n%5, n%24, n%60)}
	if n%4 == 0 {
		in.Kind = "live_lecture.session_created"
	} else {
		in.Kind = "chat.message_sent"
		in.ChatType = chatTypeNames[n%6]
	}
	return in
}

func raceStudent(n int) string {
	if n >= contestBase {
		return fmt.Sprintf("t%d", (n-contestBase)/raceIDs)
	}
	return fmt.Sprintf("s%d", n%raceStudents)
}

var chatTypeNames = []string{"tutor_me", "test", "flashcard", "material", "live_lecture", "main"}

// raceOp is one request of the race and when it ran.
type raceOp struct {
	kind       string // "ingest", "erase", "enrol" or "rebuild"
	ids        []int  // ingest: the events sent
	student    string // erase, enrol
	start, end time.Time
	acked      bool // the answer said it was done
}

// raceLog collects the operations of every round.
type raceLog struct {
	mu  sync.Mutex
	ops []raceOp
	ids map[int]string // event n -> id
}

func (l *raceLog) add(op raceOp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
}

func TestRacingWritersStayExact(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			// Two processes' stores on one database.
			var open func() storetest.Stores
			var raw func() map[string]string
			if kind == "clickhouse" {
				dsn, usage := storetest.NewPostgresDatabase(t), storetest.NewClickHouseURL(t)
				open = func() storetest.Stores { return storetest.OpenClickHouse(t, dsn, usage) }
				third := open()
				raw = func() map[string]string {
					// What the write-behind log holds first, as a report does.
					if _, err := third.Usage.Settle(ctx, "race"); err != nil {
						t.Fatal(err)
					}
					return storetest.RawClickHouseEvents(t, usage, "race")
				}
			} else {
				dsn := storetest.NewDSN(t, kind)
				open = func() storetest.Stores { return storetest.SQL(storetest.OpenDSN(t, dsn)) }
				raw = func() map[string]string { return storetest.RawEvents(t, dsn, "race") }
			}
			// Student reports' sums kept for a group of any size (sums.go),
			// so that each process checks them against the other's writes.
			keepSums := func(c *httpapi.Config) { c.Engine.KeepSumsFrom = 0 }
			envs := []*testEnv{newEnvWith(t, open(), keepSums), newEnvWith(t, open(), keepSums)}
			key := envs[0].school("race", "UTC")
			token := envs[0].token()
			log := &raceLog{ids: map[int]string{}}
			deadline := time.Now().Add(40 * time.Second)
			rounds := 0
			for round := 0; round < 8 && time.Now().Before(deadline); round++ {
				runRaceRound(t, envs, log, token, round)
				checkRace(t, envs[round%2], raw, key, token, log)
				rounds++
				if t.Failed() {
					t.Fatalf("round %d failed", round)
				}
			}
			t.Logf("%d rounds, %d operations", rounds, len(log.ops))
		})
	}
}

func runRaceRound(t *testing.T, envs []*testEnv, log *raceLog, token string, round int) {
	auth := []string{"Authorization", "Bearer " + token}
	var wg sync.WaitGroup
	timed := func(op raceOp, do func() bool) {
		op.start = time.Now()
		op.acked = do()
		op.end = time.Now()
		log.add(op)
	}
	erase := func(e *testEnv, student string) {
		timed(raceOp{kind: "erase", student: student}, func() bool {
			resp := e.do("DELETE", "/v1/admin/groups/race/students/"+student, "", "", auth...)
			if resp.status != http.StatusNoContent && resp.status != http.StatusNotFound {
				t.Errorf("DELETE %s: %d %s", student, resp.status, resp.body)
			}
			return true
		})
	}
	// Ingestion: four clients, alternating servers; some ids re-sent from
	// earlier rounds, every copy with a name of its own or none.
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(round), uint64(c)))
			for b := range 12 {
				var batch []platform.EventInput
				var ids []int
				for range 40 {
					n := round*raceIDs + rng.IntN(raceIDs)
					if round > 0 && rng.IntN(10) == 0 {
						n = rng.IntN(round * raceIDs)
					}
					in := raceEvent(fmt.Sprintf("r%d", n), n)
					if k := rng.IntN(4); k < 3 {
						in.StudentName = []string{"Ada", "Bea", "Cy"}[k]
					}
					batch = append(batch, in)
					ids = append(ids, n)
				}
				timed(raceOp{kind: "ingest", ids: ids}, func() bool {
					resp := envs[(c+b)%2].do("POST", "/v1/events", "", eventsJSON(batch...), auth...)
					if resp.status != http.StatusOK {
						t.Errorf("POST /v1/events: %d %s", resp.status, resp.body)
						return false
					}
					var res platform.IngestResult
					if err := json.Unmarshal(resp.body, &res); err != nil || len(res.Rejected) > 0 || res.Accepted+res.Duplicates != len(batch) {
						t.Errorf("POST /v1/events: %s", resp.body)
						return false
					}
					return true
				})
			}
		}()
	}
	// The contest: two clients send events of this round's contest student
	// while a third erases them, again and again.
	contestant := raceStudent(contestBase + round*raceIDs)
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range 6 {
				var batch []platform.EventInput
				var ids []int
				for i := range 5 {
					n := contestBase + round*raceIDs + c*100 + b*10 + i
					batch = append(batch, raceEvent(fmt.Sprintf("r%d", n), n))
					ids = append(ids, n)
				}
				timed(raceOp{kind: "ingest", ids: ids}, func() bool {
					resp := envs[(c+b)%2].do("POST", "/v1/events", "", eventsJSON(batch...), auth...)
					if resp.status != http.StatusOK {
						t.Errorf("POST /v1/events: %d %s", resp.status, resp.body)
					}
					return resp.status == http.StatusOK
				})
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 6 {
			time.Sleep(time.Duration(i%3) * time.Millisecond)
			erase(envs[i%2], contestant)
		}
	}()
	// Erasure, and enrolment again.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(uint64(round), 99))
		for i := range 8 {
			time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
			student := raceStudent(rng.IntN(raceStudents))
			e := envs[i%2]
			erase(e, student)
			if rng.IntN(2) == 0 {
				timed(raceOp{kind: "enrol", student: student}, func() bool {
					resp := e.do("POST", "/v1/admin/groups/race/students", "", `{"id": "`+student+`", "name": "Again"}`, auth...)
					if resp.status != http.StatusCreated && resp.status != http.StatusConflict {
						t.Errorf("POST students %s: %d %s", student, resp.status, resp.body)
					}
					return true
				})
			}
		}
	}()
	// Rebuilds.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 2 {
			time.Sleep(time.Duration(10+20*i) * time.Millisecond)
			timed(raceOp{kind: "rebuild"}, func() bool {
				if _, err := envs[i%2].platform.Rebuild(ctx, "race", nil); err != nil {
					t.Errorf("rebuild: %v", err)
				}
				return true
			})
		}
	}()
	wg.Wait()
	for _, op := range log.ops {
		for _, n := range op.ids {
			log.ids[n] = fmt.Sprintf("r%d", n)
		}
	}
}

// checkRace compares every report with a brute-force count over the events
// that must be stored. An event must be stored when an acknowledged request
// sent it after every erasure of its student had answered; it must be gone
// when an erasure of its student began after every request that sent it
// had answered. Otherwise the two overlapped and either is right: the
// database's raw rows say which happened, and the reports must agree.
func checkRace(t *testing.T, e *testEnv, rawEvents func() map[string]string, key, token string, log *raceLog) {
	t.Helper()
	sends := map[int][]raceOp{}
	erasures := map[string][]raceOp{}
	for _, op := range log.ops {
		switch op.kind {
		case "ingest":
			for _, n := range op.ids {
				sends[n] = append(sends[n], op)
			}
		case "erase":
			erasures[op.student] = append(erasures[op.student], op)
		}
	}
	raw := rawEvents()
	stored := map[int]bool{}
	for n, id := range log.ids {
		student := raceStudent(n)
		_, isStored := raw[id]
		stored[n] = isStored
		mustStay, mustGo := false, false
		for _, a := range sends[n] {
			if a.acked && !slices.ContainsFunc(erasures[student], func(x raceOp) bool { return !x.end.Before(a.start) }) {
				mustStay = true
			}
		}
		for _, x := range erasures[student] {
			if !slices.ContainsFunc(sends[n], func(a raceOp) bool { return !a.end.Before(x.start) }) {
				mustGo = true
			}
		}
		switch {
		case mustStay && !isStored:
			t.Errorf("event %s was acknowledged after every erasure of %s had answered, and is lost", id, student)
		case mustGo && isStored:
			t.Errorf("event %s of %s was erased after every request that sent it had answered, and is still stored", id, student)
		case isStored && raw[id] != student:
			t.Errorf("event %s is stored for %s, want %s", id, raw[id], student)
		}
	}
	if len(raw) != countTrue(stored) {
		t.Errorf("%d events stored, %d of them sent", len(raw), countTrue(stored))
	}

	// The brute force: per student, per day, per kind, over the stored events.
	type key3 struct {
		student, day, what string
	}
	counts := map[key3]int64{}
	for n, ok := range stored {
		if !ok {
			continue
		}
		in := raceEvent("", n)
		what := in.Kind
		if in.ChatType != "" {
			what = in.ChatType
		}
		counts[key3{in.StudentID, in.OccurredAt[:10], what}]++
	}
	value := func(student, day, title string) int64 {
		var sum int64
		for k, v := range counts {
			if (student == "" || k.student == student) && (day == "" || k.day == day) && raceTitleCounts(title, k.what) {
				sum += v
			}
		}
		return sum
	}
	students := map[string]bool{}
	for k := range counts {
		students[k.student] = true
	}
	used := func(day string, endpoint string, among func(student string) bool) int {
		n := 0
		for student := range students {
			if among != nil && !among(student) {
				continue
			}
			if endpoint == "live-lecture" && value(student, day, "Sessions Made")+value(student, day, "Chat Messages") > 0 ||
				endpoint == "chat" && value(student, day, "Total Messages") > 0 {
				n++
			}
		}
		return n
	}

	// Every student with stored usage is enrolled.
	var listed struct {
		Students []struct{ ID, Name string }
	}
	resp := e.do("GET", "/v1/admin/groups/race/students", "", "", "Authorization", "Bearer "+token)
	if err := json.Unmarshal(resp.body, &listed); err != nil {
		t.Fatal(err)
	}
	enrolled := map[string]bool{}
	for _, s := range listed.Students {
		enrolled[s.ID] = true
	}
	for k := range counts {
		if !enrolled[k.student] {
			t.Errorf("%s has stored usage but is not enrolled", k.student)
		}
	}

	// A class of the students enrolled at the first check with an even
	// number, made once (erasures take their memberships away): its
	// reports too must equal the brute force's.
	if e.do("GET", "/v1/admin/groups/race/classes/even", "", "", "Authorization", "Bearer "+token).status == http.StatusNotFound {
		var even []string
		for id := range enrolled {
			if n, err := strconv.Atoi(id[1:]); err == nil && n%2 == 0 {
				even = append(even, id)
			}
		}
		b, _ := json.Marshal(map[string]any{"id": "even", "name": "Even", "studentIds": even})
		if resp := e.do("POST", "/v1/admin/groups/race/classes", "", string(b), "Authorization", "Bearer "+token); resp.status != http.StatusCreated {
			t.Fatalf("class: %d %s", resp.status, resp.body)
		}
	}
	var class struct{ StudentIDs []string }
	if err := json.Unmarshal(e.do("GET", "/v1/admin/groups/race/classes/even", "", "", "Authorization", "Bearer "+token).body, &class); err != nil {
		t.Fatal(err)
	}
	inClass := func(student string) bool { return slices.Contains(class.StudentIDs, student) }

	for _, endpoint := range []string{"live-lecture", "chat"} {
		titles := map[string][]string{"live-lecture": {"Sessions Made", "Chat Messages"},
			"chat": {"Total Messages", "Tutor Me Messages", "Test Messages", "Flashcard Messages", "Material Messages", "Live Lecture Messages", "Main Chat Messages"}}[endpoint]
		for _, rep := range e.reports(endpoint, key, "startDate=2026-03-01&endDate=2026-03-05&interval=day") {
			day := rep.StartDate[:10]
			if *rep.NumStudentsUsed != used(day, endpoint, nil) {
				t.Errorf("%s %s: numStudentsUsed %d, want %d", endpoint, day, *rep.NumStudentsUsed, used(day, endpoint, nil))
			}
			for _, title := range titles {
				if got, want := rep.value(title), value("", day, title); got != want {
					t.Errorf("%s %s: %s %d, want %d", endpoint, day, title, got, want)
				}
			}
		}
		for _, rep := range e.reports(endpoint, key, "startDate=2026-03-01&endDate=2026-03-05&classId=even") {
			if got, want := *rep.NumStudentsUsed, used("", endpoint, inClass); got != want {
				t.Errorf("%s, class: numStudentsUsed %d, want %d", endpoint, got, want)
			}
			for _, title := range titles {
				var want int64
				for student := range students {
					if inClass(student) {
						want += value(student, "", title)
					}
				}
				if got := rep.value(title); got != want {
					t.Errorf("%s, class: %s %d, want %d", endpoint, title, got, want)
				}
			}
		}
		reps := e.reports(endpoint, key, "startDate=2026-03-01&endDate=2026-03-05&students=true")
		if len(reps) != len(enrolled) {
			t.Errorf("%s: %d student reports for %d students enrolled", endpoint, len(reps), len(enrolled))
		}
		for _, rep := range reps {
			for _, title := range titles {
				if got, want := rep.value(title), value(*rep.StudentID, "", title); got != want {
					t.Errorf("%s %s: %s %d, want %d", endpoint, *rep.StudentID, title, got, want)
				}
			}
		}
	}
}

// raceTitleCounts reports whether a metric titled title counts events of
// a kind or chat type.
func raceTitleCounts(title, what string) bool {
	switch title {
	case "Sessions Made":
		return what == "live_lecture.session_created"
	case "Chat Messages", "Live Lecture Messages":
		return what == "live_lecture"
	case "Total Messages":
		return what != "live_lecture.session_created"
	}
	return map[string]string{"Tutor Me Messages": "tutor_me", "Test Messages": "test", "Flashcard Messages": "flashcard",
		"Material Messages": "material", "Main Chat Messages": "main"}[title] == what
}

func countTrue(m map[int]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
