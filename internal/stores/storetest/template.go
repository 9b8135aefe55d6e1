package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"groupanalytics/internal/stores"
)

// templatePrefix names the databases that a test process migrates once and
// copies each migrated PostgreSQL store from: a copy costs PostgreSQL a
// fraction of the migrations. The process's id follows it.
const templatePrefix = "groupanalytics_template_"

var template struct {
	once sync.Once
	name string
	err  error
}

// newMigratedPostgresDatabase is NewPostgresDatabase, holding the schema
// that migrations make: a copy of the process's template.
func newMigratedPostgresDatabase(t testing.TB) string {
	t.Helper()
	RequirePostgres(t)
	template.once.Do(func() { template.name, template.err = makeTemplate() })
	if template.err != nil {
		t.Fatalf("storetest: the migrated template: %v", template.err)
	}
	return createDatabase(t, "TEMPLATE "+template.name)
}

// makeTemplate drops the templates of processes that have ended, and
// makes and migrates this process's own. Its connections are closed
// before it is copied: PostgreSQL copies only a database nobody uses.
func makeTemplate() (string, error) {
	admin, err := sql.Open("pgx", PostgresURL())
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if err := dropEndedTemplates(admin); err != nil {
		return "", err
	}
	name := templatePrefix + strconv.Itoa(os.Getpid())
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		return "", err
	}
	s, err := stores.Open(context.Background(), stores.Config{DB: databaseURL(name), Create: true, CallTimeout: time.Minute})
	if err != nil {
		return "", err
	}
	return name, s.Close()
}

// dropEndedTemplates drops the templates of test processes that have
// ended, which had no way to drop their own.
func dropEndedTemplates(admin *sql.DB) error {
	names, err := queryStrings(admin, "SELECT datname FROM pg_database WHERE datname LIKE $1", templatePrefix+"%")
	if err != nil {
		return err
	}
	for _, name := range names {
		pid, err := strconv.Atoi(strings.TrimPrefix(name, templatePrefix))
		if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // not a template's name, or its process still runs
		}
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
	}
	return nil
}

// queryStrings runs a query of one text column and returns its values.
func queryStrings(db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var values []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	return values, rows.Err()
}
