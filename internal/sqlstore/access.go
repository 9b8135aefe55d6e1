package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// accessCall is a RecordAccess waiting for the commit of its entry.
type accessCall struct {
	entry analytics.AccessEntry
	ctx   context.Context
	done  chan error
}

// maxAccessBatch caps the entries written in one transaction.
const maxAccessBatch = 256

// RecordAccess adds an entry to the group's access log, and each student
// it names who is enrolled (one erased meanwhile is counted as asked, and
// not named). The entries of concurrent calls are written together, one
// transaction for them all (group commit), so that answers asked at once
// share the cost of a commit.
func (s *Store) RecordAccess(ctx context.Context, e analytics.AccessEntry) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	call := &accessCall{entry: e, ctx: ctx, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return s.wrap("RecordAccess", sql.ErrConnDone)
	}
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

// accessSyncDelay bounds how long a SQLite entry stays committed but not
// synced: a crash of the service loses none (the operating system holds
// the commit), a power cut those of the last accessSyncDelay at most.
const accessSyncDelay = time.Second

// writeAccess is the writer of the access log: it takes the first entry
// waiting and those queued behind it, writes them in one transaction and
// tells each call how it went. Calls whose callers gave up are left out.
// On SQLite it syncs the WAL within accessSyncDelay of a commit; while a
// sync fails, so do the calls, as unavailable.
func (s *Store) writeAccess() {
	defer s.writers.Done()
	var syncDue <-chan time.Time // while committed entries wait for a sync
	var syncErr error
	for {
		var first *accessCall
		select {
		case c, ok := <-s.entries:
			if !ok {
				if syncDue != nil || syncErr != nil {
					_ = s.syncWAL()
				}
				return
			}
			first = c
		case <-syncDue:
			syncDue = nil
			syncErr = s.syncWAL()
			continue
		}
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
		if syncErr != nil {
			syncErr = s.syncWAL()
		}
		err := syncErr
		if err == nil {
			err = s.insertCalls(calls)
		}
		if err == nil && s.dialect.name == "sqlite" && syncDue == nil {
			syncDue = time.After(accessSyncDelay)
		}
		for _, c := range calls {
			c.done <- err
		}
	}
}

// insertCalls writes the calls' entries together, by the latest of their
// callers' deadlines.
func (s *Store) insertCalls(calls []*accessCall) error {
	ctx, cancel := mergedContext(calls, func(c *accessCall) context.Context { return c.ctx })
	defer cancel()
	entries := make([]analytics.AccessEntry, len(calls))
	for i, c := range calls {
		entries[i] = c.entry
	}
	return s.insertAccess(ctx, entries)
}

// syncWAL syncs SQLite's WAL, and with it every commit before, whether
// SQLite synced it or not. The file exists while the store is open (the
// last connection to close checkpoints it and removes it). Failing, the
// store is unavailable: what it acknowledges may not reach the disk.
func (s *Store) syncWAL() error {
	f, err := os.Open(s.file + "-wal")
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("sync the WAL: %w: %w", analytics.ErrUnavailable, err)
	}
	return nil
}

// insertAccess writes the entries, each with the enrolled students it
// names (a JSON array, the last column of its row), all or none. On
// PostgreSQL that is one statement, its own transaction: one round trip
// and one commit for the batch, where a transaction took two more round
// trips, and one more a student named.
func (s *Store) insertAccess(ctx context.Context, entries []analytics.AccessEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		classes, err := json.Marshal(append([]string{}, e.ClassIDs...))
		if err != nil {
			return err
		}
		asked := slices.Compact(slices.Sorted(slices.Values(e.StudentIDs)))
		rows[i] = []any{e.GroupID, millis(e.At), e.KeyID, e.Client, e.Endpoint, e.Format, e.StartDate, e.EndDate, e.Interval,
			string(classes), len(asked), jsonList(append([]string{}, asked...))}
	}
	if s.dialect.name == "postgres" {
		return s.eachRowSource(accessTypes, rows, func(source string, args []any) error {
			return s.retrying(ctx, "RecordAccess", func(ctx context.Context) error {
				_, err := s.write.ExecContext(ctx, s.q(strings.Replace(insertAccessPostgres, "{entries}", source, 1)), args...)
				return err
			})
		})
	}
	return s.transactIn(ctx, "RecordAccess", txAccessLog, func(tx *txn) error {
		for _, row := range rows {
			entry, students := row[:len(row)-1], row[len(row)-1]
			var id int64
			err := tx.QueryRowContext(ctx, `INSERT INTO access_log (`+accessColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING entry_id`, entry...).Scan(&id)
			if err != nil {
				return err
			}
			if students == "[]" { // all of them: none named
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO access_log_students (entry_id, group_id, student_id)
				SELECT ?, group_id, student_id FROM students
				WHERE group_id = ? AND student_id IN (SELECT value FROM json_each(?))`, id, row[0], students); err != nil {
				return err
			}
		}
		return nil
	})
}

// accessColumns are the columns of an access log entry that its writer
// gives; accessTypes their SQL types, and that of the students it names,
// a JSON array (PostgreSQL).
const accessColumns = `group_id, at, key_id, client, endpoint, format, start_date, end_date, report_interval, class_ids, students_asked`

var accessTypes = []string{"text", "bigint", "text", "text", "text", "text", "text", "text", "text", "text", "integer", "text"}

// insertAccessPostgres writes the entries that {entries} selects, the
// students each names last. Each entry takes its id first, once (a CTE
// that calls a volatile function is evaluated once), so that the
// students' rows can name it.
const insertAccessPostgres = `WITH entries AS (
	SELECT nextval('access_log_entry_id_seq') AS entry_id, e.*
	FROM ({entries}) AS e(` + accessColumns + `, students)
), logged AS (
	INSERT INTO access_log (entry_id, ` + accessColumns + `) SELECT entry_id, ` + accessColumns + ` FROM entries
)
INSERT INTO access_log_students (entry_id, group_id, student_id)
SELECT e.entry_id, s.group_id, s.student_id
FROM entries e CROSS JOIN LATERAL jsonb_array_elements_text(CAST(e.students AS jsonb)) AS asked(student_id)
JOIN students s ON s.group_id = e.group_id AND s.student_id = asked.student_id`

// AccessLog lists the group's entries as f picks them, newest first, with
// their keys' prefixes and labels as they are now.
func (s *Store) AccessLog(ctx context.Context, groupID string, f analytics.AccessFilter) ([]analytics.AccessEntry, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var since, until int64
	if !f.Since.IsZero() {
		since = millis(f.Since)
	}
	if !f.Until.IsZero() {
		until = millis(f.Until)
	}
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT a.entry_id, a.at, a.key_id, COALESCE(k.prefix, ''), COALESCE(k.label, ''),
			a.client, a.endpoint, a.format, a.start_date, a.end_date, a.report_interval, a.class_ids, a.students_asked
		FROM access_log a LEFT JOIN api_keys k ON k.group_id = a.group_id AND k.key_id = a.key_id
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
		if err := rows.Scan(&e.ID, &at, &e.KeyID, &e.KeyPrefix, &e.KeyLabel, &e.Client, &e.Endpoint, &e.Format,
			&e.StartDate, &e.EndDate, &e.Interval, &classes, &e.StudentsAsked); err != nil {
			rows.Close()
			return nil, s.wrap("AccessLog", err)
		}
		e.At = fromMillis(at)
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
