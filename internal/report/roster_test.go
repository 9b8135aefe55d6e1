package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/report"
	"groupanalytics/internal/stores/storetest"
)

// twoProcesses opens the stores of two processes on one new database of
// kind.
func twoProcesses(t *testing.T, kind string) (one, other storetest.Stores) {
	if kind == "clickhouse" {
		dir, usage := storetest.NewPostgresDatabase(t), storetest.NewClickHouseURL(t)
		return storetest.OpenClickHouse(t, dir, usage), storetest.OpenClickHouse(t, dir, usage)
	}
	dsn := storetest.NewDSN(t, kind)
	return storetest.SQL(storetest.OpenDSN(t, dsn)), storetest.SQL(storetest.OpenDSN(t, dsn))
}

// TestRosterKeptAcrossProcesses: an engine keeps each group's students
// (and a SQL store its ordinals) between reports, and its next report
// after any change of them, made by another process on the same stores,
// is as if nothing were kept: enrolment by an event or by the admin,
// a first event of a student enrolled before, renames (by the admin, by an
// event, by a roster), erasure, and the group deleted and made again.
func TestRosterKeptAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			one, other := twoProcesses(t, kind)
			engine := report.NewEngine(one.Directory, one.Usage)
			p := platform.New(other.Directory, other.Usage)
			now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
			seq := 0
			send := func(student, name string) {
				t.Helper()
				seq++
				named := ""
				if name != "" {
					named = fmt.Sprintf(`, "studentName": %q`, name)
				}
				ev := fmt.Sprintf(`{"id": "e%d", "groupId": "north", "studentId": %q%s, "occurredAt": "2026-03-02T10:00:00Z", "kind": "chat.message_sent", "chatType": "main"}`, seq, student, named)
				if res, err := p.Ingest(ctx, []json.RawMessage{json.RawMessage(ev)}, true); err != nil || res.Accepted != 1 {
					t.Fatalf("%+v %v", res, err)
				}
			}
			// What the engine of the first process answers: each student as
			// "id name total".
			students := func() string {
				t.Helper()
				g, err := one.Directory.Group(ctx, "north")
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				err = engine.Run(ctx, g, report.Chat, report.Query{Students: true, Interval: analytics.Whole}, now, func(r *report.Report) error {
					out = append(out, fmt.Sprintf("%s %s %d", r.Student.ID, r.Student.Name, r.Values[0]))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return strings.Join(out, ", ")
			}
			check := func(after, want string) {
				t.Helper()
				for range 2 { // the first reads, the second is kept
					if got := students(); got != want {
						t.Fatalf("after %s: %q, want %q", after, got, want)
					}
				}
			}
			if _, err := p.CreateGroup(ctx, "north", "North", "UTC"); err != nil {
				t.Fatal(err)
			}
			send("s1", "Ann")
			send("s2", "Bob")
			check("two students' events", "s1 Ann 1, s2 Bob 1")
			if _, err := p.AddStudent(ctx, "north", "s3", "Cy"); err != nil {
				t.Fatal(err)
			}
			check("an enrolment", "s1 Ann 1, s2 Bob 1, s3 Cy 0")
			send("s3", "")
			check("the first event of a student enrolled before", "s1 Ann 1, s2 Bob 1, s3 Cy 1")
			if _, err := p.RenameStudent(ctx, "north", "s1", "Zoe"); err != nil {
				t.Fatal(err)
			}
			check("a rename", "s2 Bob 1, s3 Cy 1, s1 Zoe 1")
			send("s2", "Abe")
			check("a rename by an event", "s2 Abe 2, s3 Cy 1, s1 Zoe 1")
			if err := other.Directory.ApplyRoster(ctx, "north", analytics.RosterChange{Students: []analytics.StudentUpdate{{ID: "s3", Name: "Al"}, {ID: "s4", Name: "Dee"}}}); err != nil {
				t.Fatal(err)
			}
			check("a roster", "s2 Abe 2, s3 Al 1, s4 Dee 0, s1 Zoe 1")
			if err := p.DeleteStudent(ctx, "north", "s2"); err != nil {
				t.Fatal(err)
			}
			check("an erasure", "s3 Al 1, s4 Dee 0, s1 Zoe 1")
			if err := p.DeleteGroup(ctx, "north"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.CreateGroup(ctx, "north", "North again", "UTC"); err != nil {
				t.Fatal(err)
			}
			send("s9", "Ida")
			check("the group made again", "s9 Ida 1")
		})
	}
}

