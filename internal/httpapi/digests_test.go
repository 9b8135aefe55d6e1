package httpapi_test

import (
	"fmt"
	"html"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/digest"
	"groupanalytics/internal/digest/mailtest"
	"groupanalytics/internal/metrics"
	reportengine "groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
)

// digestEnv is a test environment with an SMTP server and a digest
// sender on its stores, its clock and its public URL.
type digestEnv struct {
	*testEnv
	mail   *mailtest.Server
	sender *digest.Sender
	logs   *syncBuffer
}

func newDigestEnv(t *testing.T, e *testEnv, opts mailtest.Options) *digestEnv {
	t.Helper()
	srv := mailtest.Start(t, opts)
	mailer, err := digest.NewMailer(srv.URL(), "digest@analytics.example")
	if err != nil {
		t.Fatal(err)
	}
	mailer.TLS = srv.ClientTLS
	logs := &syncBuffer{}
	sender := digest.NewSender(e.platform.Directory, reportengine.NewEngine(e.platform.Directory, e.platform.Usage), mailer,
		e.server.URL, slog.New(slog.NewJSONHandler(logs, nil)))
	sender.Now = e.clock.Now
	sender.Backoff = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
	return &digestEnv{testEnv: e, mail: srv, sender: sender, logs: logs}
}

func (d *digestEnv) round() {
	d.t.Helper()
	if err := d.sender.Round(ctx); err != nil {
		d.t.Fatal(err)
	}
}

func (d *digestEnv) addRecipient(token, group, address string) {
	d.t.Helper()
	d.mustCall("POST", "/v1/admin/groups/"+group+"/digest-recipients", token, fmt.Sprintf(`{"address": %q}`, address), http.StatusCreated)
}

// at is a wall-clock time in a zone.
func at(zone, wall string) time.Time {
	loc, err := analytics.LoadZone(zone)
	if err != nil {
		panic(err)
	}
	t, err := time.ParseInLocation("2006-01-02 15:04", wall, loc)
	if err != nil {
		panic(err)
	}
	return t
}

