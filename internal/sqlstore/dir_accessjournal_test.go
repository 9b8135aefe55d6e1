package sqlstore

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
)

// TestAccessJournalFoldsOnce: the journal's lines are folded into the log
// once, also when a fold's truncation was cut short (its lines still in
// the file, after its commit); an entry of a group deleted since is left
// out, and a line cut short by a stop of the machine is dropped.
func TestAccessJournalFoldsOnce(t *testing.T) {
	ctx := context.Background()
	s := openTestSQLite(t)
	if _, err := s.Migrate(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateGroup(ctx, analytics.Group{ID: "g", Name: "g", TimeZone: "UTC"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddStudent(ctx, analytics.Student{GroupID: "g", ID: "s1", Name: "n"}); err != nil {
		t.Fatal(err)
	}
	line := func(group, client string, students ...string) []byte {
		b, err := json.Marshal(journalOf(analytics.AccessEntry{GroupID: group, At: time.UnixMilli(1_790_000_000_000), KeyID: "k",
			Client: client, Endpoint: "/api/groups/chat", Format: "json", StartDate: "2026-01-01", EndDate: "2026-01-31",
			Interval: "day", StudentIDs: students}))
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	first, second, gone, fourth := line("g", "1", "s1"), line("g", "2"), line("gone", "3"), line("g", "4", "s1", "s2")
	write := func(lines ...[]byte) {
		t.Helper()
		f, err := os.OpenFile(s.journal.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(slices.Concat(lines...)); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	logged := func(want ...string) {
		t.Helper()
		if err := s.foldAccess(ctx); err != nil {
			t.Fatal(err)
		}
		entries, err := s.AccessLog(ctx, "g", analytics.AccessFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var clients []string
		for _, e := range slices.Backward(entries) {
			clients = append(clients, e.Client)
		}
		if !slices.Equal(clients, want) {
			t.Errorf("the log's entries, oldest first, by client: %v, want %v", clients, want)
		}
		if st, err := os.Stat(s.journal.path); err != nil || st.Size() != 0 {
			t.Errorf("the journal after a fold: %v, %v; want it empty", st, err)
		}
	}
	write(first, second, gone)
	logged("1", "2")
	write(first, second, gone, fourth) // the first fold's lines again, as if it had stopped before emptying the file
	logged("1", "2", "4")
	write(line("g", "5"), []byte(`{"line":12,"group":"g"`))
	logged("1", "2", "4", "5")
	entries, err := s.AccessLog(ctx, "g", analytics.AccessFilter{StudentID: "s1", Limit: 100})
	if err != nil || len(entries) != 4 || !slices.Equal(entries[1].StudentIDs, []string{"s1"}) || entries[1].StudentsAsked != 2 {
		t.Errorf("s1's entries: %+v, %v; want all four, the fourth naming s1 of two asked", entries, err)
	}
}
