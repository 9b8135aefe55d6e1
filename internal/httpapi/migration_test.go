package httpapi_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver for database/sql

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
	"groupanalytics/internal/stores"
	"groupanalytics/internal/stores/storetest"
	"groupanalytics/internal/writebehind"
)

// TestMigratedStoreAnswersAsBefore opens stores that the release before
// the student counts (schema version 3) wrote, and checks that, migrated,
// they give the very answers that release gave. testdata/v3store holds
// the stores (SQLite, and a pg_dump of the same data on PostgreSQL, both
// made with the release's CLI from gen.py's events, with a rename, two
// erasures, an erased student who came back and a student without
// usage), the queries, and the SHA-256, status and size of each answer.
// For ClickHouse, the usage store is written in that release's layout
// (writeOldClickHouseStore) from the PostgreSQL store's events.
func TestMigratedStoreAnswersAsBefore(t *testing.T) {
	queries := readLines(t, "testdata/v3store/queries.txt")
	answers := readLines(t, "testdata/v3store/answers.txt")
	if len(queries) != len(answers) || len(queries) < 90 {
		t.Fatalf("%d queries, %d answers", len(queries), len(answers))
	}
	for _, kind := range []string{"sqlite", "postgres", "clickhouse"} {
		t.Run(kind, func(t *testing.T) {
			var dsn string
			var stores storetest.Stores
			switch kind {
			case "sqlite":
				dsn = filepath.Join(t.TempDir(), "v3.db")
				b, err := os.ReadFile("testdata/v3store/v3.sqlite")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dsn, b, 0o600); err != nil {
					t.Fatal(err)
				}
				stores = storetest.SQL(storetest.OpenDSN(t, dsn))
			case "postgres":
				storetest.RequirePostgres(t)
				dsn = storetest.NewPostgresDatabase(t)
				restore(t, dsn, "testdata/v3store/v3-postgres.sql")
				stores = storetest.SQL(storetest.OpenDSN(t, dsn))
			case "clickhouse":
				storetest.RequirePostgres(t)
				dsn = storetest.NewPostgresDatabase(t)
				restore(t, dsn, "testdata/v3store/v3-postgres.sql")
				usage := storetest.NewClickHouseURL(t)
				writeOldClickHouseStore(t, dsn, usage)
				stores = storetest.OpenClickHouse(t, dsn, usage)
			}
			e := newEnv(t, stores)
			keys := map[string]string{"north": e.key("north"), "lake": e.key("lake")}
			for i, line := range queries {
				group, endpoint, query, format := field(line, 0), field(line, 1), field(line, 2), field(line, 3)
				req, _ := http.NewRequest("POST", e.server.URL+"/api/groups/"+endpoint+"?"+query+"&format="+format, nil)
				req.Header.Set("x-api-key", keys[group])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				sum := sha256.Sum256(body)
				got := hex.EncodeToString(sum[:]) + " " + resp.Status[:3] + " " + strconv.Itoa(len(body))
				if got != answers[i] {
					t.Errorf("%s: answer %s, before the migration %s; body:\n%.600s", line, got, answers[i], body)
				}
			}
			for group, key := range keys {
				checkLastDaysMigrated(t, e, stores, group, key)
			}
		})
	}
}

