package bench

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver for database/sql
	_ "github.com/mattn/go-sqlite3"    // the SQLite driver for database/sql

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores"
)

// baseline is what a competent developer would write without rollups: one
// GROUP BY query per report over the raw events table, on the same
// database. The main group is in UTC, so days, weeks and months are plain
// arithmetic on the event times.
type baseline struct {
	db      *sql.DB
	dialect string
}

func openBaseline(dsn, dialect string) (*baseline, error) {
	driver, source := "sqlite3", "file:"+dsn+"?mode=ro&_busy_timeout=10000"
	if dialect == "postgres" {
		driver, source = "pgx", dsn
	}
	db, err := sql.Open(driver, source)
	return &baseline{db: db, dialect: dialect}, err
}

// openClickHouseBaseline opens the baseline on the ClickHouse shard that
// holds the group's raw events.
func openClickHouseBaseline(ctx context.Context, st *stores.Stores, group string) (*baseline, error) {
	p, ok, err := st.Directory.Placement(ctx, group)
	if err != nil || !ok {
		return nil, fmt.Errorf("baseline: group %s has no placement: %v", group, err)
	}
	db := clickhouse.OpenDB(&clickhouse.Options{Addr: []string{strings.Split(p.Shard, "|")[0]}, Auth: clickhouse.Auth{Database: st.Shards.Database()}})
	return &baseline{db: db, dialect: "clickhouse"}, nil
}

// time runs the baseline of sc runs times and returns its answer and the
// duration of each run.
func (b *baseline) time(sc scenario, runs int) (answer, []float64, error) {
	group := cmp.Or(sc.group, "bench-main")
	var a answer
	var durations []float64
	for range max(runs, 1) {
		start := time.Now()
		var err error
		if a, err = sc.baseline(b, group, sc.r); err != nil {
			return nil, nil, err
		}
		durations = append(durations, ms(time.Since(start)))
	}
	return a, durations, nil
}

// count is "SUM(CASE WHEN metric = m THEN 1 ELSE 0 END)".
func count(m analytics.Metric) string {
	return fmt.Sprintf("COALESCE(SUM(CASE WHEN metric = %d THEN 1 ELSE 0 END), 0)", m)
}

var chatMetrics = []analytics.Metric{analytics.TutorMeMessages, analytics.TestMessages, analytics.FlashcardMessages,
	analytics.MaterialMessages, analytics.LiveLectureMessages, analytics.MainChatMessages}

func chatCounts() string {
	parts := make([]string, len(chatMetrics))
	for i, m := range chatMetrics {
		parts[i] = count(m)
	}
	return strings.Join(parts, ", ")
}

func bounds(r analytics.DayRange) (int64, int64) {
	return r.First.Start(time.UTC).UnixMilli(), r.Last.End(time.UTC).UnixMilli()
}

// q numbers the placeholders for PostgreSQL.
func (b *baseline) q(query string) string {
	if b.dialect != "postgres" {
		return query
	}
	n := 0
	var out strings.Builder
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&out, "$%d", n)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

