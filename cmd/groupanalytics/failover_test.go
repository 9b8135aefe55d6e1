package main

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"groupanalytics/internal/stores/storetest"
)

// failoverStoreTimeout is the store timeout of the servers of the failover
// test: no request may take longer (a second more for its own work).
const failoverStoreTimeout = 3 * time.Second

// TestDirectoryFailover runs a firehose against a service whose directory
// is a PostgreSQL primary with a synchronous standby, named together in
// one URL, and SIGKILLs the primary: once the standby is promoted, writes
// are acknowledged again within five seconds, no request outlasts the
// store timeout, and every acknowledged event counts exactly once. Then,
// with the old primary rebuilt as the new one's standby, the standby is
// killed: writes answer 503 within the store timeout, reports answer, and
// once the standby is back, writes are taken again. An admin command and
// /readyz work after the failover. On the PostgreSQL
// store and on ClickHouse (whose write-behind log is in the directory).
func TestDirectoryFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes and kills PostgreSQL servers")
	}
	t.Parallel() // it waits on its faults: beside the package's other waiting tests
	bin := buildBinary(t)
	for _, kind := range []string{"postgres", "clickhouse"} {
		t.Run(kind, func(t *testing.T) {
			pair := storetest.NewPostgresPair(t, 19900)
			stores := []string{"--db", pair.URL("postgres")}
			if kind == "clickhouse" {
				stores = append(stores, "--usage", storetest.NewClickHouseURL(t))
			}
			keys, token := setupGroups(t, bin, stores, 4)
			addr := freePort(t)
			srv := startServer(t, bin, append(stores, "--store-timeout", failoverStoreTimeout.String(), "--token-rate-limit", "off", "--metrics-addr", addr))
			metrics := recordMetrics(t, addr)
			var base atomic.Pointer[string]
			base.Store(&srv.Base)

			f := startFirehose(t, &base, token, keys, 16)
			time.Sleep(1500 * time.Millisecond)
			killed := metrics.now(t)
			pair.Kill(pair.Primary())
			time.Sleep(time.Second)
			pair.Promote()
			promoted := time.Now()
			time.Sleep(7 * time.Second)
			acked, unacked := f.stop()
			t.Logf("%d events acknowledged, %d not; the slowest request took %v", len(acked), len(unacked), f.slowest)
			var again time.Time
			for _, at := range f.ackedAt {
				if at.After(promoted) && (again.IsZero() || at.Before(again)) {
					again = at
				}
			}
			if again.IsZero() || again.Sub(promoted) > 5*time.Second {
				t.Errorf("no write acknowledged within 5 s of the promotion (first: %v after)", again.Sub(promoted))
			} else {
				t.Logf("writes acknowledged again %v after the promotion", again.Sub(promoted))
			}
			if f.slowest > failoverStoreTimeout+time.Second {
				t.Errorf("a request took %v, past the store timeout of %v", f.slowest, failoverStoreTimeout)
			}
			if len(unacked) == 0 {
				t.Fatal("every event was acknowledged: the primary's death did not hit the firehose")
			}
			checkFirehoseCounts(t, srv.Base, token, keys, acked, unacked)
			if out := runBinary(t, bin, append([]string{"group", "create", "--id", "after-failover"}, stores...)...); !strings.Contains(out, "after-failover") {
				t.Errorf("group create after the failover: %s", out)
			}
			if resp, err := http.Get(srv.Base + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("readyz after the failover: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}

			// The standby dies: writes wait for it no longer than the store
			// timeout, reads go on. On ClickHouse, a report of a school whose
			// events wait in the write-behind log applies them first, a
			// write: the reports are asked once the log is applied, and not
			// of the school written to meanwhile (whose write, committed on
			// the primary alone, is in the log).
			metrics.checkAlerts(t, killed, "DirectoryWithoutStandby")
			pair.Rejoin()
			if kind == "postgres" {
				checkNewDatabaseThroughURL(t, bin, pair)
			}
			waitForEvent(t, srv.Base, token, "after-rejoin", anyGroup(keys))
			eventCounts(t, srv.Base, keys)
			metrics = recordMetrics(t, addr)
			time.Sleep(1500 * time.Millisecond)
			killed = metrics.now(t)
			pair.Kill(pair.Standby())
			start := time.Now()
			_, _, err := postEvents(srv.Base, token, firehoseEvent("no-standby", "fh0"))
			if took := time.Since(start); err == nil || took > failoverStoreTimeout+time.Second {
				t.Errorf("a write with the standby dead: %v after %v, want a 503 within %v", err, took, failoverStoreTimeout)
			}
			for group, key := range keys {
				if kind == "clickhouse" && group == "fh0" {
					continue
				}
				if status, _, err := askStudentReports(srv.Base, key, "startDate=2026-01-05&endDate=2026-01-05"); err != nil || status != http.StatusOK {
					t.Errorf("a report of %s with the standby dead: %d %v", group, status, err)
				}
			}
			metrics.checkAlerts(t, killed, "DirectoryStandbyMissing")
			pair.Start()
			waitForEvent(t, srv.Base, token, "after-standby-back", anyGroup(keys))
		})
	}
}

// checkNewDatabaseThroughURL creates a database on the new primary while the
// old one, its standby now and the first host of the URL, has not replayed
// the creation (its replay paused): the URL still reaches the primary, though
// the standby answers first that the database does not exist.
func checkNewDatabaseThroughURL(t *testing.T, bin string, pair *storetest.PostgresPair) {
	t.Helper()
	standby := pair.Standby()
	if standby != "a" {
		t.Fatalf("after the failover the standby is %q, want a, the URL's first host", standby)
	}
	pair.SQL(standby, "SELECT pg_wal_replay_pause()")
	defer pair.SQL(standby, "SELECT pg_wal_replay_resume()")
	pair.SQL(pair.Primary(), "CREATE DATABASE after_failover")
	if n := pair.SQL(standby, "SELECT count(*) FROM pg_database WHERE datname = 'after_failover'"); n != "0" {
		t.Fatalf("the standby has replayed the database's creation already (%s)", n)
	}
	runBinary(t, bin, "migrate", "--db", pair.URL("after_failover"))
}

// anyGroup is one of the groups of keys.
func anyGroup(keys map[string]string) string {
	for g := range keys {
		return g
	}
	return ""
}
