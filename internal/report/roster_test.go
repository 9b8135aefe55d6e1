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
			var one, other storetest.Stores
			if kind == "clickhouse" {
				dir, usage := storetest.NewPostgresDatabase(t), storetest.NewClickHouseURL(t)
				one, other = storetest.OpenClickHouse(t, dir, usage), storetest.OpenClickHouse(t, dir, usage)
			} else {
				dsn := storetest.NewDSN(t, kind)
				one, other = storetest.SQL(storetest.OpenDSN(t, dsn)), storetest.SQL(storetest.OpenDSN(t, dsn))
			}
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
