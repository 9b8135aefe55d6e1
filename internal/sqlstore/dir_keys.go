package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"time"

	"groupanalytics/internal/analytics"
)

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
		k.Created, k.Revoked, k.LastUsed = fromMillis(created), fromNullMillis(revoked), fromNullMillis(used)
		keys = appendJoined(keys, k, class, func(k *analytics.APIKey) string { return k.ID },
			func(k *analytics.APIKey) *[]string { return &k.Classes })
	}
	for i := range keys {
		slices.Sort(keys[i].Classes)
	}
	return keys, s.wrap("Keys", rows.Err())
}

// RevokeKey revokes the group's key from at on.
func (s *Store) RevokeKey(ctx context.Context, groupID, keyID string, at time.Time) error {
	return s.revokeKey(ctx, "RevokeKey", keyRow{table: "api_keys", owner: "group_id", ownerID: groupID, keyID: keyID, at: millis(at)}, "group")
}

// revokeKey revokes the key k names (a school's or a district's) from
// k.at on, or answers NotFound naming it of its owner, what.
func (s *Store) revokeKey(ctx context.Context, op string, k keyRow, what string) error {
	return s.transact(ctx, op, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE `+k.table+` SET revoked_at = COALESCE(revoked_at, ?)
			WHERE `+k.owner+` = ? AND key_id = ?`), k.at, k.ownerID, k.keyID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Key %q of %s %q not found", k.keyID, what, k.ownerID)
		}
		return nil
	})
}

var errUnauthorized = analytics.Errorf(analytics.Unauthorized, "Unauthorized")

// validPlan is the condition of a plan p valid at an instant, given three
// times as arguments.
const validPlan = `p.starts_at <= ? AND (p.ends_at IS NULL OR p.ends_at > ?) AND (p.cancelled_at IS NULL OR p.cancelled_at > ?)`

// Authorize looks the hash up among schools' keys and districts' keys at
// once, in a query that always returns one row, whether or not a key has
// the hash, is revoked or has a valid plan: every refusal costs the same
// work, whatever its cause; the verdict is made after (docs/decisions.md,
// R4). A valid district's key then reads the district's schools, and a
// teacher's key its classes. It never writes: a key's last use is noted
// by a background writer, so that bookkeeping cannot fail or slow a read.
func (s *Store) Authorize(ctx context.Context, keyHash []byte, now time.Time) (analytics.Access, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var (
		ownerID, keyID, name, zone, inDistrict      sql.NullString
		created, revoked, used, minCells, retention sql.NullInt64
		ofDistrict, forClasses, planned             sql.NullBool
	)
	at := millis(now)
	// A hash is one key's at most, of either kind: its columns are the
	// school's key's, or else the district's. The hash is bound in the
	// probe's row rather than in the joins' conditions, where SQLite took
	// five times as long to run the same statement.
	err := s.read.QueryRowContext(ctx, s.q(`SELECT ak.group_id IS NULL, COALESCE(ak.group_id, dk.district_id),
			COALESCE(ak.key_id, dk.key_id), COALESCE(ak.revoked_at, dk.revoked_at), COALESCE(ak.last_used_at, dk.last_used_at), ak.for_classes,
			EXISTS (SELECT 1 FROM plans p WHERE p.group_id = ak.group_id AND `+validPlan+`)
				OR EXISTS (SELECT 1 FROM groups dg JOIN plans p ON p.group_id = dg.group_id WHERE dg.district_id = dk.district_id AND `+validPlan+`),
			g.name, g.time_zone, g.created_at, g.min_cell_size, g.retention_days, g.district_id
		FROM (SELECT CAST(? AS `+s.dialect.blob+`) AS key_hash) AS probe
		LEFT JOIN api_keys ak ON ak.key_hash = probe.key_hash
		LEFT JOIN groups g ON g.group_id = ak.group_id
		LEFT JOIN district_keys dk ON dk.key_hash = probe.key_hash`), at, at, at, at, at, at, keyHash).
		Scan(&ofDistrict, &ownerID, &keyID, &revoked, &used, &forClasses, &planned,
			&name, &zone, &created, &minCells, &retention, &inDistrict)
	switch {
	case err != nil:
		return analytics.Access{}, s.wrap("Authorize", err)
	case !ownerID.Valid || revoked.Valid || !planned.Bool:
		return analytics.Access{}, errUnauthorized
	case ofDistrict.Bool:
		return s.authorizeDistrict(ctx, ownerID.String, keyID.String, used, now)
	case !name.Valid:
		return analytics.Access{}, errUnauthorized // the group was deleted since
	}
	access := analytics.Access{Group: analytics.Group{ID: ownerID.String, Name: name.String, TimeZone: zone.String,
		Created: fromMillis(created.Int64), MinCellSize: int(minCells.Int64),
		Retention: analytics.Days(retention.Int64), DistrictID: inDistrict.String}, KeyID: keyID.String, ForClasses: forClasses.Bool}
	if access.ForClasses {
		rows, err := s.read.QueryContext(ctx, s.q(`SELECT class_id FROM api_key_classes WHERE group_id = ? AND key_id = ?`),
			ownerID.String, keyID.String)
		if err == nil {
			access.Classes, err = scanStrings(rows)
		}
		if err != nil {
			return analytics.Access{}, s.wrap("Authorize", err)
		}
	}
	s.noteUse(keyRow{table: "api_keys", owner: "group_id", ownerID: ownerID.String, keyID: keyID.String, at: at}, used, now)
	return access, nil
}

// authorizeDistrict reads what a valid key of the district opens: its
// schools, those with a plan valid at now apart.
func (s *Store) authorizeDistrict(ctx context.Context, districtID, keyID string, used sql.NullInt64, now time.Time) (analytics.Access, error) {
	da, err := s.districtAccess(ctx, districtID, now)
	switch {
	case analytics.ErrorCode(err) == analytics.NotFound:
		return analytics.Access{}, errUnauthorized // deleted since
	case err != nil:
		return analytics.Access{}, s.wrap("Authorize", err)
	case len(da.Schools) == 0:
		return analytics.Access{}, errUnauthorized // their plans ended since the first query
	}
	s.noteUse(keyRow{table: "district_keys", owner: "district_id", ownerID: districtID, keyID: keyID, at: millis(now)}, used, now)
	return analytics.Access{KeyID: keyID, District: da}, nil
}

// DistrictAccess returns what the district's key opens at now, as
// Authorize does: its schools, those with a valid plan apart.
func (s *Store) DistrictAccess(ctx context.Context, districtID string, now time.Time) (*analytics.DistrictAccess, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	da, err := s.districtAccess(ctx, districtID, now)
	return da, s.wrap("DistrictAccess", err)
}

// districtAccess reads the district with its version, then its schools
// (districtSchools); NotFound for a district that does not exist.
func (s *Store) districtAccess(ctx context.Context, districtID string, now time.Time) (*analytics.DistrictAccess, error) {
	d := analytics.District{ID: districtID}
	var created, version int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT d.name, d.time_zone, d.created_at,
			COALESCE((SELECT v.version FROM district_versions v WHERE v.district_id = d.district_id), 0)
		FROM districts d WHERE d.district_id = ?`), districtID).Scan(&d.Name, &d.TimeZone, &created, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, districtNotFound(districtID)
	}
	if err != nil {
		return nil, err
	}
	d.Created = fromMillis(created)
	return s.districtSchools(ctx, d, version, now)
}

