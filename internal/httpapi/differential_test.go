package httpapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores/storetest"
)

// The differential test: randomized groups, students and events, and
// random queries, each answer compared with a brute-force count over the
// raw events that shares no code with the service.

var diffZones = []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Kathmandu", "Australia/Lord_Howe",
	"America/Santiago", "Pacific/Chatham", "Asia/Kolkata"}

// refModel is what the platform sent, kept as plainly as possible.
type refModel struct {
	zones  map[string]*time.Location
	events map[string][]refEvent        // group -> accepted events, first of each id
	seen   map[string]bool              // group + "\x00" + id
	names  map[string]map[string]string // group -> student -> latest name
	keys   map[string]string
	// classes: group -> class -> its members, as the platform last set
	// them (an erased student leaves every class).
	classes map[string]map[string][]string
}

type refEvent struct {
	student  string
	at       time.Time
	kind     string
	chatType string
}

func (m *refModel) apply(in platform.EventInput) {
	k := in.GroupID + "\x00" + in.ID
	if m.seen[k] {
		return // a re-sent event changes nothing, not even a name (docs/decisions.md, R6)
	}
	m.seen[k] = true
	if m.names[in.GroupID] == nil {
		m.names[in.GroupID] = map[string]string{}
	}
	if in.StudentName != "" {
		m.names[in.GroupID][in.StudentID] = in.StudentName
	} else if _, ok := m.names[in.GroupID][in.StudentID]; !ok {
		m.names[in.GroupID][in.StudentID] = in.StudentID
	}
	at, _ := time.Parse(time.RFC3339Nano, in.OccurredAt)
	m.events[in.GroupID] = append(m.events[in.GroupID], refEvent{in.StudentID, at.Truncate(time.Millisecond), in.Kind, in.ChatType})
}

// refDayStart finds the first instant of a local date by stepping through
// the minutes around its midnight: slow (so remembered), and independent of
// the service.
func refDayStart(date time.Time, loc *time.Location) time.Time {
	k := dayStartKey{date, loc}
	if t, ok := dayStarts.Load(k); ok {
		return t.(time.Time)
	}
	want := date.Format(time.DateOnly)
	t := time.Date(date.Year(), date.Month(), date.Day(), 0, 0, 0, 0, loc).Add(-3 * time.Hour).Truncate(time.Minute)
	for t.In(loc).Format(time.DateOnly) < want {
		t = t.Add(time.Minute)
	}
	dayStarts.Store(k, t)
	return t
}

// refPeriod is a period of local dates, as UTC midnights.
type refPeriod struct{ first, last time.Time }

// bounds tells the period's first and last instants in loc, as reports
// echo them.
func (p refPeriod) bounds(loc *time.Location) (string, string) {
	return refDayStart(p.first, loc).UTC().Format("2006-01-02T15:04:05.000Z"),
		refDayStart(p.last.AddDate(0, 0, 1), loc).Add(-time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")
}

// refPeriods cuts the dates first to last as interval says, and returns
// the period of each date.
func refPeriods(first, last time.Time, interval string) ([]refPeriod, map[string]int) {
	key := func(d time.Time) string {
		switch interval {
		case "day":
			return d.Format(time.DateOnly)
		case "week":
			y, w := d.ISOWeek()
			return fmt.Sprint(y, w)
		case "month":
			return d.Format("2006-01")
		}
		return ""
	}
	var periods []refPeriod
	periodOf := map[string]int{}
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		if len(periods) == 0 || key(d) != key(periods[len(periods)-1].last) {
			periods = append(periods, refPeriod{d, d})
		}
		periods[len(periods)-1].last = d
		periodOf[d.Format(time.DateOnly)] = len(periods) - 1
	}
	return periods, periodOf
}

type dayStartKey struct {
	date time.Time
	loc  *time.Location
}

var dayStarts sync.Map

