package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// accessCall is a RecordAccess waiting for the commit of its entry
// (PostgreSQL).
type accessCall struct {
	entry analytics.AccessEntry
	ctx   context.Context
	done  chan error
}

// maxAccessBatch caps the entries written in one transaction.
const maxAccessBatch = 256

// RecordAccess adds an entry to the group's access log, and each student
// it names who is enrolled (one erased meanwhile is counted as asked, and
// not named). The entry is written where it is folded into the log from
// within a second: on SQLite the access journal (accessJournal), on
// PostgreSQL the table access_pending, the entries of concurrent calls
// together, one statement for them all, so that answers asked at once
// share a round trip and a commit.
func (s *Store) RecordAccess(ctx context.Context, e analytics.AccessEntry) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return s.wrap("RecordAccess", sql.ErrConnDone)
	}
	if s.journal != nil {
		err := s.journal.append(e)
		s.mu.RUnlock()
		return s.wrap("RecordAccess", err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	call := &accessCall{entry: e, ctx: ctx, done: make(chan error, 1)}
	select {
	case s.entries <- call:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return s.wrap("RecordAccess", ctx.Err())
	}
	select {
	case err := <-call.done:
		return s.wrap("RecordAccess", err)
	case <-ctx.Done():
		return s.wrap("RecordAccess", ctx.Err())
	}
}

// writeAccess is the writer of PostgreSQL's access_pending: it takes the
// first entry waiting and those queued behind it, writes them in one statement
// and tells each call how it went. Calls whose callers gave up are left
// out.
func (s *Store) writeAccess() {
	defer s.writers.Done()
	for first := range s.entries {
		calls := []*accessCall{first}
	more:
		for len(calls) < maxAccessBatch {
			select {
			case c, ok := <-s.entries:
				if !ok {
					break more
				}
				calls = append(calls, c)
			default:
				break more
			}
		}
		calls = slices.DeleteFunc(calls, func(c *accessCall) bool { return c.ctx.Err() != nil })
		if len(calls) == 0 {
			continue
		}
		err := s.insertCalls(calls)
		for _, c := range calls {
			c.done <- err
		}
	}
}

// insertCalls writes the calls' entries to access_pending, by the latest
// of their callers' deadlines, in one statement whose commit does not wait
// for the disk. A row an entry, without index or foreign key, is a fifth of
// what writing it into access_log cost PostgreSQL, and the synced commit
// half of the rest (BENCHMARKS.md, the access log); the fold does that
// work for every entry of a second at once.
func (s *Store) insertCalls(calls []*accessCall) error {
	ctx, cancel := mergedContext(calls, func(c *accessCall) context.Context { return c.ctx })
	defer cancel()
	entries := make([]analytics.AccessEntry, len(calls))
	for i, c := range calls {
		entries[i] = c.entry
	}
	rows, err := accessRows(entries)
	if err != nil {
		return err
	}
	var insert strings.Builder
	insert.WriteString(`INSERT INTO access_pending (group_id, entry) VALUES `)
	args := make([]any, 0, 2*len(rows))
	for i, row := range rows {
		entry, err := json.Marshal(row)
		if err != nil {
			return err
		}
		if i > 0 {
			insert.WriteString(", ")
		}
		insert.WriteString("(?, ?)")
		args = append(args, row[0], string(entry))
	}
	return s.retrying(ctx, "RecordAccess", func(ctx context.Context) error {
		_, err := s.entryWrites.ExecContext(ctx, s.q(insert.String()), args...)
		return err
	})
}

// accessRows are the entries as rows of access_log's accessColumns, each
// with the students it names last (a JSON array).
func accessRows(entries []analytics.AccessEntry) ([][]any, error) {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		classes, err := json.Marshal(append([]string{}, e.ClassIDs...))
		if err != nil {
			return nil, err
		}
		asked := slices.Compact(slices.Sorted(slices.Values(e.StudentIDs)))
		var person analytics.Person
		if e.Person != nil {
			person = *e.Person
		}
		rows[i] = []any{e.GroupID, millis(e.At), e.KeyID, e.Client, e.Endpoint, e.Format, e.StartDate, e.EndDate, e.Interval,
			string(classes), len(asked), person.Email, string(person.Role), person.ProviderID, jsonList(append([]string{}, asked...))}
	}
	return rows, nil
}