// checkLastDaysMigrated checks the students' last days that the
// migrations made of a store written before they were kept: each
// student's, as GET /api/last-use tells them, is the last day of their
// stored events of each endpoint.
func checkLastDaysMigrated(t *testing.T, e *testEnv, stores storetest.Stores, group, key string) {
	t.Helper()
	g, err := stores.Directory.Group(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := time.LoadLocation(g.TimeZone)
	list := e.lastUse(key, "")
	if len(list.Students) == 0 {
		t.Fatalf("group %s lists no student", group)
	}
	settled, err := stores.Usage.Settle(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	used := 0
	for _, u := range list.Students {
		events, err := stores.Usage.StudentEvents(settled, group, u.StudentID)
		if err != nil {
			t.Fatal(err)
		}
		var live, chat string
		for _, ev := range events {
			day := ev.OccurredAt.In(loc).Format(time.DateOnly)
			if ev.Metric.IsLiveLecture() {
				live = max(live, day)
			}
			if ev.Metric.IsChat() {
				chat = max(chat, day)
			}
		}
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		if str(u.LastLiveLecture) != live || str(u.LastChat) != chat {
			t.Errorf("group %s student %s: last days %q and %q, their events say %q and %q", group, u.StudentID,
				str(u.LastLiveLecture), str(u.LastChat), live, chat)
		}
		if len(events) > 0 {
			used++
		}
	}
	if used == 0 {
		t.Errorf("group %s: no student with events", group)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func field(line string, i int) string { return strings.Fields(line)[i] }

// restore runs a plain pg_dump script on the database at dsn.
func restore(t *testing.T, dsn, path string) {
	t.Helper()
	script, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Without arguments pgx sends the script as one simple query, whose
	// statements run in order.
	if _, err := db.ExecContext(context.Background(), string(script)); err != nil {
		t.Fatalf("restore %s: %v", path, err)
	}
}

// writeOldClickHouseStore writes the usage of the directory at dirDSN (a
// restored v3 store) to the ClickHouse database of usageURL as the
// release before the student counts did: its schema (migration 1, without
// a version table), events, students' ordinals, student_rollups and
// group_rollups, all of write number 1, each group placed on the first
// shard.
func writeOldClickHouseStore(t *testing.T, dirDSN, usageURL string) {
	t.Helper()
	db, err := sql.Open("pgx", dirDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	shards, database, err := stores.ParseUsage(usageURL)
	if err != nil {
		t.Fatal(err)
	}
	shard := shards[0]
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{shard}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	schema, err := os.ReadFile("../chstore/migrations/00001_schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(conn.Exec(ctx, "CREATE DATABASE "+database))
	for stmt := range strings.SplitSeq(strings.ReplaceAll(string(schema), "{database}", database), ";\n") {
		if strings.Contains(stmt, "CREATE TABLE") {
			must(conn.Exec(ctx, stmt[strings.Index(stmt, "CREATE TABLE"):]))
		}
	}
	insert := func(table, columns string, rows [][]any) {
		t.Helper()
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+database+"."+table+" ("+columns+")")
		must(err)
		for _, r := range rows {
			must(batch.Append(r...))
		}
		must(batch.Send())
	}
	dir := storetest.OpenDSN(t, dirDSN)
	groups, err := dir.Groups(ctx)
	must(err)
	for _, g := range groups {
		loc, err := g.Location()
		must(err)
		ordinals := map[string]int{}
		var students [][]any
		rows, err := db.Query(`SELECT student_id, ordinal FROM students WHERE group_id = $1 AND ordinal IS NOT NULL`, g.ID)
		must(err)
		for rows.Next() {
			var id string
			var n int
			must(rows.Scan(&id, &n))
			ordinals[id] = n
			students = append(students, []any{g.ID, id, uint32(n)})
		}
		rows.Close()
		delta := rollup.NewDelta()
		var events [][]any
		rows, err = db.Query(`SELECT event_id, student_id, occurred_at, metric FROM events WHERE group_id = $1`, g.ID)
		must(err)
		for rows.Next() {
			e := analytics.Event{GroupID: g.ID}
			var at int64
			must(rows.Scan(&e.ID, &e.StudentID, &at, &e.Metric))
			e.OccurredAt = time.UnixMilli(at).UTC()
			e.Day = analytics.DayOf(e.OccurredAt, loc)
			delta.Add(e)
			events = append(events, []any{g.ID, e.ID, e.StudentID, at, uint8(e.Metric), uint64(1)})
		}
		rows.Close()
		var studentRows, groupRows [][]any
		for k, c := range delta.Students {
			studentRows = append(studentRows, []any{g.ID, uint8(k.Span), int32(k.Key), k.StudentID, c[0], c[1], c[2], c[3], c[4], c[5], c[6]})
		}
		for _, k := range delta.GroupKeys() {
			d := delta.Groups[k]
			var ll, chat analytics.StudentSet
			for id := range d.LiveLectureUsers {
				ll.Add(ordinals[id])
			}
			for id := range d.ChatUsers {
				chat.Add(ordinals[id])
			}
			c := d.Counts
			groupRows = append(groupRows, []any{g.ID, uint8(k.Span), int32(k.Key), c[0], c[1], c[2], c[3], c[4], c[5], c[6],
				string(rollup.EncodeSet(ll)), string(rollup.EncodeSet(chat)), uint64(1)})
		}
		counts := rollup.Columns("{c}")
		insert("events", "group_id, event_id, student_id, occurred_at, metric, seq", events)
		insert("students", "group_id, student_id, ordinal", students)
		insert("student_rollups", "group_id, span, period, student_id, "+counts, studentRows)
		insert("group_rollups", "group_id, span, period, "+counts+", live_lecture_users, chat_users, version", groupRows)
		must(dir.WithGroupLock(ctx, g.ID, func(tx writebehind.GroupLock) error {
			if _, err := tx.Place(ctx, shard); err != nil {
				return err
			}
			if _, err := tx.MarkIntent(ctx, []byte("{}")); err != nil {
				return err
			}
			return tx.ClearIntent(ctx)
		}))
	}
}
