package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"groupanalytics/internal/analytics"
)

// CreateDistrict adds a district; an id already taken is a Conflict.
func (s *Store) CreateDistrict(ctx context.Context, d analytics.District) error {
	return s.transact(ctx, "CreateDistrict", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO districts (district_id, name, time_zone, created_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (district_id) DO NOTHING`), d.ID, d.Name, d.TimeZone, millis(d.Created))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "District %q already exists", d.ID)
		}
		return nil
	})
}

func districtNotFound(id string) error {
	return analytics.Errorf(analytics.NotFound, "District %q not found", id)
}

// District returns the district with this id and its schools, or NotFound.
func (s *Store) District(ctx context.Context, districtID string) (analytics.District, error) {
	districts, err := s.readDistricts(ctx, "District", `WHERE d.district_id = ?`, districtID)
	if err == nil && len(districts) == 0 {
		err = districtNotFound(districtID)
	}
	if err != nil {
		return analytics.District{}, err
	}
	return districts[0], nil
}

// Districts returns every district, by id, with its schools.
func (s *Store) Districts(ctx context.Context) ([]analytics.District, error) {
	return s.readDistricts(ctx, "Districts", ``)
}

// readDistricts reads the districts where says, each with its schools.
func (s *Store) readDistricts(ctx context.Context, op, where string, args ...any) ([]analytics.District, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT d.district_id, d.name, d.time_zone, d.created_at, g.group_id
		FROM districts d LEFT JOIN groups g ON g.district_id = d.district_id `+where+`
		ORDER BY d.district_id, g.group_id`), args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var districts []analytics.District
	for rows.Next() {
		var d analytics.District
		var created int64
		var school sql.NullString
		if err := rows.Scan(&d.ID, &d.Name, &d.TimeZone, &created, &school); err != nil {
			return nil, s.wrap(op, err)
		}
		d.Created = fromMillis(created)
		districts = appendJoined(districts, d, school, func(d *analytics.District) string { return d.ID },
			func(d *analytics.District) *[]string { return &d.Schools })
	}
	return districts, s.wrap(op, rows.Err())
}

// RenameDistrict changes a district's name, or answers NotFound.
func (s *Store) RenameDistrict(ctx context.Context, districtID, name string) error {
	return s.transact(ctx, "RenameDistrict", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE districts SET name = ? WHERE district_id = ?`), name, districtID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return districtNotFound(districtID)
		}
		return nil
	})
}

// DeleteDistrict deletes a district, its keys, its administrators, its
// sign-in providers, its LTI platforms, its warehouses and its digest's
// recipients and sends; its schools stay, in no district.
func (s *Store) DeleteDistrict(ctx context.Context, districtID string) error {
	return s.transact(ctx, "DeleteDistrict", func(tx *txn) error {
		if err := s.lockDistrict(ctx, tx, districtID); err != nil {
			return err
		}
		for _, stmt := range []string{`UPDATE groups SET district_id = NULL WHERE district_id = ?`,
			`DELETE FROM district_keys WHERE district_id = ?`, `DELETE FROM district_digest_sends WHERE district_id = ?`,
			`DELETE FROM district_digest_recipients WHERE district_id = ?`, `DELETE FROM staff WHERE district_id = ?`,
			`DELETE FROM sign_in_providers WHERE district_id = ?`, `DELETE FROM lti_platforms WHERE district_id = ?`,
			`DELETE FROM lti_registrations WHERE district_id = ?`,
			`DELETE FROM warehouse_days WHERE warehouse_id IN (SELECT warehouse_id FROM warehouses WHERE district_id = ?)`,
			`DELETE FROM warehouses WHERE district_id = ?`, `DELETE FROM districts WHERE district_id = ?`} {
			if _, err := tx.ExecContext(ctx, s.q(stmt), districtID); err != nil {
				return err
			}
		}
		return nil
	})
}

// lockDistrict checks that the district exists and, on PostgreSQL, holds
// its row until the transaction ends.
func (s *Store) lockDistrict(ctx context.Context, tx *txn, districtID string) error {
	var id string
	err := tx.QueryRowContext(ctx, s.q(`SELECT district_id FROM districts WHERE district_id = ?`+s.dialect.forUpdate), districtID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return districtNotFound(districtID)
	}
	return err
}

// lockOwner is lockDistrict of a district's thing (districtID set), else
// lockGroup of a school's.
func (s *Store) lockOwner(ctx context.Context, tx *txn, groupID, districtID string) error {
	if districtID != "" {
		return s.lockDistrict(ctx, tx, districtID)
	}
	return s.lockGroup(ctx, tx, groupID)
}

// AttachSchool puts a school in a district: a Conflict when it is in
// another, nothing when it is in this one already.
func (s *Store) AttachSchool(ctx context.Context, districtID, groupID string) error {
	return s.transact(ctx, "AttachSchool", func(tx *txn) error {
		if err := s.lockDistrict(ctx, tx, districtID); err != nil {
			return err
		}
		var current sql.NullString
		err := tx.QueryRowContext(ctx, s.q(`SELECT district_id FROM groups WHERE group_id = ?`+s.dialect.forUpdate), groupID).Scan(&current)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return analytics.Errorf(analytics.NotFound, "Group %q not found", groupID)
		case err != nil:
			return err
		case current.Valid && current.String != districtID:
			return analytics.Errorf(analytics.Conflict, "Group %q is in district %q already; detach it from there first", groupID, current.String)
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE groups SET district_id = ? WHERE group_id = ?`), districtID, groupID)
		return err
	})
}