// TestDigestEqualsTheAPI sends the digest of a week to two recipients of
// a school in Auckland, where Monday starts on Sunday in UTC, over
// STARTTLS with credentials. Every total of both parts, and its week
// before, is the report API's answer for the same seven days; the
// inactive students are those whose student reports are all zero.
func TestDigestEqualsTheAPI(t *testing.T) {
	const zone = "Pacific/Auckland"
	forEachStore(t, func(t *testing.T, e *testEnv) {
		d := newDigestEnv(t, e, mailtest.Options{TLS: true, User: "digest", Pass: "s3cret"})
		key := e.school("north", zone)
		token := e.token()
		for i, name := range []string{"Ada", "Ben", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ida", "Jo", "Kit", "Lu", "Mo", "Nat"} {
			e.enrol("north", fmt.Sprintf("s%02d", i), name)
		}
		e.send(
			// The week of 9-15 November, in Auckland (UTC+13).
			session("north", "s00", "2026-11-09T00:30:00+13:00"), // Sunday 11:30 in UTC
			session("north", "s00", "2026-11-12T10:00:00+13:00"),
			message("north", "s01", "main", "2026-11-15T23:30:00+13:00"),
			message("north", "s01", "tutor_me", "2026-11-10T09:00:00+13:00"),
			message("north", "s02", "live_lecture", "2026-11-11T09:00:00+13:00"),
			// The week before.
			session("north", "s00", "2026-11-08T23:30:00+13:00"),
			message("north", "s04", "main", "2026-11-03T09:00:00+13:00"),
			message("north", "s04", "main", "2026-11-04T09:00:00+13:00"),
			message("north", "s01", "main", "2026-11-05T09:00:00+13:00"),
			// The week after: in no digest of these.
			message("north", "s03", "main", "2026-11-16T00:10:00+13:00"),
		)
		d.addRecipient(token, "north", "head@north.example")
		d.addRecipient(token, "north", "Teacher@North.Example")

		e.clock.Set(at(zone, "2026-11-16 07:00"))
		d.round()
		msgs := d.mail.WaitFor(t, 2, 10*time.Second)
		d.round() // once per recipient and week
		if n := len(d.mail.Messages()); n != 2 {
			t.Fatalf("%d messages after a second round, want 2", n)
		}
		var to []string
		for _, m := range msgs {
			to = append(to, m.To...)
			if !m.TLS || m.From != "digest@analytics.example" {
				t.Errorf("message to %v: TLS %v, from %s", m.To, m.TLS, m.From)
			}
		}
		slices.Sort(to)
		if want := []string{"Teacher@north.example", "head@north.example"}; !slices.Equal(to, want) {
			t.Errorf("sent to %v, want %v", to, want)
		}

		m := parseDigest(t, msgs[0].Data)
		if subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); err != nil || subject != "School north: the week of 9–15 November 2026" {
			t.Errorf("Subject %q (%v)", subject, err)
		}
		text, page := m.Parts["text/plain"], htmlText(m.Parts["text/html"])
		// Every number here is below 1,000: printed as is.
		const week, before = "startDate=2026-11-09&endDate=2026-11-15", "startDate=2026-11-02&endDate=2026-11-08"
		for _, ep := range []string{"live-lecture", "chat"} {
			now, prev := e.reports(ep, key, week)[0], e.reports(ep, key, before)[0]
			rows := append(slices.Clone(now.Data), metric{digest.UsersTitle, int64(*now.NumStudentsUsed)})
			prevRows := append(slices.Clone(prev.Data), metric{digest.UsersTitle, int64(*prev.NumStudentsUsed)})
			for i, r := range rows {
				change, _ := digest.Change(r.Value, prevRows[i].Value)
				line := fmt.Sprintf("  %-24s %9s  %s (%s the week before)", r.Title, fmt.Sprint(r.Value), change, fmt.Sprint(prevRows[i].Value))
				if !strings.Contains(text, line+"\n") {
					t.Errorf("%s: the text part lacks %q:\n%s", ep, line, text)
				}
				arrow := strings.Replace(strings.Replace(change, "up ", "▲ ", 1), "down ", "▼ ", 1)
				cells := fmt.Sprintf("%s %s %s %s", r.Title, fmt.Sprint(r.Value), arrow, fmt.Sprint(prevRows[i].Value))
				if !strings.Contains(page, cells) {
					t.Errorf("%s: the HTML part lacks %q:\n%s", ep, cells, page)
				}
			}
		}
		// The inactive: no usage of either endpoint in any student report.
		active := map[string]bool{}
		var names []string
		for _, ep := range []string{"live-lecture", "chat"} {
			for _, r := range e.reports(ep, key, week+"&students=true") {
				names = append(names, *r.StudentName)
				for _, m := range r.Data {
					if m.Value != 0 {
						active[*r.StudentName] = true
					}
				}
			}
		}
		names = slices.Compact(names) // each endpoint lists every student, by name
		var inactive []string
		for _, n := range names[:len(names)/2] {
			if !active[n] {
				inactive = append(inactive, n)
			}
		}
		wantLine := fmt.Sprintf("Inactive all week: %d of %d students.", len(inactive), len(names)/2)
		wantNames := strings.Join(inactive[:digest.MaxInactiveNames], ", ") + fmt.Sprintf(" and %d more", len(inactive)-digest.MaxInactiveNames)
		for part, body := range map[string]string{"text": text, "HTML": page} {
			if !strings.Contains(body, wantLine) || !strings.Contains(body, wantNames) {
				t.Errorf("the %s part lacks %q and %q:\n%s", part, wantLine, wantNames, body)
			}
		}

		// Links: the dashboard on the week, and an unsubscribe page; no
		// image nor anything else from another host.
		dashboard := e.server.URL + "/?endDate=2026-11-15&interval=day&startDate=2026-11-09"
		unsubscribe := strings.Trim(m.Header.Get("List-Unsubscribe"), "<>")
		if !strings.HasPrefix(unsubscribe, e.server.URL+"/unsubscribe?token=gau_") ||
			m.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
			t.Errorf("List-Unsubscribe %q", m.Header.Get("List-Unsubscribe"))
		}
		for _, link := range []string{dashboard, unsubscribe} {
			if !strings.Contains(text, link) || !strings.Contains(m.Parts["text/html"], html.EscapeString(link)) {
				t.Errorf("a part lacks the link %s", link)
			}
		}
		if regexp.MustCompile(`(?i)<img|src=|url\(|<link|<script`).MatchString(m.Parts["text/html"]) {
			t.Errorf("the HTML part loads something:\n%s", m.Parts["text/html"])
		}
	})
}