// TestClassCountsKeptAcrossProcesses: an engine keeps a class's counts of
// the group's rows and the group's classes between reports, and its next
// class report (and student report) after any change, made by another
// process on the same stores, equals that of an engine that keeps nothing: events of members
// and of others, in rows read before and in new ones; members changed, by
// the admin and by a roster; the class deleted and made again; an
// erasure; a new zone; a retention.
func TestClassCountsKeptAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			one, other := twoProcesses(t, kind)
			engine := report.NewEngine(one.Directory, one.Usage)
			engine.KeepSumsFrom = 0
			p := platform.New(other.Directory, other.Usage)
			now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
			seq := 0
			send := func(student, at string) {
				t.Helper()
				seq++
				ev := fmt.Sprintf(`{"id": "e%d", "groupId": "north", "studentId": %q, "occurredAt": %q, "kind": "chat.message_sent", "chatType": "main"}`, seq, student, at)
				if res, err := p.Ingest(ctx, []json.RawMessage{json.RawMessage(ev)}, true); err != nil || res.Accepted != 1 {
					t.Fatalf("%+v %v", res, err)
				}
			}
			// The class's daily, weekly and monthly reports as "start used
			// total" lines, then the school's students' as "start id total",
			// or the error.
			reports := func(e *report.Engine) string {
				t.Helper()
				g, err := one.Directory.Group(ctx, "north")
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, iv := range []analytics.Interval{analytics.Daily, analytics.Weekly, analytics.Monthly} {
					err = e.Run(ctx, g, report.Chat, report.Query{ClassID: "c1", Interval: iv}, now, func(r *report.Report) error {
						if r.Values[0] != 0 {
							out = append(out, fmt.Sprintf("%s %d %d", r.Start.Format(time.DateOnly), r.NumStudentsUsed, r.Values[0]))
						}
						return nil
					})
					if err != nil {
						return err.Error()
					}
					// And the school's student reports, whose periods' sums
					// are kept too (sums.go).
					err = e.Run(ctx, g, report.Chat, report.Query{Students: true, Interval: iv}, now, func(r *report.Report) error {
						if r.Values[0] != 0 {
							out = append(out, fmt.Sprintf("%s %s %d", r.Start.Format(time.DateOnly), r.Student.ID, r.Values[0]))
						}
						return nil
					})
					if err != nil {
						return err.Error()
					}
				}
				return strings.Join(out, ", ")
			}
			check := func(after string) {
				t.Helper()
				want := reports(report.NewEngine(other.Directory, other.Usage))
				for range 2 { // the first reads, the second is kept
					if got := reports(engine); got != want {
						t.Fatalf("after %s: %q, want %q", after, got, want)
					}
				}
			}
			if _, err := p.CreateGroup(ctx, "north", "North", "UTC"); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"s1", "s2", "s3", "s4"} {
				send(s, "2026-02-10T23:30:00Z")
			}
			// 2026-02-18 in UTC: s1 twice, s3 once; in Kiritimati (UTC+14)
			// s1 once, s3 twice: the same counts and students in the day's
			// row of either zone, of which s1's share differs.
			for _, ev := range [][2]string{{"s1", "2026-02-18T05:00:00Z"}, {"s1", "2026-02-18T12:00:00Z"}, {"s3", "2026-02-18T03:00:00Z"}, {"s3", "2026-02-17T20:00:00Z"}} {
				send(ev[0], ev[1])
			}
			if _, err := p.CreateClass(ctx, analytics.Class{GroupID: "north", ID: "c1", Name: "One", Members: []string{"s1", "s2"}}); err != nil {
				t.Fatal(err)
			}
			check("a class made")
			send("s1", "2026-02-10T23:30:00Z")
			check("a member's event in a row read before")
			send("s3", "2026-02-11T23:30:00Z")
			check("another's event")
			send("s2", "2026-03-03T23:30:00Z")
			check("a member's event in new rows")
			if _, err := p.SetClassMembers(ctx, "north", "c1", []string{"s2", "s3"}); err != nil {
				t.Fatal(err)
			}
			check("new members")
			if err := other.Directory.ApplyRoster(ctx, "north", analytics.RosterChange{Classes: []analytics.Class{{GroupID: "north", ID: "c1", Name: "One", Members: []string{"s3", "s4"}}}}); err != nil {
				t.Fatal(err)
			}
			check("members by a roster")
			if err := p.DeleteClass(ctx, "north", "c1"); err != nil {
				t.Fatal(err)
			}
			check("the class deleted")
			if _, err := p.CreateClass(ctx, analytics.Class{GroupID: "north", ID: "c1", Name: "One", Members: []string{"s1", "s4"}}); err != nil {
				t.Fatal(err)
			}
			check("the class made again")
			if err := p.DeleteStudent(ctx, "north", "s4"); err != nil {
				t.Fatal(err)
			}
			check("a member erased")
			if _, err := p.SetTimeZone(ctx, "north", "Pacific/Kiritimati"); err != nil {
				t.Fatal(err)
			}
			check("a new zone")
			if _, err := p.SetRetention(ctx, "north", "30d"); err != nil {
				t.Fatal(err)
			}
			check("a retention")
		})
	}
}
