package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// SaveStudents enrols the students the group lacks and renames those
// whose update carries a name, in one transaction.
func (s *Store) SaveStudents(ctx context.Context, groupID string, updates []analytics.StudentUpdate) error {
	return s.transact(ctx, "SaveStudents", func(tx *txn) error {
		if _, err := s.lockUsage(ctx, tx, groupID); err != nil {
			return err
		}
		return s.saveStudents(ctx, tx, map[string][]analytics.StudentUpdate{groupID: updates}, nil, nil)
	})
}

// saveStudents enrols and renames students of groups (updates by group)
// in tx, under the groups' locks, with the same few statements for any
// number of groups. It reads first and writes only the enrolments and
// renames that change something, so that steady ingestion adds no write
// to the directory. With ordinals set, it also numbers the students
// (ingestion: each student of a new event has an ordinal): those who have
// a number already are put in ordinals by the same read, and the others
// are numbered in the row that enrols or renames them, or in a row of
// their own. With last set (ingestion, under the groups' usage locks),
// it keeps the students' last days of use the same way: in the row that
// enrols a new student, or in a row of their own when a later day comes.
func (s *Store) saveStudents(ctx context.Context, tx *txn, updates map[string][]analytics.StudentUpdate, ordinals map[[2]string]int, last map[[2]string]*analytics.Counts) error {
	// Later updates of one student win: keep only the last name sent.
	names := map[[2]string]string{}
	var keys [][]any
	for _, g := range slices.Sorted(maps.Keys(updates)) {
		for _, u := range updates[g] {
			k := [2]string{g, u.ID}
			name, seen := names[k]
			if !seen {
				keys = append(keys, []any{g, u.ID})
			}
			if u.Name != "" || name == "" {
				names[k] = u.Name
			}
		}
	}
	current, days, err := s.storedStudents(ctx, tx, keys, ordinals)
	if err != nil {
		return err
	}
	var enrol, rename, later [][]any
	for _, key := range keys {
		k := [2]string{key[0].(string), key[1].(string)}
		name, known := current[k]
		_, numbered := ordinals[k]
		switch {
		case !known && names[k] == "":
			enrol = append(enrol, []any{k[0], k[1], k[1]})
		case !known || names[k] != "" && names[k] != name:
			rename = append(rename, []any{k[0], k[1], names[k]})
		case ordinals != nil && !numbered:
			// Enrolled without usage until now: the enrolment's
			// conflict numbers them, leaving the name.
			enrol = append(enrol, []any{k[0], k[1], name})
		case last[k] != nil:
			if b, changed, err := mergedLastDays(days, last, k); err != nil {
				return err
			} else if changed {
				later = append(later, []any{k[0], k[1], name, b})
			}
		}
	}
	into, types := "students (group_id, student_id, name)", []string{"text", "text", "text"}
	onEnrol, onRename := "ON CONFLICT (group_id, student_id) DO NOTHING",
		"ON CONFLICT (group_id, student_id) DO UPDATE SET name = excluded.name"
	var scan func(*sql.Rows) error
	if ordinals != nil {
		if err := s.number(ctx, tx, ordinals, enrol, rename); err != nil {
			return err
		}
		// A number stored already (by a writer that enrolled the student
		// first) is kept; the one given here is left unused.
		keep := "ordinal = COALESCE(students.ordinal, excluded.ordinal)"
		into, types = "students (group_id, student_id, name, ordinal)", append(types, "integer")
		if last != nil {
			// The rows that enrol, number or rename carry the student's
			// last days too, whoever enrolled them first.
			if err := withLastDays(days, last, enrol, rename); err != nil {
				return err
			}
			keep += ", last_days = excluded.last_days"
			into, types = "students (group_id, student_id, name, ordinal, last_days)", append(types, "bytea")
		}
		keep += " RETURNING group_id, student_id, ordinal"
		onEnrol = "ON CONFLICT (group_id, student_id) DO UPDATE SET " + keep
		onRename += ", " + keep
		scan = func(rows *sql.Rows) error { return scanOrdinal(rows, ordinals) }
	}
	if err := s.insertRows(ctx, tx, into, types, enrol, onEnrol, scan); err != nil {
		return err
	}
	if err := s.insertRows(ctx, tx, into, types, rename, onRename, scan); err != nil {
		return err
	}
	return s.setLastDays(ctx, tx, later)
}

// setLastDays writes the last days of enrolled students, rows of (group,
// student, name, last days): the name only as a new row would need one.
func (s *Store) setLastDays(ctx context.Context, tx *txn, rows [][]any) error {
	return s.insertRows(ctx, tx, "students (group_id, student_id, name, last_days)", []string{"text", "text", "text", "bytea"}, rows,
		"ON CONFLICT (group_id, student_id) DO UPDATE SET last_days = excluded.last_days", nil)
}

// storedStudents reads the enrolments of keys (group, student): their
// names and last days, and their ordinals into ordinals (if not nil).
func (s *Store) storedStudents(ctx context.Context, tx *txn, keys [][]any, ordinals map[[2]string]int) (names map[[2]string]string, days map[[2]string][]byte, err error) {
	names, days = map[[2]string]string{}, map[[2]string][]byte{}
	err = s.selectKeyed(ctx, tx, `SELECT s.group_id, s.student_id, s.name, s.ordinal, s.last_days FROM k
		JOIN students s ON s.group_id = k.k1 AND s.student_id = k.k2`, studentKeyTypes, keys, func(rows *sql.Rows) error {
		var k [2]string
		var name string
		var ordinal sql.NullInt64
		var b []byte
		if err := rows.Scan(&k[0], &k[1], &name, &ordinal, &b); err != nil {
			return err
		}
		names[k], days[k] = name, b
		if ordinal.Valid && ordinals != nil {
			ordinals[k] = int(ordinal.Int64)
		}
		return nil
	})
	return names, days, err
}

