package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
)

// openTestUsage opens a migrated SQLite store with groups g0…g(n-1).
func openTestUsage(t *testing.T, groups int) *Store {
	t.Helper()
	ctx := context.Background()
	s := openTestSQLite(t)
	if _, err := s.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for g := range groups {
		if err := s.CreateGroup(ctx, analytics.Group{ID: fmt.Sprintf("g%d", g), Name: "g", TimeZone: "UTC"}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// dumpRollups returns every rollup row of the store, in key order, and
// the students' last days.
func dumpRollups(t *testing.T, s *Store) string {
	t.Helper()
	var out strings.Builder
	for _, q := range []string{
		`SELECT group_id, span, period, ` + metricList + `, hex(live_lecture_users), hex(chat_users) FROM group_rollups ORDER BY 1, 2, 3`,
		`SELECT group_id, span, period, chunk, hex(counts) FROM student_counts ORDER BY 1, 2, 3, 4`,
		`SELECT group_id, student_id, hex(last_days) FROM students ORDER BY 1, 2`,
	} {
		rows, err := s.read.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			values := make([]any, len(cols))
			dest := make([]any, len(cols))
			for i := range values {
				dest[i] = &values[i]
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&out, values...)
		}
		rows.Close()
	}
	return out.String()
}

// TestSQLiteUpsertMergesRollups: SQLite's appends add to the stored
// rollup rows in the upsert (mergesRollups). Over random appends that
// keep coming back to the same groups, days and chunks of students, the
// rows must be byte for byte what reading them and writing the sums back
// gives.
func TestSQLiteUpsertMergesRollups(t *testing.T) {
	ctx := context.Background()
	merged, read := openTestUsage(t, 3), openTestUsage(t, 3)
	read.dialect.mergesRollups = false
	random := &randomEvents{rng: rand.New(rand.NewPCG(3, 4))}
	for range 60 {
		events := random.batch(1 + random.rng.IntN(40))
		for _, s := range []*Store{merged, read} {
			if _, err := s.AppendEvents(ctx, events); err != nil {
				t.Fatal(err)
			}
			// Each batch folded on its own, so that the folds come back
			// to the rows the earlier ones wrote.
			settleGroups(t, s, 3)
		}
	}
	got, want := dumpRollups(t, merged), dumpRollups(t, read)
	if got != want {
		t.Fatalf("merged in the upsert:\n%s\nread and written back:\n%s", got, want)
	}
	if !strings.Contains(got, "g2") || bytes.Count([]byte(got), []byte("\n")) < 100 {
		t.Fatalf("too few rows to tell:\n%s", got)
	}
}

// TestSQLiteUpsertRefusesCorruptCounts: a stored row of students' counts
// that add_student_counts cannot read fails the fold that would add to
// it, which leaves everything as it was (the share still behind), rather
// than being overwritten.
func TestSQLiteUpsertRefusesCorruptCounts(t *testing.T) {
	ctx := context.Background()
	s := openTestUsage(t, 1)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	event := func(id string) []analytics.Event {
		return []analytics.Event{{GroupID: "g0", ID: id, StudentID: "s", OccurredAt: at, Metric: analytics.Metric(0)}}
	}
	if _, err := s.AppendEvents(ctx, event("e1")); err != nil {
		t.Fatal(err)
	}
	settleGroups(t, s, 1)
	if _, err := s.write.Exec(`UPDATE student_counts SET counts = x'02'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(ctx, event("e2")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(ctx, "g0"); err == nil {
		t.Fatal("a fold over a corrupt row of counts succeeded")
	}
	var behind int
	var counts []byte
	if err := s.read.QueryRow(`SELECT count(*) FROM rollups_behind`).Scan(&behind); err != nil {
		t.Fatal(err)
	}
	if err := s.read.QueryRow(`SELECT counts FROM student_counts LIMIT 1`).Scan(&counts); err != nil {
		t.Fatal(err)
	}
	if behind != 1 || !bytes.Equal(counts, []byte{2}) {
		t.Errorf("after the failed fold: %d shares behind, counts %x; want 1 and the row as it was", behind, counts)
	}
}

// randomEvents makes batches of random events of groups g0…g2, from
// students s0…s599 (chunks 0 to 2), over the 40 days from March 1, 2026:
// each with an id of its own, or with dupEvery set, one in dupEvery with
// an id drawn from those made before (perhaps its own).
type randomEvents struct {
	rng      *rand.Rand
	dupEvery int
	made     int
}

// randomStart is the first day of randomEvents' events.
var randomStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func (r *randomEvents) batch(size int) []analytics.Event {
	var events []analytics.Event
	for range size {
		r.made++
		id := r.made
		if r.dupEvery > 0 && r.rng.IntN(r.dupEvery) == 0 {
			id = 1 + r.rng.IntN(r.made)
		}
		events = append(events, analytics.Event{
			GroupID:    fmt.Sprintf("g%d", r.rng.IntN(3)),
			ID:         fmt.Sprintf("e%d", id),
			StudentID:  fmt.Sprintf("s%d", r.rng.IntN(600)),
			OccurredAt: randomStart.Add(time.Duration(r.rng.IntN(40*24)) * time.Hour),
			Metric:     analytics.Metric(r.rng.IntN(analytics.NumMetrics)),
		})
	}
	return events
}

// settleGroups settles groups g0…g(n-1) of s: their rollups count every
// event stored.
func settleGroups(t *testing.T, s *Store, n int) {
	t.Helper()
	for g := range n {
		if _, err := s.Settle(context.Background(), fmt.Sprintf("g%d", g)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSQLiteWriterCheckpoints: the write connection checkpoints every
// walCheckpointPages, not at SQLite's default.
func TestSQLiteWriterCheckpoints(t *testing.T) {
	s := openTestSQLite(t)
	var pages int
	if err := s.write.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != walCheckpointPages {
		t.Errorf("wal_autocheckpoint = %d, want %d", pages, walCheckpointPages)
	}
}
