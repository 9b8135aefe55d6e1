package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/stores/storetest"
)

// TestCloseWithCallsQueuedAndArriving: Close while appends are queued and
// more keep coming. Nothing crashes; each call either is acknowledged or
// fails with ErrClosed (or its own deadline); every acknowledged event is
// stored, as a reopened store shows.
func TestCloseWithCallsQueuedAndArriving(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.NewDSN(t, dialect)
			store := withGroup(t, storetest.OpenDSN(t, dsn))
			var mu sync.Mutex
			var acked []string
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for c := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for b := 0; ; b++ {
						select {
						case <-stop:
							return
						default:
						}
						var batch []analytics.Event
						for i := range 50 {
							at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
							batch = append(batch, analytics.Event{GroupID: "g", ID: fmt.Sprintf("c%d-b%d-%d", c, b, i),
								StudentID: fmt.Sprintf("s%d", i%7), OccurredAt: at, Metric: analytics.MainChatMessages, Day: analytics.DayOf(at, time.UTC)})
						}
						_, err := store.AppendEvents(ctx, batch)
						switch {
						case err == nil:
							mu.Lock()
							for _, e := range batch {
								acked = append(acked, e.ID)
							}
							mu.Unlock()
						case errors.Is(err, sqlstore.ErrClosed), analytics.ErrorCode(err) == analytics.Unavailable:
						default:
							t.Errorf("append: %v", err)
							return
						}
					}
				}()
			}
			time.Sleep(300 * time.Millisecond)
			if err := store.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // calls keep arriving after Close
			close(stop)
			wg.Wait()
			if _, err := store.AppendEvents(ctx, nil); !errors.Is(err, sqlstore.ErrClosed) {
				t.Errorf("append after Close: %v, want ErrClosed", err)
			}
			stored := storetest.RawEvents(t, dsn, "g")
			for _, id := range acked {
				if _, ok := stored[id]; !ok {
					t.Fatalf("acknowledged event %s is not stored", id)
				}
			}
			if len(acked) == 0 {
				t.Fatal("no append was acknowledged before Close")
			}
			t.Logf("%d events acknowledged before Close, %d stored", len(acked), len(stored))
		})
	}
}
