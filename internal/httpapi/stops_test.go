package httpapi_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/digest"
	"groupanalytics/internal/digest/mailtest"
	reportengine "groupanalytics/internal/report"
)

// TestStopAlerts: when students of a class cross into stopped, each of
// the class's recipients gets one message naming them, once per crossing,
// from 07:00 in the school's zone: not again in a later round nor by a
// process started since, again for a student who came back and stopped
// again, and never to the school's own recipients. The weekly digest
// lists who stopped.
func TestStopAlerts(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		d := newDigestEnv(t, e, mailtest.Options{})
		e.school("north", "America/New_York")
		token := e.token()
		for i, name := range []string{"Ada", "Ben", "Cy", "Dee"} {
			e.enrol("north", "s"+string(rune('0'+i)), name)
		}
		e.send(message("north", "s0", "main", "2026-11-10T15:00:00Z"), session("north", "s1", "2026-11-12T15:00:00Z"),
			message("north", "s3", "test", "2026-11-10T15:00:00Z"))
		e.mustCall("POST", "/v1/admin/groups/north/classes", token, `{"id": "bio", "name": "Biology", "studentIds": ["s0", "s1", "s2"]}`, 201)
		for _, body := range []string{`{"address": "ortiz@north.example", "classId": "bio"}`, `{"address": "li@north.example", "classId": "bio"}`} {
			e.mustCall("POST", "/v1/admin/groups/north/digest-recipients", token, body, 201)
		}
		d.addRecipient(token, "north", "head@north.example")
		told := 0
		roundAt := func(sender *digest.Sender, wall string, want ...string) {
			t.Helper()
			e.clock.Set(at("America/New_York", wall))
			if err := sender.StopRound(ctx); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				time.Sleep(50 * time.Millisecond)
				if n := len(d.mail.Messages()); n != told {
					t.Fatalf("%s: %d messages, want %d", wall, n, told)
				}
				return
			}
			msgs := d.mail.WaitFor(t, told+2, 10*time.Second)
			var to []string
			for _, m := range msgs[told:] {
				to = append(to, m.To[0])
				text := parseDigest(t, m.Data).Parts["text/plain"]
				for _, line := range want {
					if !strings.Contains(text, line) {
						t.Errorf("%s: the message to %s lacks %q:\n%s", wall, m.To[0], line, text)
					}
				}
				for _, name := range []string{"Ada", "Ben", "Cy", "Dee"} {
					if !slices.ContainsFunc(want, func(l string) bool { return strings.HasPrefix(l, "  "+name) }) && strings.Contains(text, "  "+name+" (") {
						t.Errorf("%s: the message names %s:\n%s", wall, name, text)
					}
				}
			}
			if slices.Sort(to); strings.Join(to, " ") != "li@north.example ortiz@north.example" {
				t.Errorf("%s: sent to %v", wall, to)
			}
			told += 2
		}
		roundAt(d.sender, "2026-11-16 08:00")
		roundAt(d.sender, "2026-11-17 06:30") // Ada has stopped, but it is before 07:00
		roundAt(d.sender, "2026-11-17 07:10", "  Ada (s0): last used it on 2026-11-10, 7 days ago", "not in the last 7 days")
		roundAt(d.sender, "2026-11-17 09:00")
		// A process started since sends nothing it told already.
		restarted := digest.NewSender(e.platform.Directory, reportengine.NewEngine(e.platform.Directory, e.platform.Usage), d.sender.Mailer,
			e.server.URL, slog.New(slog.NewJSONHandler(d.logs, nil)))
		restarted.Now = e.clock.Now
		roundAt(restarted, "2026-11-18 08:00")
		roundAt(restarted, "2026-11-19 08:00", "  Ben (s1): last used it on 2026-11-12, 7 days ago")
		// Ada comes back, and stops again.
		e.send(session("north", "s0", "2026-11-19T12:00:00Z"))
		roundAt(d.sender, "2026-11-20 08:00")
		roundAt(restarted, "2026-11-26 07:30", "  Ada (s0): last used it on 2026-11-19, 7 days ago")
		// The class's weekly digest lists who stopped.
		e.clock.Set(at("America/New_York", "2026-11-30 07:00"))
		d.round()
		for _, m := range d.mail.WaitFor(t, told+3, 10*time.Second)[told:] {
			text := parseDigest(t, m.Data).Parts["text/plain"]
			want := "Stopped (used it before, not in the last 7 days): 2 students, the longest first, with their last day.\n  Ben (2026-11-12), Ada (2026-11-19)\n"
			if m.To[0] == "head@north.example" {
				want = "Stopped (used it before, not in the last 7 days): 3 students, the longest first, with their last day.\n  Dee (2026-11-10), Ben (2026-11-12), Ada (2026-11-19)\n"
			}
			if !strings.Contains(text, want) {
				t.Errorf("the digest to %s lacks %q:\n%s", m.To[0], want, text)
			}
		}
	})
}