// DetachSchool takes a school out of its district, or answers NotFound
// when it is not in it.
func (s *Store) DetachSchool(ctx context.Context, districtID, groupID string) error {
	return s.transact(ctx, "DetachSchool", func(tx *txn) error {
		if err := s.lockDistrict(ctx, tx, districtID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE groups SET district_id = NULL WHERE group_id = ? AND district_id = ?`), groupID, districtID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Group %q is not in district %q", groupID, districtID)
		}
		return nil
	})
}

// Enrolment reads the groups' students (counted in roster_versions by the
// triggers on students, migration 31) and valid plans' seats in one query.
func (s *Store) Enrolment(ctx context.Context, groupIDs []string, now time.Time) (map[string]analytics.Enrolment, error) {
	if len(groupIDs) == 0 {
		return map[string]analytics.Enrolment{}, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	at := millis(now)
	in, args := inList(s.dialect, groupIDs, "text")
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT g.group_id, COALESCE(v.students, 0),
			(SELECT COALESCE(MAX(p.seats), 0) FROM plans p WHERE p.group_id = g.group_id AND `+validPlan+`)
		FROM groups g LEFT JOIN roster_versions v ON v.group_id = g.group_id WHERE g.group_id `+in), append([]any{at, at, at}, args...)...)
	if err != nil {
		return nil, s.wrap("Enrolment", err)
	}
	defer rows.Close()
	sizes := make(map[string]analytics.Enrolment, len(groupIDs))
	for rows.Next() {
		var id string
		var e analytics.Enrolment
		if err := rows.Scan(&id, &e.Students, &e.Seats); err != nil {
			return nil, s.wrap("Enrolment", err)
		}
		sizes[id] = e
	}
	return sizes, s.wrap("Enrolment", rows.Err())
}

// AddDistrictKey stores a district's key (its hash, never the secret).
func (s *Store) AddDistrictKey(ctx context.Context, k analytics.APIKey) error {
	return s.transact(ctx, "AddDistrictKey", func(tx *txn) error {
		if err := s.lockDistrict(ctx, tx, k.DistrictID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO district_keys (district_id, key_id, key_hash, prefix, label, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`), k.DistrictID, k.ID, k.Hash, k.Prefix, k.Label, millis(k.Created))
		return err
	})
}

// DistrictKeys returns the district's keys.
func (s *Store) DistrictKeys(ctx context.Context, districtID string) ([]analytics.APIKey, error) {
	if _, err := s.District(ctx, districtID); err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT district_id, key_id, prefix, label, created_at, revoked_at, last_used_at
		FROM district_keys WHERE district_id = ? ORDER BY created_at, key_id`), districtID)
	if err != nil {
		return nil, s.wrap("DistrictKeys", err)
	}
	defer rows.Close()
	var keys []analytics.APIKey
	for rows.Next() {
		var k analytics.APIKey
		var created int64
		var revoked, used sql.NullInt64
		if err := rows.Scan(&k.DistrictID, &k.ID, &k.Prefix, &k.Label, &created, &revoked, &used); err != nil {
			return nil, s.wrap("DistrictKeys", err)
		}
		k.Created, k.Revoked, k.LastUsed = fromMillis(created), fromNullMillis(revoked), fromNullMillis(used)
		keys = append(keys, k)
	}
	return keys, s.wrap("DistrictKeys", rows.Err())
}

// RevokeDistrictKey revokes the district's key from at on.
func (s *Store) RevokeDistrictKey(ctx context.Context, districtID, keyID string, at time.Time) error {
	return s.revokeKey(ctx, "RevokeDistrictKey", keyRow{table: "district_keys", owner: "district_id", ownerID: districtID, keyID: keyID, at: millis(at)}, "district")
}
