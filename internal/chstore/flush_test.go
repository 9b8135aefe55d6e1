package chstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/chstore"
	"groupanalytics/internal/writebehind"
)

// Calls of many groups at once are written by flushes of many groups,
// each counting its own events exactly; a group that another writer holds
// (an erasure, a move) waits without holding up the others; and past the
// queue's bound a call is refused at once, as unavailable, rather than
// queued.
func TestFlushesOfManyGroups(t *testing.T) {
	f := newFixture(t)
	const groups, perGroup = 40, 5
	for g := range groups {
		f.group(fmt.Sprintf("g%02d", g))
	}
	held := "g07"
	// Another writer holds one group's lock until released.
	locked, release := make(chan struct{}), make(chan struct{})
	go f.locks.WithGroupLock(ctx, held, func(writebehind.GroupLock) error {
		close(locked)
		<-release
		return nil
	})
	<-locked

	var wg sync.WaitGroup
	results := make(chan error, groups*perGroup)
	heldDone := make(chan analytics.AppendResult, 1)
	for g := range groups {
		for i := range perGroup {
			wg.Go(func() {
				id := fmt.Sprintf("g%02d", g)
				res, err := f.appendEvents([]analytics.Event{event(id, fmt.Sprint("e", i), fmt.Sprint("s", i%2), day, analytics.MainChatMessages)})
				if err == nil && res.Accepted != 1 {
					err = fmt.Errorf("%s: %+v", id, res)
				}
				if id == held && i == 0 {
					heldDone <- res
				}
				results <- err
			})
		}
	}
	// The other groups are written while one is held.
	deadline := time.Now().Add(20 * time.Second)
	for g := range groups {
		id := fmt.Sprintf("g%02d", g)
		if id == held {
			continue
		}
		for time.Now().Before(deadline) {
			if rows, err := f.usage.GroupRollups(ctx, id, daySegment()); err == nil && len(rows) == 1 && rows[0].Counts[analytics.MainChatMessages] == perGroup {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	select {
	case res := <-heldDone:
		t.Fatalf("the held group was written while another writer held it: %+v", res)
	default:
	}
	// Past the bound, refused at once.
	chstore.SetMaxQueuedEvents(t, perGroup)
	start := time.Now()
	_, err := f.appendEvents([]analytics.Event{event(held, "late", "s1", day, analytics.MainChatMessages)})
	if analytics.ErrorCode(err) != analytics.Unavailable || time.Since(start) > time.Second {
		t.Errorf("a call past the queue's bound: %v after %v, want unavailable at once", err, time.Since(start))
	}
	close(release)
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Error(err)
		}
	}
	for g := range groups {
		id := fmt.Sprintf("g%02d", g)
		rows, err := f.usage.GroupRollups(ctx, id, daySegment())
		if err != nil || len(rows) != 1 || rows[0].Counts[analytics.MainChatMessages] != perGroup || rows[0].ChatUsers.Len() != 2 {
			t.Errorf("%s: %v %+v, want %d messages of 2 students", id, err, rows, perGroup)
		}
	}
}

// daySegment is the rollup of the fixture's day.
func daySegment() analytics.Segment {
	d := analytics.DayOf(day, time.UTC)
	return analytics.Segment{Span: analytics.SpanDay, Keys: analytics.DayRange{First: d, Last: d}}
}
