package sqlstore

import (
	"cmp"
	"context"
	"database/sql"

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
const staffColumns = `m.staff_id, m.email, m.name, m.role, COALESCE(m.group_id, ''), COALESCE(m.district_id, ''), m.created_at, c.class_id`

// scanStaff reads the rows of staffColumns, each member's rows
// together, their classes in order, each member once with their classes.
func scanStaff(rows *sql.Rows) ([]analytics.Staff, error) {
	defer rows.Close()
	var staff []analytics.Staff
	for rows.Next() {
		var m analytics.Staff
		var created int64
		var class sql.NullString
		if err := rows.Scan(&m.ID, &m.Email, &m.Name, &m.Role, &m.GroupID, &m.DistrictID, &created, &class); err != nil {
			return nil, err
		}
		if n := len(staff); n > 0 && staff[n-1].ID == m.ID {
			staff[n-1].ClassIDs = append(staff[n-1].ClassIDs, class.String)
			continue
		}
		m.Created = fromMillis(created)
		if class.Valid {
			m.ClassIDs = []string{class.String}
		}
		staff = append(staff, m)
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