// TestDigestOfAClass: a recipient added with a class (its teacher) gets
// the class's digest: its figures as the report API gives them with
// classId, its inactive members only, under its name; the school's
// recipient gets the school's. An unknown class is refused; the class
// deleted, its recipient goes too.
func TestDigestOfAClass(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		d := newDigestEnv(t, e, mailtest.Options{})
		key := e.school("north", "UTC")
		token := e.token()
		for i, name := range []string{"Ada", "Ben", "Cy", "Dee"} {
			e.enrol("north", fmt.Sprintf("s%d", i), name)
		}
		e.send(message("north", "s0", "main", "2026-11-10T09:00:00Z"), message("north", "s2", "test", "2026-11-11T09:00:00Z"),
			session("north", "s3", "2026-11-12T09:00:00Z"))
		e.mustCall("POST", "/v1/admin/groups/north/classes", token, `{"id": "bio", "name": "Biology", "studentIds": ["s0", "s1"]}`, 201)
		if got := e.mustCall("POST", "/v1/admin/groups/north/digest-recipients", token, `{"address": "ortiz@north.example", "classId": "bio"}`, 201); got["classId"] != "bio" {
			t.Errorf("added %v", got)
		}
		if resp := e.call("POST", "/v1/admin/groups/north/digest-recipients", token, `{"address": "li@north.example", "classId": "chem"}`); resp.status != 400 ||
			resp.json(t)["error"] != `Invalid classId: no class "chem" in group "north"` {
			t.Errorf("an unknown class: %d %s", resp.status, resp.body)
		}
		d.addRecipient(token, "north", "head@north.example")
		e.clock.Set(at("UTC", "2026-11-16 07:00"))
		d.round()
		texts := map[string]string{}
		for _, m := range d.mail.WaitFor(t, 2, 10*time.Second) {
			texts[m.To[0]] = parseDigest(t, m.Data).Parts["text/plain"]
		}
		class, school := texts["ortiz@north.example"], texts["head@north.example"]
		const week = "startDate=2026-11-09&endDate=2026-11-15"
		for _, c := range []struct {
			text, query, heading, inactive string
		}{
			{class, week + "&classId=bio", "Weekly digest of Biology (School north), 9–15 November 2026", "Inactive all week: 1 of 2 students.\n  Ben\n"},
			{school, week, "Weekly digest of School north, 9–15 November 2026", "Inactive all week: 1 of 4 students.\n  Ben\n"},
		} {
			if !strings.Contains(c.text, c.heading) || !strings.Contains(c.text, c.inactive) {
				t.Errorf("a digest lacks %q or %q:\n%s", c.heading, c.inactive, c.text)
			}
			r := e.reports("chat", key, c.query)[0]
			line := fmt.Sprintf("  %-24s %9d", "Total Messages", r.Data[0].Value)
			if !strings.Contains(c.text, line) {
				t.Errorf("%s: the digest lacks %q:\n%s", c.query, line, c.text)
			}
		}
		e.mustCall("DELETE", "/v1/admin/groups/north/classes/bio", token, "", 204)
		got := e.mustCall("GET", "/v1/admin/groups/north/digest-recipients", token, "", 200)["recipients"].([]any)
		if len(got) != 1 || got[0].(map[string]any)["address"] != "head@north.example" {
			t.Errorf("after the class's deletion, recipients %v", got)
		}
	})
}

