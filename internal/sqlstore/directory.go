package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"groupanalytics/internal/analytics"
)

// CreateGroup adds a group; a group id already taken is a Conflict.
func (s *Store) CreateGroup(ctx context.Context, g analytics.Group) error {
	return s.transact(ctx, "CreateGroup", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO groups (group_id, name, time_zone, created_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (group_id) DO NOTHING`), g.ID, g.Name, g.TimeZone, millis(g.Created))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "Group %q already exists", g.ID)
		}
		return nil
	})
}

const groupColumns = `group_id, name, time_zone, created_at, min_cell_size, retention_days`

func scanGroup(row interface{ Scan(...any) error }) (analytics.Group, error) {
	var g analytics.Group
	var created int64
	err := row.Scan(&g.ID, &g.Name, &g.TimeZone, &created, &g.MinCellSize, &g.Retention)
	g.Created = fromMillis(created)
	return g, err
}

// Group returns the group with this id, or NotFound.
func (s *Store) Group(ctx context.Context, groupID string) (analytics.Group, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	g, err := scanGroup(s.read.QueryRowContext(ctx, s.q(`SELECT `+groupColumns+` FROM groups WHERE group_id = ?`), groupID))
	if errors.Is(err, sql.ErrNoRows) {
		return g, analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
	}
	return g, s.wrap("Group", err)
}

// Groups returns every group, by id.
func (s *Store) Groups(ctx context.Context) ([]analytics.Group, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT `+groupColumns+` FROM groups ORDER BY group_id`)
	if err != nil {
		return nil, s.wrap("Groups", err)
	}
	defer rows.Close()
	var groups []analytics.Group
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, s.wrap("Groups", err)
		}
		groups = append(groups, g)
	}
	return groups, s.wrap("Groups", rows.Err())
}

// RenameGroup changes a group's display name, or answers NotFound.
func (s *Store) RenameGroup(ctx context.Context, groupID, name string) error {
	return s.updateGroup(ctx, "RenameGroup", `name`, groupID, name)
}

// SetMinCellSize sets a group's minCellSize (0: off), or answers NotFound.
func (s *Store) SetMinCellSize(ctx context.Context, groupID string, size int) error {
	return s.updateGroup(ctx, "SetMinCellSize", `min_cell_size`, groupID, size)
}

// SetRetention sets how many days of usage a group keeps (0: all), or
// answers NotFound.
func (s *Store) SetRetention(ctx context.Context, groupID string, days analytics.Days) error {
	return s.updateGroup(ctx, "SetRetention", `retention_days`, groupID, int(days))
}

// updateGroup sets one column of a group's row, or answers NotFound.
func (s *Store) updateGroup(ctx context.Context, op, column, groupID string, value any) error {
	return s.transact(ctx, op, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE groups SET `+column+` = ? WHERE group_id = ?`), value, groupID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
		}
		return nil
	})
}

// lockGroup checks that the group exists and, on PostgreSQL, holds its row
// until the transaction ends, so that per-group numbering does not race.
func (s *Store) lockGroup(ctx context.Context, tx *txn, groupID string) error {
	var id string
	err := tx.QueryRowContext(ctx, s.q(`SELECT group_id FROM groups WHERE group_id = ?`+s.dialect.forUpdate), groupID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
	}
	return err
}

// AddPlan adds a plan to its group and returns it with its id.
func (s *Store) AddPlan(ctx context.Context, p analytics.Plan) (analytics.Plan, error) {
	err := s.transact(ctx, "AddPlan", func(tx *txn) error {
		if err := s.lockGroup(ctx, tx, p.GroupID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, s.q(`INSERT INTO plans (group_id, plan_id, starts_at, ends_at, cancelled_at)
			SELECT CAST(? AS TEXT), COALESCE(MAX(plan_id), 0) + 1, CAST(? AS BIGINT), CAST(? AS BIGINT), NULL FROM plans WHERE group_id = ?
			RETURNING plan_id`), p.GroupID, millis(p.Starts), nullMillis(p.Ends), p.GroupID).Scan(&p.ID)
	})
	return p, err
}

const planColumns = `group_id, plan_id, starts_at, ends_at, cancelled_at`

func scanPlan(row interface{ Scan(...any) error }) (analytics.Plan, error) {
	var p analytics.Plan
	var starts int64
	var ends, cancelled sql.NullInt64
	err := row.Scan(&p.GroupID, &p.ID, &starts, &ends, &cancelled)
	p.Starts, p.Ends, p.Cancelled = fromMillis(starts), fromNullMillis(ends), fromNullMillis(cancelled)
	return p, err
}

// CancelPlan cancels the group's plan from at on and returns it.
func (s *Store) CancelPlan(ctx context.Context, groupID string, planID int64, at time.Time) (analytics.Plan, error) {
	var p analytics.Plan
	err := s.transact(ctx, "CancelPlan", func(tx *txn) error {
		var err error
		p, err = scanPlan(tx.QueryRowContext(ctx, s.q(`UPDATE plans SET cancelled_at = COALESCE(cancelled_at, ?)
			WHERE group_id = ? AND plan_id = ? RETURNING `+planColumns), millis(at), groupID, planID))
		if errors.Is(err, sql.ErrNoRows) {
			return analytics.Errorf(analytics.NotFound, "Plan %d of group %q not found", planID, groupID)
		}
		return err
	})
	return p, err
}

// Plans returns the group's plans, in the order they were added.
func (s *Store) Plans(ctx context.Context, groupID string) ([]analytics.Plan, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.Group(ctx, groupID); err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT `+planColumns+` FROM plans WHERE group_id = ? ORDER BY plan_id`), groupID)
	if err != nil {
		return nil, s.wrap("Plans", err)
	}
	defer rows.Close()
	var plans []analytics.Plan
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, s.wrap("Plans", err)
		}
		plans = append(plans, p)
	}
	return plans, s.wrap("Plans", rows.Err())
}