// withLastDays appends to each row of lists, (group, student, …), the
// student's last days: those stored (days) with last's later days kept.
func withLastDays(days map[[2]string][]byte, last map[[2]string]*analytics.Counts, lists ...[][]any) error {
	for _, rows := range lists {
		for i, r := range rows {
			b, _, err := mergedLastDays(days, last, [2]string{r[0].(string), r[1].(string)})
			if err != nil {
				return err
			}
			rows[i] = append(r, b)
		}
	}
	return nil
}

// mergedLastDays returns student k's stored last days (days) with last's
// later days kept, and whether last moved any of them.
func mergedLastDays(days map[[2]string][]byte, last map[[2]string]*analytics.Counts, k [2]string) ([]byte, bool, error) {
	if last[k] == nil {
		return days[k], false, nil
	}
	b, changed, err := rollup.MergeLastDays(days[k], last[k])
	if err != nil {
		return nil, false, fmt.Errorf("last days of %s in %s: %w", k[1], k[0], err)
	}
	return b, changed, nil
}

// saveLastDays keeps the students' last days of use (by group and
// student) on their enrolments, each metric's later day.
func (s *Store) saveLastDays(ctx context.Context, tx *txn, last map[[2]string]*analytics.Counts) error {
	updates := map[string][]analytics.StudentUpdate{}
	for _, k := range slices.SortedFunc(maps.Keys(last), func(a, b [2]string) int { return cmp.Compare(a[1], b[1]) }) {
		updates[k[0]] = append(updates[k[0]], analytics.StudentUpdate{ID: k[1]})
	}
	return s.saveStudents(ctx, tx, updates, map[[2]string]int{}, last)
}

// number appends to each row of lists, (group, student, name), the
// student's ordinal: the one in ordinals, or else the next of the group's
// counter in usage_groups, which one statement advances for every group.
func (s *Store) number(ctx context.Context, tx *txn, ordinals map[[2]string]int, lists ...[][]any) error {
	count := map[string]int{} // new numbers per group
	for _, rows := range lists {
		for _, r := range rows {
			if _, ok := ordinals[[2]string{r[0].(string), r[1].(string)}]; !ok {
				count[r[0].(string)]++
			}
		}
	}
	counters := make([][]any, 0, len(count))
	for _, g := range slices.Sorted(maps.Keys(count)) {
		counters = append(counters, []any{g, count[g]})
	}
	next := map[string]int{}
	if err := s.insertRows(ctx, tx, "usage_groups (group_id, next_ordinal)", []string{"text", "integer"}, counters,
		`ON CONFLICT (group_id) DO UPDATE SET next_ordinal = usage_groups.next_ordinal + excluded.next_ordinal
		RETURNING group_id, next_ordinal`, func(rows *sql.Rows) error {
			var g string
			var n int
			err := rows.Scan(&g, &n)
			next[g] = n
			return err
		}); err != nil {
		return err
	}
	// Each group's new students take the numbers below its counter, in
	// the order they come.
	for _, rows := range lists {
		for i, r := range rows {
			k := [2]string{r[0].(string), r[1].(string)}
			n, ok := ordinals[k]
			if !ok {
				n = next[k[0]] - count[k[0]]
				count[k[0]]--
			}
			rows[i] = append(r, n)
		}
	}
	return nil
}

// AddStudent enrols a student; one already enrolled is a Conflict.
func (s *Store) AddStudent(ctx context.Context, st analytics.Student) error {
	return s.transact(ctx, "AddStudent", func(tx *txn) error {
		if err := s.lockGroup(ctx, tx, st.GroupID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO students (group_id, student_id, name) VALUES (?, ?, ?)
			ON CONFLICT (group_id, student_id) DO NOTHING`), st.GroupID, st.ID, st.Name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "Student %q already exists in group %q", st.ID, st.GroupID)
		}
		return nil
	})
}

// RenameStudent changes an enrolled student's name.
func (s *Store) RenameStudent(ctx context.Context, st analytics.Student) error {
	return s.transact(ctx, "RenameStudent", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE students SET name = ? WHERE group_id = ? AND student_id = ?`),
			st.Name, st.GroupID, st.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Student %q not found in group %q", st.ID, st.GroupID)
		}
		return nil
	})
}

// Students returns the group's students.
func (s *Store) Students(ctx context.Context, groupID string) ([]analytics.Student, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT student_id, name FROM students WHERE group_id = ?`), groupID)
	if err != nil {
		return nil, s.wrap("Students", err)
	}
	defer rows.Close()
	var students []analytics.Student
	for rows.Next() {
		st := analytics.Student{GroupID: groupID}
		if err := rows.Scan(&st.ID, &st.Name); err != nil {
			return nil, s.wrap("Students", err)
		}
		students = append(students, st)
	}
	return students, s.wrap("Students", rows.Err())
}

// RosterVersion reads the group's creation and the count of changes to
// its students and ordinals that the triggers of roster_versions keep.
func (s *Store) RosterVersion(ctx context.Context, groupID string) (string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var created, version int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT g.created_at, COALESCE(v.version, 0) FROM groups g
		LEFT JOIN roster_versions v ON v.group_id = g.group_id WHERE g.group_id = ?`), groupID).Scan(&created, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return "", analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
	}
	return strconv.FormatInt(created, 10) + "." + strconv.FormatInt(version, 10), s.wrap("RosterVersion", err)
}