// insertAccessIn writes SQLite's entries with tx, each with the enrolled
// students it names, in a few multi-row statements (a statement an entry
// cost the journal's fold four times as much). The entries take their ids
// in order after the last, as SQLite would give them: the transaction is
// the store's one writer. The entries of a group deleted since are left
// out: its log went with it.
func (s *Store) insertAccessIn(ctx context.Context, tx *txn, entries []analytics.AccessEntry) error {
	rows, err := accessRows(entries)
	if err != nil {
		return err
	}
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(entry_id), 0) + 1 FROM access_log`).Scan(&next); err != nil {
		return err
	}
	var named [][]any // entry id, group, the students it names
	for i, row := range rows {
		id := next + int64(i)
		rows[i] = append([]any{id}, row...)
		if students := row[len(row)-1]; students != "[]" { // "[]": all of them, none named
			named = append(named, []any{id, row[0], students})
		}
	}
	err = s.eachRowSource(append([]string{"bigint"}, accessTypes...), rows, func(source string, args []any) error {
		return s.query(ctx, tx, `WITH e (entry_id, `+accessColumns+`, students) AS (`+source+`)
			INSERT INTO access_log (entry_id, `+accessColumns+`) SELECT entry_id, `+accessColumns+` FROM e
			WHERE group_id IN (SELECT group_id FROM groups)`, args, nil)
	})
	if err != nil {
		return err
	}
	// CROSS JOIN keeps SQLite's join in this order: the students asked
	// for, each looked up, rather than every student of the group read.
	return s.eachRowSource([]string{"bigint", "text", "text"}, named, func(source string, args []any) error {
		return s.query(ctx, tx, `WITH e (entry_id, group_id, students) AS (`+source+`)
			INSERT INTO access_log_students (entry_id, group_id, student_id)
			SELECT e.entry_id, s.group_id, s.student_id FROM e CROSS JOIN json_each(e.students) AS asked
			CROSS JOIN students s ON s.group_id = e.group_id AND s.student_id = asked.value`, args, nil)
	})
}

// accessColumns are the columns of an access log entry that its writer
// gives; accessTypes their SQL types, and that of the students it names,
// a JSON array.
const accessColumns = `group_id, at, key_id, client, endpoint, format, start_date, end_date, report_interval, class_ids, students_asked,
	person_email, person_role, provider_id`

var accessTypes = []string{"text", "bigint", "text", "text", "text", "text", "text", "text", "text", "text", "integer", "text", "text", "text", "text"}

// foldPendingPostgres moves every entry of access_pending into access_log,
// in the order they were asked, those of groups deleted since left out.
// Each entry takes its id first, once (a CTE that calls a volatile
// function is evaluated once), so that the students' rows can name it.
// Each student an entry names is looked up by the students' key: OFFSET 0
// keeps the subquery apart, or the planner would read every student of
// the school into a hash for each entry. Folds of two processes at once
// take each entry once: the second's DELETE skips the rows the first
// deleted.
const foldPendingPostgres = `WITH taken AS (
	DELETE FROM access_pending RETURNING CAST(entry AS jsonb) AS r
), entries AS (
	SELECT nextval('access_log_entry_id_seq') AS entry_id, e.*
	FROM (SELECT r->>0 AS group_id, CAST(r->>1 AS BIGINT) AS at, r->>2 AS key_id, r->>3 AS client, r->>4 AS endpoint,
			r->>5 AS format, r->>6 AS start_date, r->>7 AS end_date, r->>8 AS report_interval, r->>9 AS class_ids,
			CAST(r->>10 AS INTEGER) AS students_asked, r->>11 AS person_email, r->>12 AS person_role, r->>13 AS provider_id,
			r->>14 AS students
		FROM taken WHERE r->>0 IN (SELECT group_id FROM groups) ORDER BY at) AS e
), logged AS (
	INSERT INTO access_log (entry_id, ` + accessColumns + `) SELECT entry_id, ` + accessColumns + ` FROM entries
)
INSERT INTO access_log_students (entry_id, group_id, student_id)
SELECT e.entry_id, s.group_id, s.student_id
FROM entries e CROSS JOIN LATERAL jsonb_array_elements_text(CAST(e.students AS jsonb)) AS asked(student_id)
CROSS JOIN LATERAL (SELECT s.group_id, s.student_id FROM students s
	WHERE s.group_id = e.group_id AND s.student_id = asked.student_id OFFSET 0) s`

// foldPending folds access_pending into access_log (PostgreSQL). A fold
// whose statement read a student, or a group, that an erasure deleted
// before it could name them fails their foreign key; the next, which reads
// them gone, leaves them out. The statement is compiled without JIT: the
// planner guesses access_pending's rows from its pages, which rows deleted
// by every fold leave many of, and compiled a fold of a few hundred rows
// for over a second.
func (s *Store) foldPending(ctx context.Context) error {
	var err error
	for range 3 {
		err = s.transact(ctx, "FoldAccessLog", func(tx *txn) error {
			if _, err := tx.ExecContext(ctx, `SET LOCAL jit = off`); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, foldPendingPostgres)
			return err
		})
		if pgCode(err) != "23503" { // foreign_key_violation
			break
		}
	}
	return err
}

// AccessLog lists the group's entries as f picks them, newest first, with
// their keys' prefixes and labels as they are now.
func (s *Store) AccessLog(ctx context.Context, groupID string, f analytics.AccessFilter) ([]analytics.AccessEntry, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.foldAccess(ctx); err != nil {
		return nil, err
	}
	var since, until int64
	if !f.Since.IsZero() {
		since = millis(f.Since)
	}
	if !f.Until.IsZero() {
		until = millis(f.Until)
	}
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT a.entry_id, a.at, a.key_id, COALESCE(k.prefix, dk.prefix, ''), COALESCE(k.label, dk.label, ''),
			COALESCE(dk.district_id, ''), a.client, a.endpoint, a.format, a.start_date, a.end_date, a.report_interval, a.class_ids, a.students_asked,
			a.person_email, a.person_role, a.provider_id
		FROM access_log a LEFT JOIN api_keys k ON k.group_id = a.group_id AND k.key_id = a.key_id
			LEFT JOIN district_keys dk ON dk.key_id = a.key_id
		WHERE a.group_id = ? AND (CAST(? AS BIGINT) = 0 OR a.entry_id < ?) AND (CAST(? AS BIGINT) = 0 OR a.at >= ?)
			AND (CAST(? AS BIGINT) = 0 OR a.at < ?)
			AND (? = '' OR a.students_asked = 0 OR EXISTS (SELECT 1 FROM access_log_students n
				WHERE n.group_id = a.group_id AND n.student_id = ? AND n.entry_id = a.entry_id))
		ORDER BY a.entry_id DESC LIMIT ?`),
		groupID, f.Before, f.Before, since, since, until, until, f.StudentID, f.StudentID, f.Limit)
	if err != nil {
		return nil, s.wrap("AccessLog", err)
	}
	var entries []analytics.AccessEntry
	byID := map[int64]int{}
	for rows.Next() {
		e := analytics.AccessEntry{GroupID: groupID}
		var at int64
		var classes string
		var person analytics.Person
		if err := rows.Scan(&e.ID, &at, &e.KeyID, &e.KeyPrefix, &e.KeyLabel, &e.KeyDistrict, &e.Client, &e.Endpoint, &e.Format,
			&e.StartDate, &e.EndDate, &e.Interval, &classes, &e.StudentsAsked, &person.Email, &person.Role, &person.ProviderID); err != nil {
			rows.Close()
			return nil, s.wrap("AccessLog", err)
		}
		if e.At = fromMillis(at); person.Email != "" {
			e.Person = &person
		}
		if err := json.Unmarshal([]byte(classes), &e.ClassIDs); err != nil {
			rows.Close()
			return nil, s.wrap("AccessLog", err)
		}
		byID[e.ID] = len(entries)
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil || len(entries) == 0 {
		return entries, s.wrap("AccessLog", err)
	}
	// The students the entries name, in one read of their span of ids.
	rows, err = s.read.QueryContext(ctx, s.q(`SELECT entry_id, student_id FROM access_log_students
		WHERE group_id = ? AND entry_id BETWEEN ? AND ? ORDER BY entry_id, student_id`),
		groupID, entries[len(entries)-1].ID, entries[0].ID)
	if err != nil {
		return nil, s.wrap("AccessLog", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var student string
		if err := rows.Scan(&id, &student); err != nil {
			return nil, s.wrap("AccessLog", err)
		}
		if i, ok := byID[id]; ok {
			entries[i].StudentIDs = append(entries[i].StudentIDs, student)
		}
	}
	for i := range entries {
		entries[i].ErasedStudents = entries[i].StudentsAsked - len(entries[i].StudentIDs)
	}
	return entries, s.wrap("AccessLog", rows.Err())
}

// PruneAccessLog deletes the entries of every group from before a time,
// and with them the students they name.
func (s *Store) PruneAccessLog(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.transact(ctx, "PruneAccessLog", func(tx *txn) error {
		at := millis(before)
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM access_log_students WHERE entry_id IN
			(SELECT entry_id FROM access_log WHERE at < ?)`), at); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM access_log WHERE at < ?`), at)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