// AddKey stores a report key (its hash, never the secret), and a
// teacher's key's classes, which must be the group's.
func (s *Store) AddKey(ctx context.Context, k analytics.APIKey) error {
	return s.transact(ctx, "AddKey", func(tx *txn) error {
		if err := s.lockGroup(ctx, tx, k.GroupID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO api_keys (group_id, key_id, key_hash, prefix, label, created_at, for_classes)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), k.GroupID, k.ID, k.Hash, k.Prefix, k.Label, millis(k.Created), k.ForClasses)
		if err != nil || len(k.Classes) == 0 {
			return err
		}
		if missing, err := s.firstMissing(ctx, tx, "classes", "class_id", k.GroupID, k.Classes); err != nil || missing != "" {
			return cmp.Or(err, analytics.Errorf(analytics.Invalid, "Invalid classIds: no class %q in group %q", missing, k.GroupID))
		}
		rows := make([][]any, len(k.Classes))
		for i, id := range k.Classes {
			rows[i] = []any{k.GroupID, k.ID, id}
		}
		return s.insertRows(ctx, tx, "api_key_classes (group_id, key_id, class_id)", []string{"text", "text", "text"}, rows, "", nil)
	})
}

// Keys returns the group's report keys.
func (s *Store) Keys(ctx context.Context, groupID string) ([]analytics.APIKey, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.Group(ctx, groupID); err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT k.group_id, k.key_id, k.prefix, k.label, k.created_at, k.revoked_at, k.last_used_at,
			k.for_classes, c.class_id
		FROM api_keys k LEFT JOIN api_key_classes c ON c.group_id = k.group_id AND c.key_id = k.key_id
		WHERE k.group_id = ? ORDER BY k.created_at, k.key_id`), groupID)
	if err != nil {
		return nil, s.wrap("Keys", err)
	}
	defer rows.Close()
	var keys []analytics.APIKey
	for rows.Next() {
		var k analytics.APIKey
		var created int64
		var revoked, used sql.NullInt64
		var class sql.NullString
		if err := rows.Scan(&k.GroupID, &k.ID, &k.Prefix, &k.Label, &created, &revoked, &used, &k.ForClasses, &class); err != nil {
			return nil, s.wrap("Keys", err)
		}
		if n := len(keys); n > 0 && keys[n-1].ID == k.ID {
			keys[n-1].Classes = append(keys[n-1].Classes, class.String) // the same key, another class
			continue
		}
		k.Created, k.Revoked, k.LastUsed = fromMillis(created), fromNullMillis(revoked), fromNullMillis(used)
		if class.Valid {
			k.Classes = []string{class.String}
		}
		keys = append(keys, k)
	}
	for i := range keys {
		slices.Sort(keys[i].Classes)
	}
	return keys, s.wrap("Keys", rows.Err())
}

// RevokeKey revokes the group's key from at on.
func (s *Store) RevokeKey(ctx context.Context, groupID, keyID string, at time.Time) error {
	return s.transact(ctx, "RevokeKey", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?)
			WHERE group_id = ? AND key_id = ?`), millis(at), groupID, keyID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Key %q of group %q not found", keyID, groupID)
		}
		return nil
	})
}

