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

// TestAuthorizeFindsEitherKindEitherWay: a school's key and a district's
// are found whichever kind their secret reads as, a revoked one and a
// hash no key has refused alike.
func TestAuthorizeFindsEitherKindEitherWay(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx, now := context.Background(), time.Now()
			store := storetest.Open(t, dialect)
			if err := store.CreateGroup(ctx, analytics.Group{ID: "s", Name: "School", TimeZone: "UTC"}); err != nil {
				t.Fatal(err)
			}
			if _, err := store.AddPlan(ctx, analytics.Plan{GroupID: "s", Starts: now.Add(-time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if err := store.CreateDistrict(ctx, analytics.District{ID: "d", Name: "d", TimeZone: "UTC"}); err != nil {
				t.Fatal(err)
			}
			if err := store.AttachSchool(ctx, "d", "s"); err != nil {
				t.Fatal(err)
			}
			keys := []analytics.APIKey{
				{GroupID: "s", ID: "k", Hash: analytics.HashSecret("school"), Prefix: "gak_", Created: now},
				{DistrictID: "d", ID: "dk", Hash: analytics.HashSecret("district"), Prefix: "gad_", Created: now},
				{DistrictID: "d", ID: "revoked", Hash: analytics.HashSecret("revoked"), Prefix: "gad_", Created: now},
			}
			if err := store.AddKey(ctx, keys[0]); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys[1:] {
				if err := store.AddDistrictKey(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if err := store.RevokeDistrictKey(ctx, "d", "revoked", now.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
			for _, districtKey := range []bool{false, true} {
				for _, c := range []struct{ secret, want string }{
					{"school", "school s"}, {"district", "district d"}, {"revoked", "Unauthorized"}, {"none", "Unauthorized"}} {
					a, err := store.Authorize(ctx, analytics.HashSecret(c.secret), districtKey, now)
					got := "school " + a.Group.ID
					switch {
					case err != nil:
						got = err.Error()
					case a.District != nil:
						got = "district " + a.District.District.ID
					}
					if got != c.want {
						t.Errorf("%s, read as a district's %v: %s, want %s", c.secret, districtKey, got, c.want)
					}
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
				a, err := asked.Authorize(ctx, key.Hash, true, at)
				if err != nil {
					return err.Error()
				}
				if b, err := asked.Authorize(ctx, key.Hash, false, at); err != nil || names(b.District.Schools) != names(a.District.Schools) {
					t.Errorf("looked up among schools' keys first: %v, %v; among districts' first: %v", names(b.District.Schools), err, names(a.District.Schools))
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
