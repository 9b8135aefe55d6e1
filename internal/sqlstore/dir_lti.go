package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// AddLTIPlatform registers a school's or a district's platform; an id, or
// an issuer and client id, taken is a Conflict.
func (s *Store) AddLTIPlatform(ctx context.Context, p analytics.LTIPlatform) error {
	return s.transact(ctx, "AddLTIPlatform", func(tx *txn) error {
		if err := s.lockOwner(ctx, tx, p.GroupID, p.DistrictID); err != nil {
			return err
		}
		var taken int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM lti_platforms WHERE platform_id = ? OR (issuer = ? AND client_id = ?)`),
			p.ID, p.Issuer, p.ClientID).Scan(&taken); err != nil {
			return err
		}
		if taken > 0 {
			return analytics.Errorf(analytics.Conflict, "LTI platform %q, or one of issuer %q and client %q, already exists", p.ID, p.Issuer, p.ClientID)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO lti_platforms (platform_id, name, issuer, client_id, deployment_ids, auth_url, token_url, jwks_url,
				group_id, district_id, match_email, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			p.ID, p.Name, p.Issuer, p.ClientID, strings.Join(p.DeploymentIDs, " "), p.AuthURL, p.TokenURL, p.JWKSURL,
			nullable(p.GroupID), nullable(p.DistrictID), p.MatchEmail, millis(p.Created))
		return err
	})
}

// ltiPlatformColumns are a platform's columns, as scanLTIPlatform reads them.
const ltiPlatformColumns = `platform_id, name, issuer, client_id, deployment_ids, auth_url, token_url, jwks_url,
	COALESCE(group_id, ''), COALESCE(district_id, ''), match_email, created_at`

func scanLTIPlatform(row interface{ Scan(...any) error }) (analytics.LTIPlatform, error) {
	var p analytics.LTIPlatform
	var deployments string
	var created int64
	err := row.Scan(&p.ID, &p.Name, &p.Issuer, &p.ClientID, &deployments, &p.AuthURL, &p.TokenURL, &p.JWKSURL, &p.GroupID, &p.DistrictID, &p.MatchEmail,
		&created)
	p.DeploymentIDs, p.Created = strings.Fields(deployments), fromMillis(created)
	return p, err
}

// LTIPlatformsOf returns a school's platforms (groupID) or a district's
// (districtID), by id.
func (s *Store) LTIPlatformsOf(ctx context.Context, groupID, districtID string) ([]analytics.LTIPlatform, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	column, owner := ownerColumn(groupID, districtID)
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT `+ltiPlatformColumns+` FROM lti_platforms WHERE `+column+` = ? ORDER BY platform_id`), owner)
	if err != nil {
		return nil, s.wrap("LTIPlatformsOf", err)
	}
	defer rows.Close()
	platforms := []analytics.LTIPlatform{}
	for rows.Next() {
		p, err := scanLTIPlatform(rows)
		if err != nil {
			return nil, s.wrap("LTIPlatformsOf", err)
		}
		platforms = append(platforms, p)
	}
	return platforms, s.wrap("LTIPlatformsOf", rows.Err())
}

// LTIPlatform returns the platform of this id, or answers NotFound.
func (s *Store) LTIPlatform(ctx context.Context, platformID string) (analytics.LTIPlatform, error) {
	return s.oneLTIPlatform(ctx, "LTIPlatform", `platform_id = ?`, platformID)
}

// LTIPlatformOf returns the platform of an issuer and client id, or with
// no client id the issuer's one platform; NotFound otherwise.
func (s *Store) LTIPlatformOf(ctx context.Context, issuer, clientID string) (analytics.LTIPlatform, error) {
	if clientID == "" {
		return s.oneLTIPlatform(ctx, "LTIPlatformOf", `issuer = ? AND (SELECT COUNT(*) FROM lti_platforms o WHERE o.issuer = lti_platforms.issuer) = 1`, issuer)
	}
	return s.oneLTIPlatform(ctx, "LTIPlatformOf", `issuer = ? AND client_id = ?`, issuer, clientID)
}