var errUnauthorized = analytics.Errorf(analytics.Unauthorized, "Unauthorized")

// Authorize runs one query that always returns one row, whether or not the
// key exists, is revoked, or has a valid plan; the verdict is made after.
// It never writes: a key's last use is noted by a background writer, so
// that bookkeeping cannot fail or slow a read.
func (s *Store) Authorize(ctx context.Context, keyHash []byte, now time.Time) (analytics.Access, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var (
		groupID, keyID, name, zone       sql.NullString
		created, revoked, used, minCells sql.NullInt64
		retention                        sql.NullInt64
		forClasses                       sql.NullBool
		planValid                        bool
	)
	at := millis(now)
	err := s.read.QueryRowContext(ctx, s.q(`SELECT k.group_id, k.key_id, k.revoked_at, k.last_used_at, k.for_classes,
			g.name, g.time_zone, g.created_at, g.min_cell_size, g.retention_days,
			EXISTS (SELECT 1 FROM plans p WHERE p.group_id = k.group_id AND p.starts_at <= ?
				AND (p.ends_at IS NULL OR p.ends_at > ?) AND (p.cancelled_at IS NULL OR p.cancelled_at > ?))
		FROM (SELECT 1 AS one) AS probe
		LEFT JOIN api_keys k ON k.key_hash = ?
		LEFT JOIN groups g ON g.group_id = k.group_id`), at, at, at, keyHash).
		Scan(&groupID, &keyID, &revoked, &used, &forClasses, &name, &zone, &created, &minCells, &retention, &planValid)
	if err != nil {
		return analytics.Access{}, s.wrap("Authorize", err)
	}
	if !groupID.Valid || revoked.Valid || !planValid || !name.Valid {
		return analytics.Access{}, errUnauthorized
	}
	access := analytics.Access{Group: analytics.Group{ID: groupID.String, Name: name.String, TimeZone: zone.String,
		Created: fromMillis(created.Int64), MinCellSize: int(minCells.Int64),
		Retention: analytics.Days(retention.Int64)}, KeyID: keyID.String, ForClasses: forClasses.Bool}
	if access.ForClasses {
		rows, err := s.read.QueryContext(ctx, s.q(`SELECT class_id FROM api_key_classes WHERE group_id = ? AND key_id = ?`),
			groupID.String, keyID.String)
		if err == nil {
			access.Classes, err = scanStrings(rows)
		}
		if err != nil {
			return analytics.Access{}, s.wrap("Authorize", err)
		}
	}
	// last_used_at is written at most once a day per key.
	if !used.Valid || fromMillis(used.Int64).Truncate(24*time.Hour).Before(now.Truncate(24*time.Hour)) {
		s.touchKey(keyTouch{groupID: groupID.String, keyID: keyID.String, at: at})
	}
	return access, nil
}

// keyTouch notes that a key was used at a time.
type keyTouch struct {
	groupID, keyID string
	at             int64
}

// touchKey queues a note of a key's use, or drops it when the queue is
// full: the key's next request notes it again.
func (s *Store) touchKey(t keyTouch) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	select {
	case s.touches <- t:
	default:
	}
}

// writeTouches writes the notes of keys' use. A note that cannot be
// written (the database is busy or away) is dropped, as is whatever is
// queued when the store closes.
func (s *Store) writeTouches() {
	defer s.writers.Done()
	for t := range s.touches {
		if s.isClosed() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = s.write.ExecContext(ctx, s.q(`UPDATE api_keys SET last_used_at = ?
			WHERE group_id = ? AND key_id = ? AND (last_used_at IS NULL OR last_used_at < ?)`), t.at, t.groupID, t.keyID, t.at)
		cancel()
	}
}

