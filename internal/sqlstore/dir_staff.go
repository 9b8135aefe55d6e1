package sqlstore

import (
	"cmp"
	"context"

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
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT staff_id, email, name, role, COALESCE(group_id, ''), COALESCE(district_id, ''), created_at
		FROM staff WHERE `+column+` = ? ORDER BY email`), owner)
	if err != nil {
		return nil, s.wrap("StaffOf", err)
	}
	var staff []analytics.Staff
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var m analytics.Staff
			var created int64
			if err := rows.Scan(&m.ID, &m.Email, &m.Name, &m.Role, &m.GroupID, &m.DistrictID, &created); err != nil {
				return err
			}
			m.Created = fromMillis(created)
			staff = append(staff, m)
		}
		return rows.Err()
	}()
	if err != nil || districtID != "" {
		return staff, s.wrap("StaffOf", err)
	}
	classes, err := s.read.QueryContext(ctx, s.q(`SELECT staff_id, class_id FROM staff_classes WHERE group_id = ? ORDER BY staff_id, class_id`), groupID)
	if err != nil {
		return nil, s.wrap("StaffOf", err)
	}
	defer classes.Close()
	byID := make(map[string]*analytics.Staff, len(staff))
	for i := range staff {
		byID[staff[i].ID] = &staff[i]
	}
	for classes.Next() {
		var staffID, classID string
		if err := classes.Scan(&staffID, &classID); err != nil {
			return nil, s.wrap("StaffOf", err)
		}
		if m := byID[staffID]; m != nil {
			m.ClassIDs = append(m.ClassIDs, classID)
		}
	}
	return staff, s.wrap("StaffOf", classes.Err())
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
