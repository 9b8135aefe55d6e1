package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
	"groupanalytics/internal/writebehind"
)

// TestPendingReadsThePlacementAndTheLogInOrder: a group's pending view
// holds its zone, its placement with the intent of a write under way
// (however long: an apply's lists its students), and its logged events
// in the order they were logged, up to the limit.
func TestPendingReadsThePlacementAndTheLogInOrder(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, "postgres")
	if err := s.CreateGroup(ctx, analytics.Group{ID: "g", Name: "g", TimeZone: "Europe/Berlin"}); err != nil {
		t.Fatal(err)
	}
	intent := []byte(`{"students":[` + strings.Repeat(`{"id":"s"},`, 5000) + `{"id":"t"}]}`)
	if err := s.WithGroupLock(ctx, "g", func(tx writebehind.GroupLock) error {
		if _, err := tx.Place(ctx, "shard-1"); err != nil {
			return err
		}
		_, err := tx.MarkIntent(ctx, intent)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var logged []string
	var events []analytics.Event
	for i := range 5 {
		id := fmt.Sprintf("e%d", 5-i) // not in the order of their ids
		logged = append(logged, id)
		events = append(events, analytics.Event{GroupID: "g", ID: id, StudentID: "s", OccurredAt: time.UnixMilli(int64(i)).UTC()})
	}
	pending := func(limit int) (p writebehind.Pending) {
		t.Helper()
		if err := s.WithGroupsLogging(ctx, []string{"g"}, func(tx writebehind.LogLock) (err error) {
			p, err = tx.Pending(ctx, "g", limit)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := pending(10); len(p.Events) != 0 || string(p.Placement.Intent) != string(intent) {
		t.Fatalf("with nothing logged: %d events, intent of %d bytes; want none and the intent", len(p.Events), len(p.Placement.Intent))
	}
	if err := s.WithGroupsLogging(ctx, []string{"g"}, func(tx writebehind.LogLock) error {
		_, err := tx.Log(ctx, events, time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{10, 3} {
		p := pending(limit)
		var ids []string
		for _, e := range p.Events {
			ids = append(ids, e.ID)
		}
		want := logged[:min(limit, len(logged))]
		if p.Zone != "Europe/Berlin" || !p.Placed || p.Placement.Shard != "shard-1" || !slices.Equal(ids, want) {
			t.Errorf("limit %d: zone %q, placed %v on %q, events %v; want Europe/Berlin, placed on shard-1, %v",
				limit, p.Zone, p.Placed, p.Placement.Shard, ids, want)
		}
		if string(p.Placement.Intent) != string(intent) {
			t.Errorf("limit %d: intent of %d bytes, want the %d recorded", limit, len(p.Placement.Intent), len(intent))
		}
	}
}
