package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"groupanalytics/internal/analytics"
)

// CreateClass adds a class with its members, all enrolled in the group;
// an id the group has already is a Conflict.
func (s *Store) CreateClass(ctx context.Context, c analytics.Class) error {
	return s.transact(ctx, "CreateClass", func(tx *txn) error {
		if err := s.lockGroup(ctx, tx, c.GroupID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO classes (group_id, class_id, name, start_date, end_date) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (group_id, class_id) DO NOTHING`), c.GroupID, c.ID, c.Name, nullable(c.Start), nullable(c.End))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "Class %q already exists in group %q", c.ID, c.GroupID)
		}
		return s.addMembers(ctx, tx, c.GroupID, c.ID, c.Members)
	})
}

// UpdateClass sets a class's name and term.
func (s *Store) UpdateClass(ctx context.Context, c analytics.Class) error {
	return s.transact(ctx, "UpdateClass", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE classes SET name = ?, start_date = ?, end_date = ? WHERE group_id = ? AND class_id = ?`),
			c.Name, nullable(c.Start), nullable(c.End), c.GroupID, c.ID)
		if err != nil {
			return err
		}
		return foundClass(res, c.GroupID, c.ID)
	})
}

// DeleteClass deletes a class and its memberships.
func (s *Store) DeleteClass(ctx context.Context, groupID, classID string) error {
	return s.transact(ctx, "DeleteClass", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM classes WHERE group_id = ? AND class_id = ?`), groupID, classID)
		if err != nil {
			return err
		}
		return foundClass(res, groupID, classID)
	})
}

// foundClass answers NotFound when res changed no class.
func foundClass(res sql.Result, groupID, classID string) error {
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	return analytics.Errorf(analytics.NotFound, "Class %q not found in group %q", classID, groupID)
}

// SetClassMembers makes the class's members exactly studentIDs, under the
// group's lock, which an erasure of one of them waits for.
func (s *Store) SetClassMembers(ctx context.Context, groupID, classID string, studentIDs []string) error {
	return s.transact(ctx, "SetClassMembers", func(tx *txn) error {
		if err := s.lockGroup(ctx, tx, groupID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM class_members WHERE group_id = ? AND class_id = ?`), groupID, classID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var one int
			err := tx.QueryRowContext(ctx, s.q(`SELECT 1 FROM classes WHERE group_id = ? AND class_id = ?`), groupID, classID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return analytics.Errorf(analytics.NotFound, "Class %q not found in group %q", classID, groupID)
			} else if err != nil {
				return err
			}
		}
		return s.addMembers(ctx, tx, groupID, classID, studentIDs)
	})
}

// addMembers adds the students to the class, after checking that each is
// enrolled in the group (an Invalid error names the first that is not).
func (s *Store) addMembers(ctx context.Context, tx *txn, groupID, classID string, studentIDs []string) error {
	ids := slices.Compact(slices.Sorted(slices.Values(studentIDs)))
	if len(ids) == 0 {
		return nil
	}
	if missing, err := s.firstMissing(ctx, tx, "students", "student_id", groupID, ids); err != nil || missing != "" {
		return cmp.Or(err, analytics.Errorf(analytics.Invalid, "Invalid studentIds: no student %q in group %q", missing, groupID))
	}
	rows := make([][]any, len(ids))
	for i, id := range ids {
		rows[i] = []any{groupID, classID, id}
	}
	return s.insertRows(ctx, tx, "class_members (group_id, class_id, student_id)", []string{"text", "text", "text"}, rows, "", nil)
}

// firstMissing returns the first of ids that column of the group's rows
// of table does not hold, or "" when it holds them all: one statement.
func (s *Store) firstMissing(ctx context.Context, tx *txn, table, column, groupID string, ids []string) (string, error) {
	keys := make([][]any, len(ids))
	for i, id := range ids {
		keys[i] = []any{groupID, id}
	}
	found := map[string]bool{}
	err := s.selectKeyed(ctx, tx, `SELECT `+column+` FROM k JOIN `+table+` ON group_id = k.k1 AND `+column+` = k.k2`,
		[]string{"text", "text"}, keys, func(rows *sql.Rows) error {
			var id string
			err := rows.Scan(&id)
			found[id] = true
			return err
		})
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		if !found[id] {
			return id, nil
		}
	}
	return "", nil
}

// Class returns one class of the group, with its members.
func (s *Store) Class(ctx context.Context, groupID, classID string) (analytics.Class, error) {
	classes, err := s.classes(ctx, "Class", groupID, classID)
	if err == nil && len(classes) == 0 {
		err = analytics.Errorf(analytics.NotFound, "Class %q not found in group %q", classID, groupID)
	}
	if err != nil {
		return analytics.Class{}, err
	}
	return classes[0], nil
}