func (s *Store) oneLTIPlatform(ctx context.Context, op, where string, args ...any) (analytics.LTIPlatform, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	p, err := scanLTIPlatform(s.read.QueryRowContext(ctx, s.q(`SELECT `+ltiPlatformColumns+` FROM lti_platforms WHERE `+where), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return p, analytics.Errorf(analytics.NotFound, "No such LTI platform")
	}
	return p, s.wrap(op, err)
}

// RemoveLTIPlatform takes a platform away, its logins and sessions with
// it (they cascade).
func (s *Store) RemoveLTIPlatform(ctx context.Context, platformID string) error {
	return s.transact(ctx, "RemoveLTIPlatform", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM lti_platforms WHERE platform_id = ?`), platformID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "LTI platform %q not found", platformID)
		}
		return nil
	})
}

// StartLTILogin keeps a launch's login, and forgets those begun more than
// maxAge before it.
func (s *Store) StartLTILogin(ctx context.Context, l analytics.LTILogin, maxAge time.Duration) error {
	return s.transact(ctx, "StartLTILogin", func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM lti_logins WHERE created_at < ?`), millis(l.Created.Add(-maxAge))); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO lti_logins (state_hash, browser_hash, platform_id, nonce, storage_target, login_query, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), l.StateHash, l.BrowserHash, l.PlatformID, l.Nonce, l.StorageTarget, l.Query, millis(l.Created))
		return err
	})
}

// TakeLTILogin returns the login of this state hash and forgets it, once,
// as TakeSignIn takes an attempt.
func (s *Store) TakeLTILogin(ctx context.Context, stateHash []byte, now time.Time, maxAge time.Duration) (analytics.LTILogin, error) {
	l := analytics.LTILogin{StateHash: stateHash}
	err := s.takeOnce(ctx, "TakeLTILogin", `SELECT browser_hash, platform_id, nonce, storage_target, login_query, created_at FROM lti_logins
		WHERE state_hash = ?`, `DELETE FROM lti_logins WHERE state_hash = ?`, stateHash, now, maxAge, func(row *sql.Row) (time.Time, error) {
		var created int64
		err := row.Scan(&l.BrowserHash, &l.PlatformID, &l.Nonce, &l.StorageTarget, &l.Query, &created)
		l.Created = fromMillis(created)
		return l.Created, err
	})
	return l, err
}

// UseLTINonce records the nonce of a platform's launch until expires, and
// forgets those expired; one recorded before is a Conflict.
func (s *Store) UseLTINonce(ctx context.Context, platformID, nonce string, now, expires time.Time) error {
	return s.transact(ctx, "UseLTINonce", func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM lti_nonces WHERE expires_at < ?`), millis(now)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO lti_nonces (platform_id, nonce, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (platform_id, nonce) DO NOTHING`), platformID, nonce, millis(expires))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "This launch's nonce was used before")
		}
		return nil
	})
}

// OpenLTISession keeps a launch's session, and forgets those ended.
func (s *Store) OpenLTISession(ctx context.Context, m analytics.LTISession) error {
	return s.transact(ctx, "OpenLTISession", func(tx *txn) error {
		now := millis(m.Created)
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM lti_sessions WHERE expires_at <= ? OR seen_at + idle_millis <= ?`), now, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO lti_sessions (token_hash, platform_id, subject, name, email, role, group_id, class_id, district_id,
				staff_id, created_at, seen_at, expires_at, idle_millis) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			m.TokenHash, m.PlatformID, m.Subject, m.Name, m.Email, m.Role, m.GroupID, m.ClassID, m.DistrictID, nullable(m.StaffID), now, now,
			millis(m.Expires), m.Idle.Milliseconds())
		return err
	})
}

// LTISession returns the session of this token hash, its last request
// noted as Session notes a sign-in's, or answers Unauthorized for one
// ended, of a platform removed, or never opened.
func (s *Store) LTISession(ctx context.Context, tokenHash []byte, now time.Time) (analytics.LTISession, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	m := analytics.LTISession{TokenHash: tokenHash}
	var created, seen, expires, idle int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT platform_id, subject, name, email, role, group_id, class_id, district_id, COALESCE(staff_id, ''),
			created_at, seen_at, expires_at, idle_millis FROM lti_sessions WHERE token_hash = ?`), tokenHash).
		Scan(&m.PlatformID, &m.Subject, &m.Name, &m.Email, &m.Role, &m.GroupID, &m.ClassID, &m.DistrictID, &m.StaffID, &created, &seen, &expires, &idle)
	if errors.Is(err, sql.ErrNoRows) {
		return m, errUnauthorized
	}
	if err != nil {
		return m, s.wrap("LTISession", err)
	}
	m.Created, m.Seen, m.Expires, m.Idle = fromMillis(created), fromMillis(seen), fromMillis(expires), time.Duration(idle)*time.Millisecond
	if !now.Before(m.Expires) || !now.Before(m.Seen.Add(m.Idle)) {
		return analytics.LTISession{}, errUnauthorized
	}
	if now.Sub(m.Seen) >= seenEvery(m.Idle) {
		if err := s.noteSeen(ctx, "LTISession", "lti_sessions", tokenHash, now); err != nil {
			return analytics.LTISession{}, err
		}
		m.Seen = now
	}
	return m, nil
}