// SaveStudents enrols the students the group lacks and renames those
// whose update carries a name, in one transaction.
func (s *Store) SaveStudents(ctx context.Context, groupID string, updates []analytics.StudentUpdate) error {
	return s.transact(ctx, "SaveStudents", func(tx *txn) error {
		if _, err := s.lockUsage(ctx, tx, groupID); err != nil {
			return err
		}
		return s.saveStudents(ctx, tx, map[string][]analytics.StudentUpdate{groupID: updates}, nil)
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
// their own.
func (s *Store) saveStudents(ctx context.Context, tx *txn, updates map[string][]analytics.StudentUpdate, ordinals map[[2]string]int) error {
	// Later updates of one student win: keep only the last name sent.
	last := map[[2]string]string{}
	var keys [][]any
	for _, g := range slices.Sorted(maps.Keys(updates)) {
		for _, u := range updates[g] {
			k := [2]string{g, u.ID}
			name, seen := last[k]
			if !seen {
				keys = append(keys, []any{g, u.ID})
			}
			if u.Name != "" || name == "" {
				last[k] = u.Name
			}
		}
	}
	current := map[[2]string]string{}
	err := s.selectKeyed(ctx, tx, `SELECT s.group_id, s.student_id, s.name, s.ordinal FROM k
		JOIN students s ON s.group_id = k.k1 AND s.student_id = k.k2`, studentKeyTypes, keys, func(rows *sql.Rows) error {
		var k [2]string
		var name string
		var ordinal sql.NullInt64
		if err := rows.Scan(&k[0], &k[1], &name, &ordinal); err != nil {
			return err
		}
		current[k] = name
		if ordinal.Valid && ordinals != nil {
			ordinals[k] = int(ordinal.Int64)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var enrol, rename [][]any
	for _, key := range keys {
		k := [2]string{key[0].(string), key[1].(string)}
		name, known := current[k]
		_, numbered := ordinals[k]
		switch {
		case !known && last[k] == "":
			enrol = append(enrol, []any{k[0], k[1], k[1]})
		case !known || last[k] != "" && last[k] != name:
			rename = append(rename, []any{k[0], k[1], last[k]})
		case ordinals != nil && !numbered:
			// Enrolled without usage until now: the enrolment's
			// conflict numbers them, leaving the name.
			enrol = append(enrol, []any{k[0], k[1], name})
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
		keep := "ordinal = COALESCE(students.ordinal, excluded.ordinal) RETURNING group_id, student_id, ordinal"
		into, types = "students (group_id, student_id, name, ordinal)", append(types, "integer")
		onEnrol = "ON CONFLICT (group_id, student_id) DO UPDATE SET " + keep
		onRename += ", " + keep
		scan = func(rows *sql.Rows) error { return scanOrdinal(rows, ordinals) }
	}
	if err := s.insertRows(ctx, tx, into, types, enrol, onEnrol, scan); err != nil {
		return err
	}
	return s.insertRows(ctx, tx, into, types, rename, onRename, scan)
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

// AddToken stores a platform token (its hash, never the secret).
func (s *Store) AddToken(ctx context.Context, t analytics.PlatformToken) error {
	return s.transact(ctx, "AddToken", func(tx *txn) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO platform_tokens (token_id, token_hash, prefix, label, created_at)
			VALUES (?, ?, ?, ?, ?)`), t.ID, t.Hash, t.Prefix, t.Label, millis(t.Created))
		return err
	})
}

// Tokens returns every platform token.
func (s *Store) Tokens(ctx context.Context) ([]analytics.PlatformToken, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT token_id, prefix, label, created_at, revoked_at
		FROM platform_tokens ORDER BY created_at, token_id`)
	if err != nil {
		return nil, s.wrap("Tokens", err)
	}
	defer rows.Close()
	var tokens []analytics.PlatformToken
	for rows.Next() {
		var t analytics.PlatformToken
		var created int64
		var revoked sql.NullInt64
		if err := rows.Scan(&t.ID, &t.Prefix, &t.Label, &created, &revoked); err != nil {
			return nil, s.wrap("Tokens", err)
		}
		t.Created, t.Revoked = fromMillis(created), fromNullMillis(revoked)
		tokens = append(tokens, t)
	}
	return tokens, s.wrap("Tokens", rows.Err())
}

// RevokeToken revokes a platform token from at on.
func (s *Store) RevokeToken(ctx context.Context, tokenID string, at time.Time) error {
	return s.transact(ctx, "RevokeToken", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE platform_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE token_id = ?`),
			millis(at), tokenID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Token %q not found", tokenID)
		}
		return nil
	})
}

// AuthorizeToken returns the unrevoked token with this hash, or an
// Unauthenticated error.
func (s *Store) AuthorizeToken(ctx context.Context, tokenHash []byte) (analytics.PlatformToken, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var t analytics.PlatformToken
	var created int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT token_id, prefix, label, created_at FROM platform_tokens
		WHERE token_hash = ? AND revoked_at IS NULL`), tokenHash).Scan(&t.ID, &t.Prefix, &t.Label, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return t, analytics.Errorf(analytics.Unauthenticated, "Invalid or missing platform token")
	}
	t.Created = fromMillis(created)
	return t, s.wrap("AuthorizeToken", err)
}