// districtSchool is a school of a district as the process keeps it: the
// group, and its plans.
type districtSchool struct {
	group analytics.Group
	plans []analytics.Plan
}

// maxKeptDistricts bounds the bytes of the districts' schools a process
// keeps: a district of 1,000 schools takes about 0.3 MB.
const maxKeptDistricts = 8 << 20

// districtSchools returns district d's schools, those with a plan valid at
// now apart, from what the process keeps of them under the district's
// version (district_versions, read before), read again when a write in
// any process changed its schools or their plans since.
func (s *Store) districtSchools(ctx context.Context, d analytics.District, version int64, now time.Time) (*analytics.DistrictAccess, error) {
	v := strconv.FormatInt(version, 10)
	schools, ok := s.keptDistricts.Get(d.ID, v)
	if !ok {
		var cost int
		var err error
		if schools, cost, err = s.readDistrictSchools(ctx, d.ID); err != nil {
			return nil, err
		}
		s.keptDistricts.Put(d.ID, v, schools, cost)
	}
	d.Schools = make([]string, len(schools))
	da := &analytics.DistrictAccess{District: d}
	for i, sc := range schools {
		da.District.Schools[i] = sc.group.ID
		if slices.ContainsFunc(sc.plans, func(p analytics.Plan) bool { return p.ValidAt(now) }) {
			da.Schools = append(da.Schools, sc.group)
		} else {
			da.Unplanned = append(da.Unplanned, sc.group)
		}
	}
	return da, nil
}

// readDistrictSchools reads the district's schools with their plans, by
// id, and about what they cost kept.
func (s *Store) readDistrictSchools(ctx context.Context, districtID string) ([]districtSchool, int, error) {
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT `+groupColumns+` FROM groups WHERE district_id = ? ORDER BY group_id`), districtID)
	if err != nil {
		return nil, 0, err
	}
	var schools []districtSchool
	index := map[string]int{}
	cost := 0
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		index[g.ID] = len(schools)
		schools = append(schools, districtSchool{group: g})
		cost += 200 + len(g.ID) + len(g.Name) + len(g.TimeZone) + len(g.DistrictID)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	rows, err = s.read.QueryContext(ctx, s.q(`SELECT `+planColumns+` FROM plans
		WHERE group_id IN (SELECT group_id FROM groups WHERE district_id = ?)`), districtID)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, 0, err
		}
		if i, ok := index[p.GroupID]; ok {
			schools[i].plans = append(schools[i].plans, p)
			cost += 100
		}
	}
	return schools, cost, rows.Err()
}

// noteUse queues a note of a key's use when its last use was noted before
// today: last_used_at is written at most once a day per key.
func (s *Store) noteUse(t keyRow, used sql.NullInt64, now time.Time) {
	if !used.Valid || fromMillis(used.Int64).Truncate(24*time.Hour).Before(now.Truncate(24*time.Hour)) {
		s.touchKey(t)
	}
}

// keyRow is a key's row and a time: a key of table (a school's or a
// district's), whose owner column (its group or district) is ownerID,
// and when it was used, or is revoked.
type keyRow struct {
	table, owner, ownerID, keyID string
	at                           int64
}

// touchKey queues a note of a key's use, or drops it when the queue is
// full: the key's next request notes it again.
func (s *Store) touchKey(t keyRow) {
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
		_, _ = s.write.ExecContext(ctx, s.q(`UPDATE `+t.table+` SET last_used_at = ?
			WHERE `+t.owner+` = ? AND key_id = ? AND (last_used_at IS NULL OR last_used_at < ?)`), t.at, t.ownerID, t.keyID, t.at)
		cancel()
	}
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