// LTIToolKeys returns the tool's keys, newest first.
func (s *Store) LTIToolKeys(ctx context.Context) ([]analytics.LTIToolKey, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, `SELECT key_id, private_pem, created_at FROM lti_tool_keys ORDER BY created_at DESC, key_id`)
	if err != nil {
		return nil, s.wrap("LTIToolKeys", err)
	}
	defer rows.Close()
	var keys []analytics.LTIToolKey
	for rows.Next() {
		var k analytics.LTIToolKey
		var created int64
		if err := rows.Scan(&k.ID, &k.PrivatePEM, &created); err != nil {
			return nil, s.wrap("LTIToolKeys", err)
		}
		k.Created = fromMillis(created)
		keys = append(keys, k)
	}
	return keys, s.wrap("LTIToolKeys", rows.Err())
}

// AddLTIToolKey keeps a new key of the tool's.
func (s *Store) AddLTIToolKey(ctx context.Context, k analytics.LTIToolKey) error {
	return s.transact(ctx, "AddLTIToolKey", func(tx *txn) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO lti_tool_keys (key_id, private_pem, created_at) VALUES (?, ?, ?)`), k.ID, k.PrivatePEM, millis(k.Created))
		return err
	})
}

// AddLTIRegistration keeps an invitation to register, and forgets those
// expired.
func (s *Store) AddLTIRegistration(ctx context.Context, r analytics.LTIRegistration) error {
	return s.transact(ctx, "AddLTIRegistration", func(tx *txn) error {
		if err := s.lockOwner(ctx, tx, r.GroupID, r.DistrictID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM lti_registrations WHERE created_at < ?`),
			millis(r.Created.Add(-analytics.LTIRegistrationLifetime))); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO lti_registrations (token_hash, group_id, district_id, created_at) VALUES (?, ?, ?, ?)`),
			r.TokenHash, nullable(r.GroupID), nullable(r.DistrictID), millis(r.Created))
		return err
	})
}

const ltiRegistrationRow = `SELECT COALESCE(group_id, ''), COALESCE(district_id, ''), created_at FROM lti_registrations WHERE token_hash = ?`

func scanLTIRegistration(r *analytics.LTIRegistration) func(row *sql.Row) (time.Time, error) {
	return func(row *sql.Row) (time.Time, error) {
		var created int64
		err := row.Scan(&r.GroupID, &r.DistrictID, &created)
		r.Created = fromMillis(created)
		return r.Created, err
	}
}

var errNoRegistration = analytics.Errorf(analytics.NotFound, "No such registration: it was used already, or made too long ago")

// LTIRegistration returns the invitation of this token hash while it may
// be used.
func (s *Store) LTIRegistration(ctx context.Context, tokenHash []byte, now time.Time) (analytics.LTIRegistration, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	r := analytics.LTIRegistration{TokenHash: tokenHash}
	created, err := scanLTIRegistration(&r)(s.read.QueryRowContext(ctx, s.q(ltiRegistrationRow), tokenHash))
	if errors.Is(err, sql.ErrNoRows) || err == nil && now.Sub(created) > analytics.LTIRegistrationLifetime {
		return r, errNoRegistration
	}
	return r, s.wrap("LTIRegistration", err)
}

// TakeLTIRegistration returns the invitation of this token hash and
// forgets it, once (takeOnce).
func (s *Store) TakeLTIRegistration(ctx context.Context, tokenHash []byte, now time.Time) (analytics.LTIRegistration, error) {
	r := analytics.LTIRegistration{TokenHash: tokenHash}
	err := s.takeOnce(ctx, "TakeLTIRegistration", ltiRegistrationRow, `DELETE FROM lti_registrations WHERE token_hash = ?`, tokenHash, now,
		analytics.LTIRegistrationLifetime, scanLTIRegistration(&r))
	if analytics.ErrorCode(err) == analytics.NotFound {
		err = errNoRegistration
	}
	return r, err
}
