package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"groupanalytics/internal/analytics"
)

// StaffOfProvider returns the staff whom p may sign in with this email,
// or with this roster id when it is given: a school's provider that
// school's; a district's the district's own and its schools'.
func (s *Store) StaffOfProvider(ctx context.Context, p analytics.Provider, email, sourcedID string) ([]analytics.Staff, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT `+staffColumns+`
		FROM staff m LEFT JOIN staff_classes c ON c.staff_id = m.staff_id
		WHERE (CASE WHEN ? = '' THEN m.email = ? ELSE m.sourced_id = ? END)
			AND (m.group_id = ? OR m.district_id = ? OR m.group_id IN (SELECT group_id FROM groups WHERE district_id = ?))
		ORDER BY m.staff_id, c.class_id`), sourcedID, email, sourcedID, p.GroupID, p.DistrictID, p.DistrictID)
	if err != nil {
		return nil, s.wrap("StaffOfProvider", err)
	}
	staff, err := scanStaff(rows)
	return staff, s.wrap("StaffOfProvider", err)
}

// StartSignIn keeps a sign-in attempt, and forgets those begun more than
// maxAge before it.
func (s *Store) StartSignIn(ctx context.Context, a analytics.SignInAttempt, maxAge time.Duration) error {
	return s.transact(ctx, "StartSignIn", func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sign_in_attempts WHERE created_at < ?`), millis(a.Created.Add(-maxAge))); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO sign_in_attempts (state_hash, browser_hash, provider_id, nonce, verifier, return_to, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), a.StateHash, a.BrowserHash, a.ProviderID, a.Nonce, a.Verifier, a.ReturnTo, millis(a.Created))
		return err
	})
}

// TakeSignIn returns the attempt of this state hash and forgets it, once
// (takeOnce).
func (s *Store) TakeSignIn(ctx context.Context, stateHash []byte, now time.Time, maxAge time.Duration) (analytics.SignInAttempt, error) {
	a := analytics.SignInAttempt{StateHash: stateHash}
	err := s.takeOnce(ctx, "TakeSignIn", `SELECT browser_hash, provider_id, nonce, verifier, return_to, created_at FROM sign_in_attempts WHERE state_hash = ?`,
		`DELETE FROM sign_in_attempts WHERE state_hash = ?`, stateHash, now, maxAge, func(row *sql.Row) (time.Time, error) {
			var created int64
			err := row.Scan(&a.BrowserHash, &a.ProviderID, &a.Nonce, &a.Verifier, &a.ReturnTo, &created)
			a.Created = fromMillis(created)
			return a.Created, err
		})
	return a, err
}

// takeOnce reads the row of this state hash (selectRow; scan returns
// when it was begun) and deletes it (deleteRow): of two takes, in any
// processes, one finds it (its DELETE is the one that removes the row).
// One begun more than maxAge before now, or none, is NotFound.
func (s *Store) takeOnce(ctx context.Context, op, selectRow, deleteRow string, stateHash []byte, now time.Time, maxAge time.Duration,
	scan func(*sql.Row) (time.Time, error)) error {
	return s.transact(ctx, op, func(tx *txn) error {
		created, err := scan(tx.QueryRowContext(ctx, s.q(selectRow), stateHash))
		if errors.Is(err, sql.ErrNoRows) {
			return errNoSignIn
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(deleteRow), stateHash)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 || now.Sub(created) > maxAge {
			return errNoSignIn
		}
		return nil
	})
}

var errNoSignIn = analytics.Errorf(analytics.NotFound, "No such sign-in: it was finished already, or began too long ago")

// OpenSession keeps a session, and forgets those that have ended.
func (s *Store) OpenSession(ctx context.Context, m analytics.Session) error {
	return s.transact(ctx, "OpenSession", func(tx *txn) error {
		now := millis(m.Created)
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE expires_at <= ? OR seen_at + idle_millis <= ?`), now, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, staff_id, provider_id, created_at, seen_at, expires_at, idle_millis)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), m.TokenHash, m.Staff.ID, m.ProviderID, now, now, millis(m.Expires), m.Idle.Milliseconds())
		return err
	})
}

// seenEvery is how often a session's last request is written down, at
// most: a minute, or a quarter of its idle lifetime when that is shorter,
// so that a person active more often than the idle lifetime stays
// signed in, however short it is.
func seenEvery(idle time.Duration) time.Duration { return min(time.Minute, idle/4) }

// Session returns the session of this token hash with its staff member
// as they are now, or answers Unauthorized for one that has ended (past
// its absolute or idle lifetime, signed out, its staff member or provider
// removed) or never was.
func (s *Store) Session(ctx context.Context, tokenHash []byte, now time.Time) (analytics.Session, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	m := analytics.Session{TokenHash: tokenHash}
	var created, seen, expires, idle int64
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT `+staffColumns+`, s.provider_id, p.name, s.created_at, s.seen_at, s.expires_at, s.idle_millis
		FROM sessions s JOIN staff m ON m.staff_id = s.staff_id JOIN sign_in_providers p ON p.provider_id = s.provider_id
		LEFT JOIN staff_classes c ON c.staff_id = m.staff_id
		WHERE s.token_hash = ? ORDER BY c.class_id`), tokenHash)
	if err != nil {
		return m, s.wrap("Session", err)
	}
	found := false
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var class sql.NullString
			var staffCreated int64
			st := &m.Staff
			if err := rows.Scan(&st.ID, &st.Email, &st.Name, &st.Role, &st.GroupID, &st.DistrictID, &st.SourcedID, &staffCreated, &class,
				&m.ProviderID, &m.ProviderName, &created, &seen, &expires, &idle); err != nil {
				return err
			}
			st.Created, found = fromMillis(staffCreated), true
			if class.Valid {
				st.ClassIDs = append(st.ClassIDs, class.String)
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return m, s.wrap("Session", err)
	}
	m.Created, m.Seen, m.Expires, m.Idle = fromMillis(created), fromMillis(seen), fromMillis(expires), time.Duration(idle)*time.Millisecond
	if !found || !now.Before(m.Expires) || !now.Before(m.Seen.Add(m.Idle)) {
		return analytics.Session{}, errUnauthorized
	}
	if now.Sub(m.Seen) >= seenEvery(m.Idle) {
		if err := s.noteSeen(ctx, "Session", "sessions", tokenHash, now); err != nil {
			return analytics.Session{}, err
		}
		m.Seen = now
	}
	return m, nil
}

// noteSeen writes down that the session of this token hash, of table,
// was seen at now.
func (s *Store) noteSeen(ctx context.Context, op, table string, tokenHash []byte, now time.Time) error {
	return s.transact(ctx, op, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, s.q(`UPDATE `+table+` SET seen_at = ? WHERE token_hash = ? AND seen_at < ?`), millis(now), tokenHash, millis(now))
		return err
	})
}

// CloseSession ends the session of this token hash, if there is one.
func (s *Store) CloseSession(ctx context.Context, tokenHash []byte) error {
	return s.transact(ctx, "CloseSession", func(tx *txn) error {
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE token_hash = ?`), tokenHash)
		return err
	})
}