// rows runs a query whose rows are a key, then values, and collects them.
func (b *baseline) rows(query string, keyOf func(key string) string, nValues int, args ...any) (answer, error) {
	rows, err := b.db.Query(b.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	a := answer{}
	for rows.Next() {
		var key string
		values := make([]int64, nValues)
		targets := []any{&key}
		for i := range values {
			targets = append(targets, &values[i])
		}
		if err := rows.Scan(targets...); err != nil {
			return nil, err
		}
		a[keyOf(key)] = values
	}
	return a, rows.Err()
}

// withTotal puts the chat total in front of the six chat counts (and keeps
// numStudentsUsed, if any, last).
func withTotal(a answer) answer {
	for k, v := range a {
		var total int64
		for _, c := range v[:6] {
			total += c
		}
		a[k] = append([]int64{total}, v...)
	}
	return a
}

func (b *baseline) liveLectureGroup(group string, r analytics.DayRange) (answer, error) {
	from, to := bounds(r)
	return b.rows(`SELECT 'all', `+count(analytics.SessionsCreated)+`, `+count(analytics.LiveLectureMessages)+`,
		COUNT(DISTINCT CASE WHEN metric IN (0, 5) THEN student_id END)
		FROM events WHERE group_id = ? AND occurred_at BETWEEN ? AND ?`,
		func(string) string { return r.First.String() + "|" }, 3, group, from, to)
}

func (b *baseline) chatGroup(group string, r analytics.DayRange) (answer, error) {
	from, to := bounds(r)
	a, err := b.rows(`SELECT 'all', `+chatCounts()+`, COUNT(DISTINCT CASE WHEN metric > 0 THEN student_id END)
		FROM events WHERE group_id = ? AND occurred_at BETWEEN ? AND ?`,
		func(string) string { return r.First.String() + "|" }, 7, group, from, to)
	return withTotal(a), err
}

// chatStudents groups the events by student; students without events are
// zeros, which sameAnswer allows for.
func (b *baseline) chatStudents(group string, r analytics.DayRange) (answer, error) {
	from, to := bounds(r)
	a, err := b.rows(`SELECT student_id, `+chatCounts()+`
		FROM events WHERE group_id = ? AND occurred_at BETWEEN ? AND ? GROUP BY student_id`,
		func(id string) string { return r.First.String() + "|" + id }, 6, group, from, to)
	return withTotal(a), err
}

// weekOf returns the first day in r of the ISO week whose number since the
// epoch's week is w.
func weekOf(r analytics.DayRange, w string) string {
	var n int64
	fmt.Sscan(w, &n)
	return max(analytics.Day(n*7-3), r.First).String()
}

func (b *baseline) chatWeekly(group string, r analytics.DayRange) (answer, error) {
	from, to := bounds(r)
	week := `CAST((occurred_at / 86400000 + 3) / 7 AS TEXT)`
	if b.dialect == "clickhouse" {
		week = `toString(intDiv(intDiv(occurred_at, 86400000) + 3, 7))`
	}
	a, err := b.rows(`SELECT `+week+` AS week, `+chatCounts()+`,
		COUNT(DISTINCT CASE WHEN metric > 0 THEN student_id END)
		FROM events WHERE group_id = ? AND occurred_at BETWEEN ? AND ? GROUP BY week`,
		func(w string) string { return weekOf(r, w) + "|" }, 7, group, from, to)
	return withTotal(a), err
}

func (b *baseline) chatStudentsMonthly(group string, r analytics.DayRange) (answer, error) {
	from, to := bounds(r)
	month := `strftime('%Y-%m', occurred_at / 1000, 'unixepoch')`
	switch b.dialect {
	case "postgres":
		month = `to_char(to_timestamp(occurred_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM')`
	case "clickhouse":
		month = `formatDateTime(toDateTime(intDiv(occurred_at, 1000), 'UTC'), '%Y-%m')`
	}
	a, err := b.rows(`SELECT `+month+` || '|' || student_id AS k, `+chatCounts()+`
		FROM events WHERE group_id = ? AND occurred_at BETWEEN ? AND ? GROUP BY k`,
		func(k string) string {
			m, student, _ := strings.Cut(k, "|")
			first, _ := time.Parse("2006-01-02", m+"-01")
			return max(analytics.DayOf(first, time.UTC), r.First).String() + "|" + student
		}, 6, group, from, to)
	return withTotal(a), err
}

func (b *baseline) chatStudentsDaily(group string, r analytics.DayRange) (answer, error) {
	from, to := bounds(r)
	day := `CAST(occurred_at / 86400000 AS TEXT)`
	if b.dialect == "clickhouse" {
		day = `toString(intDiv(occurred_at, 86400000))`
	}
	a, err := b.rows(`SELECT `+day+` || '|' || student_id AS k, `+chatCounts()+`
		FROM events WHERE group_id = ? AND occurred_at BETWEEN ? AND ? GROUP BY k`,
		func(k string) string {
			d, student, _ := strings.Cut(k, "|")
			var n int64
			fmt.Sscan(d, &n)
			return analytics.Day(n).String() + "|" + student
		}, 6, group, from, to)
	return withTotal(a), err
}
