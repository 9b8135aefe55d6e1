package chstore_test

import (
	"fmt"
	"testing"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/stores/storetest"
)

// TestKnownIDsKeepAnswersExact: a flush tells new ids from stored ones by
// the ids its process keeps of the group when they are as of the group's
// last write, and by the shard when another process wrote since or an id
// was erased: every answer counts exactly.
func TestKnownIDsKeepAnswersExact(t *testing.T) {
	f := newFixture(t)
	f.group("g")
	chat := func(ids ...int) []analytics.Event {
		var events []analytics.Event
		for _, i := range ids {
			events = append(events, event("g", fmt.Sprintf("e%d", i), fmt.Sprintf("s%d", i), day, analytics.MainChatMessages))
		}
		return events
	}
	send := func(who string, s *chstore.Store, events []analytics.Event, accepted, duplicates int) {
		t.Helper()
		res, err := s.AppendEvents(ctx, events)
		if err != nil || res.Accepted != accepted || res.Duplicates != duplicates {
			t.Errorf("%s: %+v %v, want %d accepted and %d duplicates", who, res, err, accepted, duplicates)
		}
	}
	settle := func(s *chstore.Store) {
		t.Helper()
		if _, err := s.Settle(ctx, "g"); err != nil {
			t.Fatal(err)
		}
	}
	send("the first events", f.usage, chat(1, 2, 3, 4, 5), 5, 0)
	settle(f.usage)
	send("sent again with a new one", f.usage, chat(1, 2, 3, 4, 5, 6), 1, 5)

	other := storetest.OpenClickHouse(t, f.dsn, f.url).Usage.(*chstore.Store)
	send("another process's event", other, chat(7), 1, 0)
	settle(other)
	send("the other process's event, sent again to the first", f.usage, chat(7), 0, 1)
	send("and a new one", f.usage, chat(8), 1, 0)
	settle(f.usage)
	send("every one sent again", f.usage, chat(1, 2, 3, 4, 5, 6, 7, 8), 0, 8)

	if _, err := f.usage.EraseStudent(ctx, "g", "s1"); err != nil {
		t.Fatal(err)
	}
	send("an erased student's event, sent again", f.usage, chat(1), 1, 0)
	settle(f.usage)
	if got := f.dayRollup("g").Counts[analytics.MainChatMessages]; got != 8 {
		t.Errorf("counted %d, want 8", got)
	}
}
