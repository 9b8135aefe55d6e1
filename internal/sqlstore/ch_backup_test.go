package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/sqlstore"
	"groupanalytics/internal/stores/storetest"
	"groupanalytics/internal/writebehind"
)

// TestBackupHoldsTheWritersOfUsage: HoldUsageWrites, which a backup of the
// ClickHouse tier holds while it freezes the shards, waits for a writer of
// usage under way and keeps the next one waiting until it releases them;
// the write-behind log's writers, which acknowledge events, never wait.
func TestBackupHoldsTheWritersOfUsage(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, "postgres")
	if err := s.CreateGroup(ctx, analytics.Group{ID: "g", Name: "g", TimeZone: "UTC"}); err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	go s.WithGroupLock(ctx, "g", func(writebehind.GroupLock) error {
		close(inside)
		<-release
		return nil
	})
	<-inside
	held := make(chan *sqlstore.WritesHold, 1)
	go func() {
		h, err := s.HoldUsageWrites(ctx)
		if err != nil {
			t.Error(err)
		}
		held <- h
	}()
	select {
	case <-held:
		t.Fatal("the backup did not wait for the writer under way")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	h := <-held
	if h == nil {
		return
	}
	defer h.Close(ctx)
	if h.Snapshot == "" {
		t.Error("no snapshot taken")
	}

	wrote := make(chan error, 1)
	go func() { wrote <- s.WithGroupLock(ctx, "g", func(writebehind.GroupLock) error { return nil }) }()
	select {
	case err := <-wrote:
		t.Fatalf("a writer of usage went on while the backup held them (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := s.WithGroupsLogging(ctx, []string{"g"}, func(writebehind.LogLock) error { return nil }); err != nil {
		t.Errorf("the log's writer with the writers of usage held: %v", err)
	}
	h.Release(ctx)
	if err := <-wrote; err != nil {
		t.Errorf("the writer once released: %v", err)
	}
}