// TestDigestHidesSmallCells: a school with a minCellSize gets its digest
// with the figures the report API hides said to be hidden, and not
// compared; a 0 stays a 0.
func TestDigestHidesSmallCells(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		d := newDigestEnv(t, e, mailtest.Options{})
		e.school("north", "UTC")
		token := e.token()
		if _, err := e.platform.SetMinCellSize(ctx, "north", 10); err != nil {
			t.Fatal(err)
		}
		e.send(message("north", "s01", "main", "2026-11-10T09:00:00Z"), message("north", "s02", "main", "2026-11-04T09:00:00Z"))
		d.addRecipient(token, "north", "head@north.example")
		e.clock.Set(at("UTC", "2026-11-16 07:00"))
		d.round()
		text := parseDigest(t, d.mail.WaitFor(t, 1, 10*time.Second)[0].Data).Parts["text/plain"]
		for _, line := range []string{
			fmt.Sprintf("  %-24s %9s  %s", "Total Messages", "hidden", "not compared (hidden the week before)"),
			fmt.Sprintf("  %-24s %9s  %s", "Tutor Me Messages", "0", "no change (0 the week before)"),
			fmt.Sprintf("  %-24s %9s  %s", digest.UsersTitle, "hidden", "not compared (hidden the week before)"),
		} {
			if !strings.Contains(text, line+"\n") {
				t.Errorf("the text part lacks %q:\n%s", line, text)
			}
		}
	})
}

// TestDigestWeekStartsAtSevenOnMonday: before 07:00 on Monday in the
// group's zone, the digest due is the week before last's.
func TestDigestWeekStartsAtSevenOnMonday(t *testing.T) {
	tests := []struct {
		zone, wall, want string
	}{
		{"Pacific/Auckland", "2026-11-16 06:59", "2026-W45"},
		{"Pacific/Auckland", "2026-11-16 07:00", "2026-W46"},
		{"Pacific/Auckland", "2026-11-22 23:59", "2026-W46"},
		{"UTC", "2026-11-23 07:00", "2026-W47"},
		{"America/Los_Angeles", "2026-11-16 06:59", "2026-W45"},
		{"Europe/Berlin", "2026-03-30 07:00", "2026-W13"}, // the Monday after the clocks go forward
		{"UTC", "2027-01-04 07:00", "2026-W53"},           // 2026 has 53 weeks
	}
	for _, tt := range tests {
		loc, _ := analytics.LoadZone(tt.zone)
		if got := digest.DueWeek(at(tt.zone, tt.wall), loc).String(); got != tt.want {
			t.Errorf("%s %s: %s, want %s", tt.zone, tt.wall, got, tt.want)
		}
	}
}

// TestDigestOnceAcrossProcesses: three senders, each on stores of its own
// over the same database as separate processes have, run rounds at once,
// then one more (a restart): each recipient gets one digest.
func TestDigestOnceAcrossProcesses(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			dsn := storetest.NewDSN(t, dialect)
			e := newEnv(t, storetest.SQL(storetest.OpenDSN(t, dsn)))
			d := newDigestEnv(t, e, mailtest.Options{})
			e.school("north", "Europe/Berlin")
			token := e.token()
			for i := range 6 {
				d.addRecipient(token, "north", fmt.Sprintf("staff%d@north.example", i))
			}
			e.clock.Set(at("Europe/Berlin", "2026-11-16 08:00"))
			senders := func() []*digest.Sender {
				var ss []*digest.Sender
				for range 3 {
					store := storetest.SQL(storetest.OpenDSN(t, dsn))
					s := *d.sender
					s.Directory, s.Engine = store.Directory, reportengine.NewEngine(store.Directory, store.Usage)
					ss = append(ss, &s)
				}
				return ss
			}
			var wg sync.WaitGroup
			for _, s := range senders() {
				for range 2 {
					wg.Go(func() {
						if err := s.Round(ctx); err != nil {
							t.Error(err)
						}
					})
				}
			}
			wg.Wait()
			if err := senders()[0].Round(ctx); err != nil { // a process started later
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, m := range d.mail.Messages() {
				got[m.To[0]]++
			}
			if len(got) != 6 {
				t.Errorf("digests went to %d recipients, want 6: %v", len(got), got)
			}
			for to, n := range got {
				if n != 1 {
					t.Errorf("%s got %d digests, want 1", to, n)
				}
			}
		})
	}
}

