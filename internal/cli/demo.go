package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

// demoGroup is one school of the demo data set.
type demoGroup struct {
	id, name, zone string
	students       int
	planStart      string
	planEnd        string // "" for open-ended
	seats          int    // the students its plan covers; 0: it does not say
}

var demoGroups = []demoGroup{
	{"northside-high", "Northside High School", "America/New_York", 240, "2025-08-01", "", 250},
	{"lakeside-academy", "Lakeside Academy", "UTC", 160, "2025-01-01", "", 120},
	{"riverside-college", "Riverside College", "Asia/Kolkata", 90, "2025-01-01", "2026-06-30", 0},
}

// demoDistrict holds the demo's three schools; its key is keys[demoDistrict.id].
var demoDistrict = struct{ id, name, zone string }{"lakeland-district", "Lakeland District", "America/New_York"}

// demoClasses are two classes of the demo's first school, of its students
// numbered first to last; the first has a teacher's key, keys[demoTeacher].
var demoClasses = []struct {
	id, name    string
	first, last int
}{
	{"chem-9a", "Chemistry 9A", 1, 28},
	{"hist-9b", "History 9B", 21, 50},
}

// demoTeacher is the entry of the teacher's key in loadDemo's keys.
const demoTeacher = "demo teacher"

// demoWeeks is how far back the demo's term of events reaches.
const demoWeeks = 12

func runDemo(e *env, args []string) error {
	fs, sf := flags(e, "demo")
	db := fs.Lookup("db")
	db.DefValue = filepath.Join(os.TempDir(), "groupanalytics-demo.db")
	_ = db.Value.Set(db.DefValue)
	serveFlags := addServeFlags(fs)
	until := fs.String("until", "", "the last day of the demo's events, e.g. 2026-11-20 (default: yesterday): the same day gives the same numbers")
	if err := parse(e, fs, args, false); err != nil {
		return err
	}
	var end *time.Time // the day after the demo's last, at midnight UTC
	if *until != "" {
		last, err := time.Parse(time.DateOnly, *until)
		if err != nil || !last.Before(time.Now()) {
			return fmt.Errorf("invalid --until %q: expected a day before today, such as 2026-11-20", *until)
		}
		next := last.AddDate(0, 0, 1)
		end = &next
	}
	path := db.Value.String()
	switch {
	case strings.Contains(path, "://") && !stores.IsPostgres(path):
		return fmt.Errorf("demo takes a SQLite file path or a postgres:// URL for --db")
	case sf.usage != "" && !stores.IsPostgres(path):
		return fmt.Errorf("--usage on ClickHouse needs the directory on PostgreSQL: give --db a postgres:// URL")
	}
	err := serve(e, *serveFlags, storeFlags{db: path, usage: sf.usage, demo: true}, func(s *stores.Stores, baseURL string) error {
		now := time.Now()
		p := platform.New(s.Directory, s.Usage)
		if err := clearDemo(e, p); err != nil {
			return err
		}
		keys, events, err := loadDemo(e, p, now, end)
		if err != nil {
			return err
		}
		_, token, err := p.CreateToken(e.ctx, "demo")
		if err != nil {
			return err
		}
		if end != nil {
			now = *end
		}
		printDemo(e, path, baseURL, keys, token, events, now)
		return nil
	})
	switch {
	case errors.Is(err, stores.ErrNotDemoStore):
		return fmt.Errorf("%s: %w. Give --db a new file (or an empty PostgreSQL database) for the demo", redacted(path), err)
	case errors.Is(err, stores.ErrDemoRunning):
		return fmt.Errorf("%s: %w. Stop that demo, or give this one another --db", redacted(path), err)
	}
	return err
}

// redacted is a --db for messages: a URL without its password.
func redacted(db string) string {
	if u, err := url.Parse(db); err == nil && stores.IsPostgres(db) {
		return u.Redacted()
	}
	return db
}

// clearDemo takes out what an earlier demo left in its store (its
// groups, on every store, and its platform tokens), so that the demo
// starts afresh; the store is a demo's (stores.Config.Demo), and what
// else it holds stays.
func clearDemo(e *env, p *platform.Platform) error {
	if err := p.DeleteDistrict(e.ctx, demoDistrict.id); err != nil && analytics.ErrorCode(err) != analytics.NotFound {
		return err
	}
	for _, dg := range demoGroups {
		if err := p.DeleteGroup(e.ctx, dg.id); err != nil && analytics.ErrorCode(err) != analytics.NotFound {
			return err
		}
	}
	tokens, err := p.Tokens(e.ctx)
	for _, t := range tokens {
		if t.Label == "demo" && t.Revoked == nil {
			err = cmp.Or(err, p.RevokeToken(e.ctx, t.ID))
		}
	}
	return err
}