type refQuery struct {
	group, endpoint, interval string
	class                     string // the class asked for, if any
	students                  bool
	first, last               time.Time // local dates, as UTC midnights
}

// answer computes the reports q should get.
func (m *refModel) answer(q refQuery) []report {
	loc := m.zones[q.group]
	periods, periodOf := refPeriods(q.first, q.last, q.interval)
	var titles []string
	values := func(counts map[string]int64) []int64 {
		if q.endpoint == "live-lecture" {
			return []int64{counts["session"], counts["live_lecture"]}
		}
		v := []int64{0}
		for _, ct := range []string{"tutor_me", "test", "flashcard", "material", "live_lecture", "main"} {
			v = append(v, counts[ct])
			v[0] += counts[ct]
		}
		return v
	}
	if q.endpoint == "live-lecture" {
		titles = liveLectureTitles
	} else {
		titles = chatTitles
	}
	perStudent := make([]map[string]map[string]int64, len(periods))
	users := make([]map[string]bool, len(periods))
	for i := range periods {
		perStudent[i], users[i] = map[string]map[string]int64{}, map[string]bool{}
	}
	inClass := map[string]bool{}
	for _, id := range m.classes[q.group][q.class] {
		inClass[id] = true
	}
	for _, ev := range m.events[q.group] {
		i, ok := periodOf[ev.at.In(loc).Format(time.DateOnly)]
		if !ok || q.class != "" && !inClass[ev.student] {
			continue
		}
		what := ev.chatType
		if ev.kind == "live_lecture.session_created" {
			what = "session"
		}
		if perStudent[i][ev.student] == nil {
			perStudent[i][ev.student] = map[string]int64{}
		}
		perStudent[i][ev.student][what]++
		if q.endpoint == "live-lecture" && (what == "session" || what == "live_lecture") || q.endpoint == "chat" && what != "session" {
			users[i][ev.student] = true
		}
	}
	type student struct{ id, name string }
	var students []student
	for id, name := range m.names[q.group] {
		if q.class == "" || inClass[id] {
			students = append(students, student{id, name})
		}
	}
	slices.SortFunc(students, func(a, b student) int {
		if a.name != b.name {
			return strings.Compare(a.name, b.name)
		}
		return strings.Compare(a.id, b.id)
	})
	var out []report
	for i, p := range periods {
		start, end := p.bounds(loc)
		data := func(v []int64) []metric {
			var ms []metric
			for j, t := range titles {
				ms = append(ms, metric{t, v[j]})
			}
			return ms
		}
		if !q.students {
			total := map[string]int64{}
			for _, c := range perStudent[i] {
				for k, v := range c {
					total[k] += v
				}
			}
			n := len(users[i])
			out = append(out, report{StartDate: start, EndDate: end, NumStudentsUsed: &n, Data: data(values(total))})
			continue
		}
		for _, s := range students {
			id, name := s.id, s.name
			counts := perStudent[i][s.id]
			if counts == nil {
				counts = map[string]int64{}
			}
			out = append(out, report{StartDate: start, EndDate: end, StudentName: &name, StudentID: &id, Data: data(values(counts))})
		}
	}
	return out
}

// randomTime picks an instant in the test's years, often close to a local
// midnight, where off-by-one-day mistakes show.
func randomTime(rng *rand.Rand, loc *time.Location) time.Time {
	day := time.Date(2024, 12, 20, 0, 0, 0, 0, loc).AddDate(0, 0, rng.IntN(700))
	if rng.IntN(3) == 0 {
		return day.Add(time.Duration(rng.IntN(4*3600*1000)-2*3600*1000) * time.Millisecond)
	}
	return day.Add(time.Duration(rng.IntN(24*3600*1000)) * time.Millisecond)
}

