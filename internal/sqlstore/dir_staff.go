package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"

	"groupanalytics/internal/analytics"
)

// AddStaff adds a school's or a district's staff member, a teacher with
// their classes; an email already one of the same staff is a Conflict.
func (s *Store) AddStaff(ctx context.Context, m analytics.Staff) error {
	return s.transact(ctx, "AddStaff", func(tx *txn) error {
		owner, of := m.GroupID, "school"
		if m.DistrictID != "" {
			owner, of = m.DistrictID, "district"
			if err := s.lockDistrict(ctx, tx, m.DistrictID); err != nil {
				return err
			}
		} else if err := s.lockGroup(ctx, tx, m.GroupID); err != nil {
			return err
		}
		if missing, err := s.firstMissing(ctx, tx, "classes", "class_id", m.GroupID, m.ClassIDs); err != nil || missing != "" {
			return cmp.Or(err, analytics.Errorf(analytics.Invalid, "Invalid classIds: no class %q in group %q", missing, m.GroupID))
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO staff (staff_id, email, name, role, group_id, district_id, created_at)
			SELECT ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM staff WHERE email = ? AND (group_id = ? OR district_id = ?))`),
			m.ID, m.Email, m.Name, string(m.Role), nullable(m.GroupID), nullable(m.DistrictID), millis(m.Created), m.Email, owner, owner)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "%s is on the staff of %s %q already", m.Email, of, owner)
		}
		for _, class := range m.ClassIDs {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO staff_classes (staff_id, group_id, class_id) VALUES (?, ?, ?)`),
				m.ID, m.GroupID, class); err != nil {
				return err
			}
		}
		return nil
	})
}

// StaffOf returns a school's staff (groupID) or a district's (districtID),
// by email, each teacher with their classes.
func (s *Store) StaffOf(ctx context.Context, groupID, districtID string) ([]analytics.Staff, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	column, owner := ownerColumn(groupID, districtID)
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT `+staffColumns+` FROM staff m LEFT JOIN staff_classes c ON c.staff_id = m.staff_id
		WHERE m.`+column+` = ? ORDER BY m.email, m.staff_id, c.class_id`), owner)
	if err != nil {
		return nil, s.wrap("StaffOf", err)
	}
	staff, err := scanStaff(rows)
	return staff, s.wrap("StaffOf", err)
}

// staffColumns are a staff member's columns, and a class they teach, as
// scanStaff reads them from staff m LEFT JOIN staff_classes c.
const staffColumns = `m.staff_id, m.email, m.name, m.role, COALESCE(m.group_id, ''), COALESCE(m.district_id, ''), COALESCE(m.sourced_id, ''),
	m.created_at, c.class_id`

// scanStaff reads the rows of staffColumns, each member's rows
// together, their classes in order, each member once with their classes.
func scanStaff(rows *sql.Rows) ([]analytics.Staff, error) {
	defer rows.Close()
	var staff []analytics.Staff
	for rows.Next() {
		var m analytics.Staff
		var created int64
		var class sql.NullString
		if err := rows.Scan(&m.ID, &m.Email, &m.Name, &m.Role, &m.GroupID, &m.DistrictID, &m.SourcedID, &created, &class); err != nil {
			return nil, err
		}
		m.Created = fromMillis(created)
		staff = appendJoined(staff, m, class, func(m *analytics.Staff) string { return m.ID },
			func(m *analytics.Staff) *[]string { return &m.ClassIDs })
	}
	return staff, rows.Err()
}

// RemoveStaff takes a staff member away, or answers NotFound.
func (s *Store) RemoveStaff(ctx context.Context, staffID string) error {
	return s.transact(ctx, "RemoveStaff", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM staff WHERE staff_id = ?`), staffID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Staff member %q not found", staffID)
		}
		return nil
	})
}

// ownerColumn names the column, and its value, of a school's rows
// (groupID) or a district's (districtID) in a table of either's.
func ownerColumn(groupID, districtID string) (string, string) {
	if districtID != "" {
		return "district_id", districtID
	}
	return "group_id", groupID
}

// applyStaffChange applies a roster import's change to a school's staff
// (groupID) or a district's (districtID) with tx: the members it deletes,
// and with Replace those it brought before and does not name, leave
// (their sessions with them); each it names is updated, found by its
// roster id or else its email, or added; a teacher's classes are set when
// the import says them.
func (s *Store) applyStaffChange(ctx context.Context, tx *txn, groupID, districtID string, c analytics.StaffChange) error {
	column, owner := ownerColumn(groupID, districtID)
	named := make(map[string]bool, len(c.Staff))
	for _, m := range c.Staff {
		named[m.SourcedID] = true
	}
	var gone []string
	err := s.query(ctx, tx, `SELECT sourced_id FROM staff WHERE `+column+` = ? AND sourced_id IS NOT NULL`, []any{owner}, func(rows *sql.Rows) error {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		if slices.Contains(c.Gone, id) || c.Replace && !named[id] {
			gone = append(gone, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range gone {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM staff WHERE `+column+` = ? AND sourced_id = ?`), owner, id); err != nil {
			return err
		}
	}
	for _, m := range c.Staff {
		m.GroupID, m.DistrictID = groupID, districtID
		if err := s.saveRosterStaff(ctx, tx, m); err != nil {
			return err
		}
	}
	return nil
}

// saveRosterStaff updates the member of the roster's id, or else of the
// email, or adds them (with m's ID and Created).
func (s *Store) saveRosterStaff(ctx context.Context, tx *txn, m analytics.Staff) error {
	column, owner := ownerColumn(m.GroupID, m.DistrictID)
	var id string
	err := tx.QueryRowContext(ctx, s.q(`SELECT staff_id FROM staff WHERE `+column+` = ? AND (sourced_id = ? OR email = ?)
		ORDER BY CASE WHEN sourced_id = ? THEN 0 ELSE 1 END LIMIT 1`), owner, m.SourcedID, m.Email, m.SourcedID).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		id = m.ID
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO staff (staff_id, email, name, role, group_id, district_id, sourced_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), id, m.Email, m.Name, string(m.Role), nullable(m.GroupID), nullable(m.DistrictID), m.SourcedID, millis(m.Created))
	case err == nil:
		_, err = tx.ExecContext(ctx, s.q(`UPDATE staff SET email = ?, name = ?, role = ?, sourced_id = ? WHERE staff_id = ?`),
			m.Email, m.Name, string(m.Role), m.SourcedID, id)
	}
	if err != nil || m.ClassIDs == nil && m.Role == analytics.RoleTeacher {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM staff_classes WHERE staff_id = ?`), id); err != nil {
		return err
	}
	for _, class := range m.ClassIDs {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO staff_classes (staff_id, group_id, class_id) VALUES (?, ?, ?)`), id, m.GroupID, class); err != nil {
			return err
		}
	}
	return nil
}