// loadDemo creates the demo groups, plans, keys and students, and sends a
// term of events through the ingestion path, ending the day before now in
// each group's zone, or the day before end. It returns each group's key.
func loadDemo(e *env, p *platform.Platform, now time.Time, end *time.Time) (map[string]string, int, error) {
	rng := rand.New(rand.NewPCG(2025, 9))
	keys := map[string]string{}
	total := 0
	for _, dg := range demoGroups {
		g, err := p.CreateGroup(e.ctx, dg.id, dg.name, dg.zone)
		if err != nil {
			return nil, 0, err
		}
		if _, err := p.AddPlan(e.ctx, g.ID, dg.planStart, dg.planEnd, dg.seats); err != nil {
			return nil, 0, err
		}
		if _, keys[g.ID], err = p.CreateKey(e.ctx, g.ID, "demo"); err != nil {
			return nil, 0, err
		}
		loc, err := analytics.LoadZone(dg.zone)
		if err != nil {
			return nil, 0, err
		}
		stop := analytics.DayOf(now, loc)
		if end != nil {
			stop = analytics.DateDay(end.Date())
		}
		batch, idle := demoEvents(rng, dg, stop)
		for _, s := range idle {
			if _, err := p.AddStudent(e.ctx, s.GroupID, s.ID, s.Name); err != nil {
				return nil, 0, err
			}
		}
		for chunk := range slices.Chunk(batch, 5000) {
			res, err := p.Ingest(e.ctx, chunk, true)
			if err != nil {
				return nil, 0, err
			}
			if len(res.Rejected) > 0 {
				return nil, 0, fmt.Errorf("demo event rejected: %s", res.Rejected[0].Reason)
			}
			total += res.Accepted
		}
	}
	school := demoGroups[0].id
	for _, dc := range demoClasses {
		class := analytics.Class{GroupID: school, ID: dc.id, Name: dc.name}
		for n := dc.first; n <= dc.last; n++ {
			class.Members = append(class.Members, fmt.Sprintf("%s-s%03d", school[:4], n))
		}
		if _, err := p.CreateClass(e.ctx, class); err != nil {
			return nil, 0, err
		}
	}
	var err error
	if _, keys[demoTeacher], err = p.CreateKey(e.ctx, school, "demo teacher", demoClasses[0].id); err != nil {
		return nil, 0, err
	}
	if keys[demoDistrict.id], err = loadDemoDistrict(e, p); err != nil {
		return nil, 0, err
	}
	return keys, total, nil
}

// loadDemoDistrict puts the demo's schools in its district and returns a
// key of the district.
func loadDemoDistrict(e *env, p *platform.Platform) (string, error) {
	if _, err := p.CreateDistrict(e.ctx, demoDistrict.id, demoDistrict.name, demoDistrict.zone); err != nil {
		return "", err
	}
	for _, dg := range demoGroups {
		if err := p.AttachSchool(e.ctx, demoDistrict.id, dg.id); err != nil {
			return "", err
		}
	}
	_, key, err := p.CreateDistrictKey(e.ctx, demoDistrict.id, "demo")
	return key, err
}

var (
	demoFirstNames = strings.Fields("Ada Ben Chloe Dev Elif Femi Grace Hugo Ines Jonas Kai Lena Mateo Nia Omar Priya Quinn Rosa Sami Tara Umar Vera Wen Xavi Yara Zoe")
	demoLastNames  = strings.Fields("Adams Baker Chen Diaz Evans Fischer Garcia Haddad Ito Jensen Khan Lopez Moreau Nowak Okafor Patel Rossi Silva Tanaka Weber")
	// demoChatTypes are weighted: tutor_me is the most used.
	demoChatTypes = []string{"tutor_me", "tutor_me", "tutor_me", "test", "test", "flashcard", "flashcard", "material", "material", "live_lecture", "main", "main"}
)