// Classes returns the group's classes, by id, with their members.
func (s *Store) Classes(ctx context.Context, groupID string) ([]analytics.Class, error) {
	return s.classes(ctx, "Classes", groupID, "")
}

// classes reads the group's classes (the one of classID, if set) with
// their members, in one statement, and puts them in byte order.
func (s *Store) classes(ctx context.Context, op, groupID, classID string) ([]analytics.Class, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT c.class_id, c.name, coalesce(c.start_date, ''), coalesce(c.end_date, ''), m.student_id
		FROM classes c LEFT JOIN class_members m ON m.group_id = c.group_id AND m.class_id = c.class_id
		WHERE c.group_id = ? AND (? = '' OR c.class_id = ?)`), groupID, classID, classID)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	byID := map[string]*analytics.Class{}
	for rows.Next() {
		var c analytics.Class
		var member sql.NullString
		if err := rows.Scan(&c.ID, &c.Name, &c.Start, &c.End, &member); err != nil {
			return nil, s.wrap(op, err)
		}
		kept := byID[c.ID]
		if kept == nil {
			c.GroupID, c.Members = groupID, []string{}
			kept = &c
			byID[c.ID] = kept
		}
		if member.Valid {
			kept.Members = append(kept.Members, member.String)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	classes := make([]analytics.Class, 0, len(byID))
	for _, c := range byID {
		slices.Sort(c.Members)
		classes = append(classes, *c)
	}
	slices.SortFunc(classes, func(a, b analytics.Class) int { return strings.Compare(a.ID, b.ID) })
	return classes, nil
}

// nullable is NULL for an empty string.
func nullable(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// ApplyRoster enrols and renames the students, creates or changes the
// classes (names and members) and deletes those named, in one
// transaction under the group's write lock.
func (s *Store) ApplyRoster(ctx context.Context, groupID string, c analytics.RosterChange) error {
	return s.transact(ctx, "ApplyRoster", func(tx *txn) error { return s.applyRoster(ctx, tx, groupID, c) })
}

// ApplyDistrictRoster makes the district's schools, puts them in it and
// applies their rosters, and its own staff's change, in one transaction.
func (s *Store) ApplyDistrictRoster(ctx context.Context, districtID string, schools []analytics.SchoolRoster, staff analytics.StaffChange) error {
	return s.transact(ctx, "ApplyDistrictRoster", func(tx *txn) error {
		if err := s.lockDistrict(ctx, tx, districtID); err != nil {
			return err
		}
		for _, sr := range schools {
			g := sr.Group
			if sr.New {
				if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO groups (group_id, name, time_zone, created_at) VALUES (?, ?, ?, ?)`),
					g.ID, g.Name, g.TimeZone, millis(g.Created)); err != nil {
					return err
				}
			}
			res, err := tx.ExecContext(ctx, s.q(`UPDATE groups SET district_id = ? WHERE group_id = ? AND (district_id IS NULL OR district_id = ?)`),
				districtID, g.ID, districtID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return analytics.Errorf(analytics.Conflict, "Group %q is in another district, or gone; nothing imported", g.ID)
			}
			if err := s.applyRoster(ctx, tx, g.ID, sr.Change); err != nil {
				return err
			}
		}
		return s.applyStaffChange(ctx, tx, "", districtID, staff)
	})
}

// applyRoster applies a group's roster change with tx.
func (s *Store) applyRoster(ctx context.Context, tx *txn, groupID string, c analytics.RosterChange) error {
	if _, err := s.lockUsage(ctx, tx, groupID); err != nil {
		return err
	}
	if err := s.saveStudents(ctx, tx, map[string][]analytics.StudentUpdate{groupID: c.Students}, nil, nil); err != nil {
		return err
	}
	for _, class := range c.Classes {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO classes (group_id, class_id, name) VALUES (?, ?, ?)
			ON CONFLICT (group_id, class_id) DO UPDATE SET name = excluded.name`), groupID, class.ID, class.Name); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM class_members WHERE group_id = ? AND class_id = ?`), groupID, class.ID); err != nil {
			return err
		}
		if err := s.addMembers(ctx, tx, groupID, class.ID, class.Members); err != nil {
			return err
		}
	}
	for _, id := range c.DeletedClasses {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM classes WHERE group_id = ? AND class_id = ?`), groupID, id); err != nil {
			return err
		}
	}
	return s.applyStaffChange(ctx, tx, groupID, "", c.Staff)
}