// TestDigestRetries: a server that refuses for now is tried again within
// the round, then in later rounds; one that refuses for good is not.
func TestDigestRetries(t *testing.T) {
	e := newEnv(t, storetest.SQL(storetest.Open(t, "sqlite")))
	d := newDigestEnv(t, e, mailtest.Options{})
	m := metrics.New()
	d.sender.Metrics = m
	e.school("north", "UTC")
	d.addRecipient(e.token(), "north", "head@north.example")
	sent := func(want int) {
		t.Helper()
		if n := len(d.mail.Messages()); n != want {
			t.Fatalf("%d messages, want %d\n%s", n, want, d.logs)
		}
	}

	d.mail.Refuse(451, 421) // the third try of the round goes through
	e.clock.Set(at("UTC", "2026-11-16 07:00"))
	d.round()
	sent(1)

	d.mail.Refuse(451, 451, 451) // every try of the round
	e.clock.Set(at("UTC", "2026-11-23 07:00"))
	d.round()
	d.round()
	sent(1)
	if !strings.Contains(d.logs.String(), `"outcome":"will retry"`) {
		t.Errorf("no retry logged:\n%s", d.logs)
	}
	e.clock.Set(e.clock.Now().Add(d.sender.RetryAfter))
	d.round()
	sent(2)

	d.mail.Refuse(550) // refused for good
	e.clock.Set(at("UTC", "2026-11-30 07:00"))
	d.round()
	e.clock.Set(e.clock.Now().Add(time.Hour))
	d.round()
	sent(2)
	if !strings.Contains(d.logs.String(), `"outcome":"given up"`) {
		t.Errorf("not logged as given up:\n%s", d.logs)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range []string{`groupanalytics_digests_total{result="sent"} 2`, `groupanalytics_digests_total{result="retry"} 1`,
		`groupanalytics_digests_total{result="given_up"} 1`} {
		if !strings.Contains(rec.Body.String(), line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
}

// TestUnsubscribe follows a digest's unsubscribe link: the page it opens
// changes nothing, its button (or a mail client's one-click post)
// removes the recipient, a link used once is a 404, and one cut short of
// its token a 400 page.
func TestUnsubscribe(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		d := newDigestEnv(t, e, mailtest.Options{})
		e.school("north", "UTC")
		token := e.token()
		d.addRecipient(token, "north", "head@north.example")
		d.addRecipient(token, "north", "staff@north.example")
		e.clock.Set(at("UTC", "2026-11-16 07:00"))
		d.round()
		var link string
		for _, m := range d.mail.WaitFor(t, 2, 10*time.Second) {
			if m.To[0] == "head@north.example" {
				link = strings.Trim(parseDigest(t, m.Data).Header.Get("List-Unsubscribe"), "<>")
			}
		}
		u, err := url.Parse(link)
		if err != nil || u.Query().Get("token") == "" {
			t.Fatalf("unsubscribe link %q", link)
		}
		path := u.Path + "?" + u.RawQuery

		page := e.do("GET", path, "", "")
		if page.status != http.StatusOK || !strings.Contains(string(page.body), `<form method="post">`) {
			t.Fatalf("GET the link: %d\n%s", page.status, page.body)
		}
		recipients := func() []any {
			return e.mustCall("GET", "/v1/admin/groups/north/digest-recipients", token, "", http.StatusOK)["recipients"].([]any)
		}
		if n := len(recipients()); n != 2 {
			t.Fatalf("opening the link removed a recipient: %d left", n)
		}
		done := e.do("POST", path, "", "List-Unsubscribe=One-Click", "Content-Type", "application/x-www-form-urlencoded")
		if done.status != http.StatusOK || !strings.Contains(string(done.body), "head@north.example will no longer receive the weekly digest of School north") {
			t.Fatalf("POST the link: %d\n%s", done.status, done.body)
		}
		if got := recipients(); len(got) != 1 || got[0].(map[string]any)["address"] != "staff@north.example" {
			t.Errorf("recipients after unsubscribing: %v", got)
		}
		if again := e.do("POST", path, "", ""); again.status != http.StatusNotFound || !strings.Contains(string(again.body), "not valid") {
			t.Errorf("the link used again: %d\n%s", again.status, again.body)
		}
		if bad := e.do("POST", "/unsubscribe?token=nope", "", ""); bad.status != http.StatusNotFound {
			t.Errorf("a made-up token: %d", bad.status)
		}
		// A link cut short of its token says so, and offers no button.
		if cut := e.do("GET", "/unsubscribe", "", ""); cut.status != http.StatusBadRequest ||
			!strings.Contains(string(cut.body), "This link has lost its token") || strings.Contains(string(cut.body), "<form") {
			t.Errorf("a link without its token: %d\n%s", cut.status, cut.body)
		}

		e.clock.Set(at("UTC", "2026-11-23 07:00"))
		d.round()
		msgs := d.mail.WaitFor(t, 3, 10*time.Second)
		if last := msgs[len(msgs)-1]; last.To[0] != "staff@north.example" || len(msgs) != 3 {
			t.Errorf("the next week went to %v in %d messages, want staff@ only", last.To, len(msgs))
		}
	})
}

// TestDigestRecipientsAdmin: add, list and remove through the admin API;
// addresses are checked, and each is once per group.
func TestDigestRecipientsAdmin(t *testing.T) {
	e := newEnv(t, storetest.SQL(storetest.Open(t, "sqlite")))
	e.school("north", "UTC")
	token := e.token()
	const path = "/v1/admin/groups/north/digest-recipients"
	got := e.mustCall("POST", path, token, `{"address": "Head@North.EXAMPLE"}`, http.StatusCreated)
	if got["address"] != "Head@north.example" || got["createdAt"] != analytics.FormatTime(testNow) {
		t.Errorf("added %v", got)
	}
	tests := []struct {
		method, path, body string
		status             int
		message            string
	}{
		{"POST", path, `{"address": "Head@north.example"}`, 409, `Head@north.example already receives the digest of group "north"`},
		{"POST", path, `{"address": "Head <head@north.example>"}`, 400, `Invalid address "Head <head@north.example>": give the address alone, such as head@school.example`},
		{"POST", path, `{"address": "north.example"}`, 400, `Invalid address "north.example": expected an email address such as head@school.example`},
		{"POST", path, `{"address": "head@localhost"}`, 400, `Invalid address "head@localhost": expected a domain name after the @, such as school.example`},
		{"POST", path, `{}`, 400, "Missing address"},
		{"POST", path, `{"address": "a@b.example", "name": "x"}`, 400, `Invalid body: unknown field "name"`},
		{"POST", "/v1/admin/groups/south/digest-recipients", `{"address": "a@b.example"}`, 404, `Group "south" not found`},
		{"DELETE", path + "/nobody@north.example", "", 404, `nobody@north.example does not receive the digest of group "north"`},
	}
	for _, tt := range tests {
		resp := e.call(tt.method, tt.path, token, tt.body)
		if resp.status != tt.status || resp.errorMessage(t) != tt.message {
			t.Errorf("%s %s %s: %d %q, want %d %q", tt.method, tt.path, tt.body, resp.status, resp.errorMessage(t), tt.status, tt.message)
		}
	}
	if resp := e.call("GET", path, "", ""); resp.status != http.StatusUnauthorized {
		t.Errorf("without a token: %d", resp.status)
	}
	e.mustCall("POST", path, token, `{"address": "a@north.example"}`, http.StatusCreated)
	list := e.mustCall("GET", path, token, "", http.StatusOK)["recipients"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["address"] != "Head@north.example" {
		t.Errorf("list: %v", list)
	}
	e.mustCall("DELETE", path+"/Head@North.example", token, "", http.StatusNoContent)
	if list := e.mustCall("GET", path, token, "", http.StatusOK)["recipients"].([]any); len(list) != 1 {
		t.Errorf("after removing one: %v", list)
	}
}

// parseDigest reads a digest message, failing the test if it is not one.
func parseDigest(t *testing.T, data []byte) mailtest.Parsed {
	t.Helper()
	m, err := mailtest.Parse(data)
	if err != nil || m.Parts["text/plain"] == "" || m.Parts["text/html"] == "" {
		t.Fatalf("not a digest with two parts: %v\n%s", err, data)
	}
	return m
}

// htmlText is an HTML part's text: its tags as spaces, its entities
// read, its spaces collapsed.
func htmlText(page string) string {
	text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, " "))
	return strings.Join(strings.Fields(text), " ")
}