// demoEvents makes a school term of events for one group, ending the day
// before stop (in the group's zone), so that the numbers depend on that
// day, not on the time of day: students of varied engagement, busy
// weekdays, quiet weekends. The students who never used the product come
// back apart: they have no event to enrol them.
func demoEvents(rng *rand.Rand, dg demoGroup, stop analytics.Day) (out []json.RawMessage, idle []analytics.Student) {
	loc, _ := analytics.LoadZone(dg.zone)
	today := stop
	n := 0
	for s := range dg.students {
		id := fmt.Sprintf("%s-s%03d", dg.id[:4], s+1)
		name := demoFirstNames[rng.IntN(len(demoFirstNames))] + " " + demoLastNames[rng.IntN(len(demoLastNames))]
		engagement := rng.Float64()
		if rng.IntN(12) == 0 {
			engagement = 0 // enrolled, never used the product
		}
		named := false
		for day := today - demoWeeks*7; day < today; day++ {
			y, m, d := day.Date()
			weekday := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()
			chance := engagement * 0.8
			if weekday == time.Saturday || weekday == time.Sunday {
				chance *= 0.2
			}
			if rng.Float64() >= chance {
				continue
			}
			count := 1 + rng.IntN(10)
			for range count {
				at := time.Date(y, m, d, 8+rng.IntN(12), rng.IntN(60), rng.IntN(60), 0, loc)
				n++
				in := platform.EventInput{ID: fmt.Sprintf("%s-e%07d", dg.id[:4], n), GroupID: dg.id, StudentID: id,
					OccurredAt: at.Format(time.RFC3339), Kind: analytics.KindMessageSent}
				if !named {
					in.StudentName, named = name, true
				}
				if rng.IntN(5) == 0 {
					in.Kind = analytics.KindSessionCreated
				} else {
					in.ChatType = demoChatTypes[rng.IntN(len(demoChatTypes))]
				}
				raw, _ := json.Marshal(in)
				out = append(out, raw)
			}
		}
		if !named {
			idle = append(idle, analytics.Student{GroupID: dg.id, ID: id, Name: name})
		}
	}
	return out, idle
}

func printDemo(e *env, path, base string, keys map[string]string, token string, events int, now time.Time) {
	w := e.stdout
	first := now.AddDate(0, 0, -demoWeeks*7).Format(time.DateOnly)
	fmt.Fprintf(w, "groupanalytics demo: a demo store at %s\n", redacted(path))
	fmt.Fprintf(w, "with %d groups and %d events over the last %d weeks.\n\n", len(demoGroups), events, demoWeeks)
	for _, dg := range demoGroups {
		key := keys[dg.id]
		plan := "plan valid from " + dg.planStart
		if dg.planEnd != "" {
			plan = "plan ended " + dg.planEnd + ": its key answers 403"
		}
		fmt.Fprintf(w, "%s (group %s, %s, %d students, %s)\n", dg.name, dg.id, dg.zone, dg.students, plan)
		curl := func(path string) {
			fmt.Fprintf(w, "  curl -s -X POST '%s%s' -H 'x-api-key: %s'\n", base, path, key)
		}
		curl("/api/groups/live-lecture")
		if dg.planEnd == "" {
			curl("/api/groups/chat?startDate=" + first + "&interval=week")
			curl("/api/groups/chat?students=true&startDate=" + first)
		}
		if dg.id == demoGroups[0].id {
			a, b := demoClasses[0], demoClasses[1]
			fmt.Fprintf(w, "  Classes %s (%d students) and %s (%d); a teacher's key of %s sees that class's students alone, here and in the dashboard:\n",
				a.name, a.last-a.first+1, b.name, b.last-b.first+1, a.name)
			key = keys[demoTeacher]
			curl("/api/groups/chat?students=true&startDate=" + first)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s (district %s, %s: the three schools; Riverside College's plan has ended, so its answers leave it out and name it)\n",
		demoDistrict.name, demoDistrict.id, demoDistrict.zone)
	for _, path := range []string{"/api/groups/live-lecture", "/api/groups/chat?schools=true&startDate=" + first} {
		fmt.Fprintf(w, "  curl -s -X POST '%s%s' -H 'x-api-key: %s'\n", base, path, keys[demoDistrict.id])
	}
	fmt.Fprintln(w)
	// An event the user sends, on the day after the demo's last (today,
	// unless --until names another), and the report of that day alone.
	dg := demoGroups[0]
	loc, _ := analytics.LoadZone(dg.zone)
	at := time.Now()
	if day := analytics.DayOf(now, time.UTC); day != analytics.DayOf(at, time.UTC) {
		at = day.Start(loc).Add(12 * time.Hour)
	}
	day := analytics.DayOf(at, loc).String()
	event := fmt.Sprintf(`[{"id": "try-1", "groupId": %q, "studentId": "%s-s001", "occurredAt": %q, "kind": "chat.message_sent", "chatType": "tutor_me"}]`,
		dg.id, dg.id[:4], at.In(loc).Truncate(time.Second).Format(time.RFC3339))
	fmt.Fprintf(w, "The platform's token (for POST /v1/events and the admin API): %s\n", token)
	fmt.Fprintf(w, "Send %s an event as the platform would, then see it in the report of %s:\n", dg.name, day)
	fmt.Fprintf(w, "  curl -s -X POST '%s/v1/events' -H 'Authorization: Bearer %s' -d '%s'\n", base, token, event)
	fmt.Fprintf(w, "  curl -s -X POST '%s/api/groups/chat?startDate=%s&endDate=%s' -H 'x-api-key: %s'\n\n", base, day, day, keys[dg.id])
	fmt.Fprintf(w, "The dashboard: open %s/ in a browser and enter a key above.\n", base)
	fmt.Fprintf(w, "Serving on %s. Press Ctrl-C to stop.\n", base)
}
