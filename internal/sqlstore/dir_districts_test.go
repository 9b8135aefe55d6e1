package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/stores/storetest"
)

// TestAuthorizeRefusesEveryCause: one lookup finds a school's key and a
// district's; a revoked key of either kind, a key of a school whose plan
// ended, of a district none of whose schools has a valid plan, and a hash
// no key has are refused alike.
func TestAuthorizeRefusesEveryCause(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx, now := context.Background(), time.Now()
			store := storetest.Open(t, dialect)
			for _, g := range []struct {
				id    string
				ended bool
			}{{"s", false}, {"ended", true}} {
				if err := store.CreateGroup(ctx, analytics.Group{ID: g.id, Name: "School", TimeZone: "UTC"}); err != nil {
					t.Fatal(err)
				}
				plan := analytics.Plan{GroupID: g.id, Starts: now.Add(-time.Hour)}
				if g.ended {
					ends := now.Add(-time.Minute)
					plan.Ends = &ends
				}
				if _, err := store.AddPlan(ctx, plan); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range []struct{ id, school string }{{"d", "s"}, {"unplanned", "ended"}} {
				if err := store.CreateDistrict(ctx, analytics.District{ID: d.id, Name: d.id, TimeZone: "UTC"}); err != nil {
					t.Fatal(err)
				}
				if err := store.AttachSchool(ctx, d.id, d.school); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range []analytics.APIKey{
				{GroupID: "s", ID: "k", Hash: analytics.HashSecret("school"), Prefix: "gak_", Created: now},
				{GroupID: "s", ID: "revoked-k", Hash: analytics.HashSecret("revoked school"), Prefix: "gak_", Created: now},
				{GroupID: "ended", ID: "ended-k", Hash: analytics.HashSecret("ended"), Prefix: "gak_", Created: now},
			} {
				if err := store.AddKey(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range []analytics.APIKey{
				{DistrictID: "d", ID: "dk", Hash: analytics.HashSecret("district"), Prefix: "gad_", Created: now},
				{DistrictID: "d", ID: "revoked-dk", Hash: analytics.HashSecret("revoked district"), Prefix: "gad_", Created: now},
				{DistrictID: "unplanned", ID: "unplanned-dk", Hash: analytics.HashSecret("unplanned"), Prefix: "gad_", Created: now},
			} {
				if err := store.AddDistrictKey(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if err := store.RevokeKey(ctx, "s", "revoked-k", now.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := store.RevokeDistrictKey(ctx, "d", "revoked-dk", now.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ secret, want string }{
				{"school", "school s"}, {"district", "district d"},
				{"revoked school", "Unauthorized"}, {"revoked district", "Unauthorized"}, {"ended", "Unauthorized"},
				{"unplanned", "Unauthorized"}, {"none", "Unauthorized"},
			} {
				a, err := store.Authorize(ctx, analytics.HashSecret(c.secret), now)
				got := "school " + a.Group.ID
				switch {
				case err != nil:
					got = err.Error()
				case a.District != nil:
					got = "district " + a.District.District.ID
				}
				if got != c.want {
					t.Errorf("%s: %s, want %s", c.secret, got, c.want)
				}
			}
		})
	}
}

// TestDistrictAccessFollowsChanges: what a district's key opens, asked of
// one process while another changes the district's schools and their
// plans, follows every change at once (the first process keeps it between
// requests), and a plan's end at the time it ends.
func TestDistrictAccessFollowsChanges(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx, now := context.Background(), time.Now()
			dsn := storetest.NewDSN(t, dialect)
			asked, changer := storetest.OpenDSN(t, dsn), storetest.OpenDSN(t, dsn)
			plans := map[string]int64{}
			for _, g := range []string{"s1", "s2", "s3", "s4"} {
				if err := changer.CreateGroup(ctx, analytics.Group{ID: g, Name: "School " + g, TimeZone: "UTC"}); err != nil {
					t.Fatal(err)
				}
				p, err := changer.AddPlan(ctx, analytics.Plan{GroupID: g, Starts: now.Add(-time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				plans[g] = p.ID
			}
			if err := changer.CreateDistrict(ctx, analytics.District{ID: "d", Name: "d", TimeZone: "UTC"}); err != nil {
				t.Fatal(err)
			}
			for _, g := range []string{"s1", "s2", "s3"} {
				if err := changer.AttachSchool(ctx, "d", g); err != nil {
					t.Fatal(err)
				}
			}
			key := analytics.APIKey{DistrictID: "d", ID: "dk", Hash: analytics.HashSecret("district"), Prefix: "gad_", Created: now}
			if err := changer.AddDistrictKey(ctx, key); err != nil {
				t.Fatal(err)
			}
			// opened names the schools the key opens at, and those left out.
			opened := func(at time.Time) string {
				t.Helper()
				a, err := asked.Authorize(ctx, key.Hash, at)
				if err != nil {
					return err.Error()
				}
				da, err := asked.DistrictAccess(ctx, "d", at)
				if err != nil {
					t.Fatal(err)
				}
				return names(a.District.Schools) + " / " + names(a.District.Unplanned) + " | " + names(da.Schools) + " / " + names(da.Unplanned)
			}
			steps := []struct {
				change func() error
				at     time.Time
				want   string
			}{
				{func() error { return nil }, now, "School s1 School s2 School s3 /  | School s1 School s2 School s3 / "},
				{func() error { _, err := changer.CancelPlan(ctx, "s2", plans["s2"], now.Add(-time.Minute)); return err }, now,
					"School s1 School s3 / School s2 | School s1 School s3 / School s2"},
				{func() error { return changer.RenameGroup(ctx, "s1", "Renamed") }, now, "Renamed School s3 / School s2 | Renamed School s3 / School s2"},
				{func() error { return changer.DetachSchool(ctx, "d", "s3") }, now, "Renamed / School s2 | Renamed / School s2"},
				{func() error { return changer.AttachSchool(ctx, "d", "s4") }, now, "Renamed School s4 / School s2 | Renamed School s4 / School s2"},
				{func() error {
					end := now.Add(2 * time.Hour)
					_, err := changer.AddPlan(ctx, analytics.Plan{GroupID: "s2", Starts: now.Add(-time.Minute), Ends: &end})
					return err
				}, now, "Renamed School s2 School s4 /  | Renamed School s2 School s4 / "},
				{func() error { return nil }, now.Add(3 * time.Hour), "Renamed School s4 / School s2 | Renamed School s4 / School s2"},
				{func() error { _, err := changer.EraseGroup(ctx, "s1"); return err }, now, "School s2 School s4 /  | School s2 School s4 / "},
				{func() error {
					if err := changer.DeleteDistrict(ctx, "d"); err != nil {
						return err
					}
					if err := changer.CreateDistrict(ctx, analytics.District{ID: "d", Name: "d", TimeZone: "UTC"}); err != nil {
						return err
					}
					if err := changer.AttachSchool(ctx, "d", "s3"); err != nil {
						return err
					}
					return changer.AddDistrictKey(ctx, key)
				}, now, "School s3 /  | School s3 / "},
			}
			for i, step := range steps {
				if err := step.change(); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := opened(step.at); got != step.want {
					t.Errorf("step %d: %q, want %q", i, got, step.want)
				}
			}
		})
	}
}

// names are the groups' names, in order.
func names(groups []analytics.Group) string {
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, g.Name)
	}
	return b.String()
}

// TestEnrolmentCountsEveryStudent: the students Enrolment counts are the
// students the group has, after each way of enrolling and erasing them,
// from two processes.
func TestEnrolmentCountsEveryStudent(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx, now := context.Background(), time.Now()
			dsn := storetest.NewDSN(t, dialect)
			stores := []*sqlstore.Store{storetest.OpenDSN(t, dsn), storetest.OpenDSN(t, dsn)}
			groups := []string{"a", "b"}
			for _, g := range groups {
				if err := stores[0].CreateGroup(ctx, analytics.Group{ID: g, Name: g, TimeZone: "UTC", Created: now}); err != nil {
					t.Fatal(err)
				}
			}
			at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
			rng := rand.New(rand.NewPCG(31, 1))
			for i := range 60 {
				store, g := stores[i%2], groups[rng.IntN(2)]
				student := fmt.Sprintf("s%02d", rng.IntN(30))
				var err error
				switch rng.IntN(4) {
				case 0:
					err = store.SaveStudents(ctx, g, []analytics.StudentUpdate{{ID: student}, {ID: student + "x", Name: "X"}})
				case 1:
					err = store.AddStudent(ctx, analytics.Student{GroupID: g, ID: student, Name: student})
					if analytics.ErrorCode(err) == analytics.Conflict {
						err = nil
					}
				case 2:
					_, err = store.AppendEvents(ctx, []analytics.Event{{GroupID: g, ID: fmt.Sprint("e", i), StudentID: student,
						OccurredAt: at, Metric: analytics.MainChatMessages, Day: analytics.DayOf(at, time.UTC)}})
				case 3:
					if _, err = store.EraseStudent(ctx, g, student); analytics.ErrorCode(err) == analytics.NotFound {
						err = nil
					}
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				sizes, err := stores[(i+1)%2].Enrolment(ctx, groups, now)
				if err != nil {
					t.Fatal(err)
				}
				for _, g := range groups {
					students, err := store.Students(ctx, g)
					if err != nil {
						t.Fatal(err)
					}
					if sizes[g].Students != len(students) {
						t.Fatalf("step %d: group %s enrols %d, counted %d", i, g, len(students), sizes[g].Students)
					}
				}
			}
		})
	}
}
