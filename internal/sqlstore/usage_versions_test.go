package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
)

// TestUsageVersionsMoveWithEveryWrite: a group's usage version, read by
// one process, changes with each write of its rollups another makes (an
// append, folded behind or not; an erasure; a change of zone; a retention
// cut) and with nothing else; a group deleted and made again counts
// anew (the engine tells it apart by its creation).
func TestUsageVersionsMoveWithEveryWrite(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.NewDSN(t, dialect)
			reader, writer := storetest.OpenDSN(t, dsn), storetest.OpenDSN(t, dsn)
			for _, g := range []string{"g", "other"} {
				if err := writer.CreateGroup(ctx, analytics.Group{ID: g, Name: g, TimeZone: "UTC", Created: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
			event := func(id string, day int) analytics.Event {
				when := at.AddDate(0, 0, day)
				return analytics.Event{GroupID: "g", ID: id, StudentID: "s" + id, OccurredAt: when, Metric: analytics.TutorMeMessages, Day: analytics.DayOf(when, time.UTC)}
			}
			version := func() string {
				t.Helper()
				settled, err := reader.SettleGroups(ctx, []string{"g", "other"})
				if err != nil {
					t.Fatal(err)
				}
				v, err := reader.UsageVersions(settled, []string{"g", "missing"})
				if err != nil || v[1] != "0" {
					t.Fatalf("UsageVersions: %q, %v", v, err)
				}
				return v[0]
			}
			seen := map[string]string{}
			for _, step := range []struct {
				name   string
				write  func() error
				change bool
				anew   bool // the group counts anew
			}{
				{"nothing", func() error { return nil }, false, false},
				{"an append", func() error { _, err := writer.AppendEvents(ctx, []analytics.Event{event("1", 0)}); return err }, true, false},
				{"a duplicate", func() error { _, err := writer.AppendEvents(ctx, []analytics.Event{event("1", 0)}); return err }, false, false},
				{"another group's append", func() error {
					e := event("9", 0)
					e.GroupID = "other"
					_, err := writer.AppendEvents(ctx, []analytics.Event{e})
					return err
				}, false, false},
				{"a second day", func() error { _, err := writer.AppendEvents(ctx, []analytics.Event{event("2", 40)}); return err }, true, false},
				{"an erasure", func() error { _, err := writer.EraseStudent(ctx, "g", "s2"); return err }, true, false},
				{"a change of zone", func() error { return writer.Rebuild(ctx, "g", "Asia/Tokyo") }, true, false},
				{"a retention cut", func() error {
					_, _, err := writer.ExpireDays(ctx, "g", analytics.DayOf(at.AddDate(0, 0, 1), time.UTC))
					return err
				}, true, false},
				{"the group written, deleted and made again", func() error {
					if _, err := writer.AppendEvents(ctx, []analytics.Event{event("3", 50)}); err != nil {
						return err
					}
					if _, err := writer.EraseGroup(ctx, "g"); err != nil {
						return err
					}
					return writer.CreateGroup(ctx, analytics.Group{ID: "g", Name: "g", TimeZone: "UTC", Created: time.Now()})
				}, true, true},
			} {
				before := version()
				if err := step.write(); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				after := version()
				if (after != before) != step.change {
					t.Errorf("%s: version %q → %q", step.name, before, after)
				}
				if step.change && seen[after] != "" && !step.anew {
					t.Errorf("%s: version %q again, first after %s", step.name, after, seen[after])
				}
				seen[after] = step.name
			}
		})
	}
}
