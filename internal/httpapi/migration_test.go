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

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver for database/sql

	"groupanalytics/internal/stores/storetest"
)

// TestMigratedStoreAnswersAsBefore opens stores that the release before
// the student counts (schema version 3) wrote, and checks that, migrated,
// they give the very answers that release gave. testdata/v3store holds
// the stores (SQLite, and a pg_dump of the same data on PostgreSQL, both
// made with the release's CLI from gen.py's events, with a rename, two
// erasures, an erased student who came back and a student without
// usage), the queries, and the SHA-256, status and size of each answer.
func TestMigratedStoreAnswersAsBefore(t *testing.T) {
	queries := readLines(t, "testdata/v3store/queries.txt")
	answers := readLines(t, "testdata/v3store/answers.txt")
	if len(queries) != len(answers) || len(queries) < 90 {
		t.Fatalf("%d queries, %d answers", len(queries), len(answers))
	}
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			var dsn string
			if dialect == "sqlite" {
				dsn = filepath.Join(t.TempDir(), "v3.db")
				b, err := os.ReadFile("testdata/v3store/v3.db")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dsn, b, 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				storetest.RequirePostgres(t)
				dsn = storetest.NewPostgresDatabase(t)
				restore(t, dsn, "testdata/v3store/v3-postgres.sql")
			}
			e := newEnv(t, storetest.SQL(storetest.OpenDSN(t, dsn)))
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
		})
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