// TestDifferentialAgainstBruteForce: every report of randomized data on
// every store equals the brute-force reference's, for four seeds (one
// under -short, the everyday loop).
func TestDifferentialAgainstBruteForce(t *testing.T) {
	seeds := uint64(4) // .ci/run's replicated wave names them: seed[14], seed[23]
	if testing.Short() {
		seeds = 1
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, stores storetest.Stores) {
				// Sums kept for groups of any size, not only of 1,024
				// students and more.
				e := newEnvWith(t, stores, func(c *httpapi.Config) { c.Engine.KeepSumsFrom = 0 })
				runDifferential(t, e, rand.New(rand.NewPCG(seed, 42)))
			})
		})
	}
}

func runDifferential(t *testing.T, e *testEnv, rng *rand.Rand) {
	m := &refModel{zones: map[string]*time.Location{}, events: map[string][]refEvent{}, seen: map[string]bool{},
		names: map[string]map[string]string{}, keys: map[string]string{}, classes: map[string]map[string][]string{}}
	var groups []string
	for g := range 3 {
		id := fmt.Sprintf("g%d", g)
		zone := diffZones[rng.IntN(len(diffZones))]
		m.zones[id], _ = time.LoadLocation(zone)
		m.keys[id] = e.school(id, zone)
		groups = append(groups, id)
	}
	var sent []platform.EventInput
	for _, g := range groups {
		nStudents := 5 + rng.IntN(35)
		for s := range nStudents {
			if rng.IntN(6) == 0 { // enrolled, never active
				id, name := fmt.Sprintf("idle%02d", s), fmt.Sprintf("Idle %c", 'A'+rng.IntN(5))
				e.enrol(g, id, name)
				m.apply(platform.EventInput{GroupID: g, StudentID: id, StudentName: name, ID: "enrol-" + id})
				delete(m.seen, g+"\x00enrol-"+id)
				m.events[g] = m.events[g][:len(m.events[g])-1]
			}
		}
		for i := range 1000 + rng.IntN(1000) {
			in := platform.EventInput{ID: fmt.Sprintf("%s-%05d", g, i), GroupID: g, StudentID: fmt.Sprintf("s%02d", rng.IntN(nStudents)),
				OccurredAt: randomTime(rng, m.zones[g]).Format(time.RFC3339Nano)}
			if rng.IntN(4) == 0 {
				in.Kind = "live_lecture.session_created"
			} else {
				in.Kind = "chat.message_sent"
				in.ChatType = []string{"tutor_me", "test", "flashcard", "material", "live_lecture", "main"}[rng.IntN(6)]
			}
			if rng.IntN(8) == 0 {
				in.StudentName = []string{"Ada", "Bea", "ada", "Émile", "Zed", "Ada "}[rng.IntN(6)]
			}
			sent = append(sent, in)
		}
	}
	rng.Shuffle(len(sent), func(i, j int) { sent[i], sent[j] = sent[j], sent[i] })
	// send sends a batch and applies it to the model.
	send := func(batch ...platform.EventInput) {
		e.send(batch...)
		for _, in := range batch {
			m.apply(in)
		}
	}
	// Batches of random size; some re-send earlier events.
	for len(sent) > 0 {
		n := min(len(sent), 1+rng.IntN(400))
		batch := slices.Clone(sent[:n])
		sent = sent[n:]
		for range rng.IntN(3) {
			if len(batch) > 0 {
				batch = append(batch, batch[rng.IntN(len(batch))])
			}
		}
		send(batch...)
	}
	// Classes: random students of each group, one of them all of its
	// students (whose reports are the group's).
	for _, g := range groups {
		m.classes[g] = map[string][]string{}
		for c := range 3 {
			id := []string{"all", "Bio 7B", "ünï/😀"}[c]
			m.classes[g][id] = slices.DeleteFunc(slices.Sorted(maps.Keys(m.names[g])), func(string) bool { return c > 0 && rng.IntN(2) == 0 })
			if _, err := e.platform.CreateClass(ctx, analytics.Class{GroupID: g, ID: id, Name: id, Members: m.classes[g][id]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	queries := make([]refQuery, 150)
	check := func(label string) {
		for i, q := range queries {
			if i == 0 || label == "" {
				q = randomQuery(rng, groups, m)
				queries[i] = q
			}
			query, body := encodeQuery(rng, q, m.zones[q.group])
			resp := e.reportRequest(q.endpoint, m.keys[q.group], query, body)
			got := decodeReports(t, resp)
			want := m.answer(q)
			if !reflect.DeepEqual(got, want) {
				gj, _ := json.MarshalIndent(got, "", " ")
				wj, _ := json.MarshalIndent(want, "", " ")
				t.Fatalf("%s query %d: %+v\n?%s %s\ngot  %d reports\nwant %d reports\n%s\n---\n%s", label, i, q, query, body,
					len(got), len(want), firstDiff(gj, wj), "")
			}
		}
	}
	check("")
	if _, err := e.platform.Rebuild(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	check("after rebuild")
	var erased []string // group + "\x00" + student
	for _, g := range groups {
		for _, id := range slices.Sorted(maps.Keys(m.names[g])) {
			if rng.IntN(5) == 0 {
				if err := e.platform.DeleteStudent(ctx, g, id); err != nil {
					t.Fatal(err)
				}
				m.erase(g, id)
				erased = append(erased, g+"\x00"+id)
			}
		}
	}
	check("after deletions")
	// Renames, and new events: of erased students, who come back with
	// none of their old usage, and of others.
	for _, g := range groups {
		for _, id := range slices.Sorted(maps.Keys(m.names[g])) {
			if rng.IntN(4) == 0 {
				name := []string{"Zoë", "ada", "Bea", "Ада"}[rng.IntN(4)]
				if _, err := e.platform.RenameStudent(ctx, g, id, name); err != nil {
					t.Fatal(err)
				}
				m.names[g][id] = name
			}
		}
	}
	var late []platform.EventInput
	for i := range 600 {
		in := sentAgain(rng, i, erased, groups, m)
		late = append(late, in)
	}
	for batch := range slices.Chunk(late, 50) {
		send(batch...)
	}
	check("after renames and re-enrolments")
	// New members: the classes as they are now count, whenever the
	// events happened.
	for _, g := range groups {
		for id := range m.classes[g] {
			members := slices.DeleteFunc(slices.Sorted(maps.Keys(m.names[g])), func(string) bool { return rng.IntN(2) == 0 })
			if _, err := e.platform.SetClassMembers(ctx, g, id, members); err != nil {
				t.Fatal(err)
			}
			m.classes[g][id] = members
		}
	}
	check("after new members")
	// More events of enrolled students only, which changes no roster: the
	// class counts kept from the reports before must be read again where
	// they changed.
	var more []platform.EventInput
	for i := range 300 {
		g := groups[rng.IntN(len(groups))]
		enrolled := slices.Sorted(maps.Keys(m.names[g]))
		in := sentAgain(rng, i, nil, groups, m)
		in.ID, in.GroupID, in.StudentID, in.StudentName = fmt.Sprintf("more-%04d", i), g, enrolled[rng.IntN(len(enrolled))], ""
		in.OccurredAt = randomTime(rng, m.zones[g]).Format(time.RFC3339Nano)
		more = append(more, in)
	}
	for batch := range slices.Chunk(more, 30) {
		send(batch...)
	}
	check("after more events")
}

// erase takes a student, their events and their memberships out of the
// model.
func (m *refModel) erase(group, student string) {
	delete(m.names[group], student)
	for id, members := range m.classes[group] {
		m.classes[group][id] = slices.DeleteFunc(members, func(s string) bool { return s == student })
	}
	m.events[group] = slices.DeleteFunc(m.events[group], func(ev refEvent) bool { return ev.student == student })
}

// sentAgain is the i-th event sent after erasures: of an erased student
// half the time, or of one of the first students of a group.
func sentAgain(rng *rand.Rand, i int, erased, groups []string, m *refModel) platform.EventInput {
	g, student := groups[rng.IntN(len(groups))], fmt.Sprintf("s%02d", rng.IntN(5))
	if len(erased) > 0 && rng.IntN(2) == 0 {
		g, student, _ = strings.Cut(erased[rng.IntN(len(erased))], "\x00")
	}
	in := platform.EventInput{ID: fmt.Sprintf("late-%04d", i), GroupID: g, StudentID: student,
		OccurredAt: randomTime(rng, m.zones[g]).Format(time.RFC3339Nano), Kind: "chat.message_sent", ChatType: "main"}
	if rng.IntN(3) == 0 {
		in.Kind, in.ChatType = "live_lecture.session_created", ""
	}
	if rng.IntN(5) == 0 {
		in.StudentName = "Back " + student
	}
	return in
}

// firstDiff shows where two JSON texts first differ.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			lo := max(0, i-12)
			return fmt.Sprintf("line %d:\ngot:\n%s\nwant:\n%s", i, strings.Join(la[lo:min(i+3, len(la))], "\n"), strings.Join(lb[lo:min(i+3, len(lb))], "\n"))
		}
	}
	return "one is a prefix of the other"
}

func randomQuery(rng *rand.Rand, groups []string, m *refModel) refQuery {
	q := refQuery{group: groups[rng.IntN(len(groups))], endpoint: []string{"live-lecture", "chat"}[rng.IntN(2)],
		interval: []string{"", "day", "week", "month"}[rng.IntN(4)], students: rng.IntN(2) == 0}
	q.first = time.Date(2024, 12, 15, 0, 0, 0, 0, time.UTC).AddDate(0, 0, rng.IntN(720))
	length := []int{0, 1 + rng.IntN(10), 10 + rng.IntN(50), 60 + rng.IntN(340)}[rng.IntN(4)]
	q.last = q.first.AddDate(0, 0, length)
	if classes := slices.Sorted(maps.Keys(m.classes[q.group])); len(classes) > 0 && rng.IntN(3) == 0 {
		q.class = classes[rng.IntN(len(classes))]
	}
	return q
}

// encodeQuery writes q as the service's parameters: dates or timestamps
// that fall on the wanted local days, in the query string or the body,
// leaving out those equal to their defaults now and then.
func encodeQuery(rng *rand.Rand, q refQuery, loc *time.Location) (string, string) {
	params := map[string]any{}
	date := func(d time.Time) string {
		switch rng.IntN(4) {
		case 0: // an instant on that local day, with an offset
			local := time.Date(d.Year(), d.Month(), d.Day(), 12, rng.IntN(60), 0, 0, loc)
			offset := time.FixedZone("", (rng.IntN(27)-12)*3600)
			return local.In(offset).Format("2006-01-02T15:04:05.000Z07:00")
		case 1: // a wall-clock time without offset, read in the group's zone
			return d.Format("2006-01-02") + fmt.Sprintf("T%02d:%02d:00", rng.IntN(24), rng.IntN(60))
		}
		return d.Format(time.DateOnly)
	}
	if !(q.first.Equal(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) && rng.IntN(2) == 0) {
		params["startDate"] = date(q.first)
	}
	today := testNow.In(loc)
	if !(q.last.Format(time.DateOnly) == today.Format(time.DateOnly) && rng.IntN(2) == 0) {
		params["endDate"] = date(q.last)
	}
	if q.students || rng.IntN(3) == 0 {
		params["students"] = q.students
	}
	if q.interval != "" {
		params["interval"] = q.interval
	}
	if q.class != "" {
		params["classId"] = q.class
	}
	values := url.Values{}
	body := map[string]any{}
	for k, v := range params {
		if rng.IntN(3) == 0 {
			body[k] = v
		} else {
			values.Set(k, fmt.Sprint(v))
		}
	}
	if len(body) == 0 {
		return values.Encode(), ""
	}
	b, _ := json.Marshal(body)
	return values.Encode(), string(b)
}
