package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"groupanalytics/internal/analytics"
)

// digestOwner is a digest's owner, a group or a district, and the
// statements on its recipients and sends: each table is named in full,
// so that every statement can be read (and checked) as it runs.
type digestOwner struct {
	id, kind                              string
	remove, claim, sentTo, sent, failedAt string
}

func ownerOf(groupID, districtID string) digestOwner {
	if districtID != "" {
		return digestOwner{id: districtID, kind: "district",
			remove: `DELETE FROM district_digest_recipients WHERE district_id = ? AND address = ?`,
			claim: `INSERT INTO district_digest_sends (district_id, week, address, attempts, retry_at) VALUES (?, ?, ?, 1, ?)
				ON CONFLICT (district_id, week, address) DO UPDATE SET attempts = district_digest_sends.attempts + 1, retry_at = excluded.retry_at
				WHERE district_digest_sends.sent_at IS NULL AND district_digest_sends.retry_at <= ? AND district_digest_sends.attempts < ?`,
			sentTo:   `SELECT address FROM district_digest_sends WHERE district_id = ? AND week = ? AND sent_at IS NOT NULL ORDER BY address`,
			sent:     `UPDATE district_digest_sends SET sent_at = ?, last_error = '' WHERE district_id = ? AND week = ? AND address = ?`,
			failedAt: `UPDATE district_digest_sends SET retry_at = ?, last_error = ? WHERE district_id = ? AND week = ? AND address = ? AND sent_at IS NULL`,
		}
	}
	return digestOwner{id: groupID, kind: "group",
		remove: `DELETE FROM digest_recipients WHERE group_id = ? AND address = ?`,
		claim: `INSERT INTO digest_sends (group_id, week, address, attempts, retry_at) VALUES (?, ?, ?, 1, ?)
			ON CONFLICT (group_id, week, address) DO UPDATE SET attempts = digest_sends.attempts + 1, retry_at = excluded.retry_at
			WHERE digest_sends.sent_at IS NULL AND digest_sends.retry_at <= ? AND digest_sends.attempts < ?`,
		sentTo:   `SELECT address FROM digest_sends WHERE group_id = ? AND week = ? AND sent_at IS NOT NULL ORDER BY address`,
		sent:     `UPDATE digest_sends SET sent_at = ?, last_error = '' WHERE group_id = ? AND week = ? AND address = ?`,
		failedAt: `UPDATE digest_sends SET retry_at = ?, last_error = ? WHERE group_id = ? AND week = ? AND address = ? AND sent_at IS NULL`,
	}
}

// AddRecipient adds an address to a group's digest, or a district's; one
// already there is a Conflict.
func (s *Store) AddRecipient(ctx context.Context, r analytics.Recipient) error {
	o := ownerOf(r.GroupID, r.DistrictID)
	return s.transact(ctx, "AddRecipient", func(tx *txn) error {
		if r.DistrictID != "" {
			if err := s.lockDistrict(ctx, tx, r.DistrictID); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, s.q(`INSERT INTO district_digest_recipients (district_id, address, token, created_at)
				VALUES (?, ?, ?, ?) ON CONFLICT (district_id, address) DO NOTHING`), r.DistrictID, r.Address, r.Token, millis(r.Created))
			return added(res, err, r.Address, o)
		}
		if err := s.lockGroup(ctx, tx, r.GroupID); err != nil {
			return err
		}
		if r.ClassID != "" {
			if missing, err := s.firstMissing(ctx, tx, "classes", "class_id", r.GroupID, []string{r.ClassID}); err != nil || missing != "" {
				return cmp.Or(err, analytics.Errorf(analytics.Invalid, "Invalid classId: no class %q in group %q", r.ClassID, r.GroupID))
			}
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO digest_recipients (group_id, address, token, created_at, class_id)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (group_id, address) DO NOTHING`), r.GroupID, r.Address, r.Token, millis(r.Created), nullable(r.ClassID))
		return added(res, err, r.Address, o)
	})
}

// added is the outcome of a recipient's insert: a Conflict when the
// address was there already.
func added(res sql.Result, err error, address string, o digestOwner) error {
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return analytics.Errorf(analytics.Conflict, "%s already receives the digest of %s %q", address, o.kind, o.id)
	}
	return nil
}

// Recipients returns a group's digest recipients by address, or every
// group's (by group, then address) when groupID is empty.
func (s *Store) Recipients(ctx context.Context, groupID string) ([]analytics.Recipient, error) {
	return s.recipients(ctx, "Recipients", `SELECT group_id, '', address, token, created_at, COALESCE(class_id, '') FROM digest_recipients
		WHERE group_id = ? OR ? = '' ORDER BY group_id, address`, groupID)
}

// DistrictRecipients returns a district's digest recipients by address,
// or every district's (by district, then address) when districtID is
// empty.
func (s *Store) DistrictRecipients(ctx context.Context, districtID string) ([]analytics.Recipient, error) {
	return s.recipients(ctx, "DistrictRecipients", `SELECT '', district_id, address, token, created_at, '' FROM district_digest_recipients
		WHERE district_id = ? OR ? = '' ORDER BY district_id, address`, districtID)
}

func (s *Store) recipients(ctx context.Context, op, query, id string) ([]analytics.Recipient, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(query), id, id)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var recipients []analytics.Recipient
	for rows.Next() {
		var r analytics.Recipient
		var created int64
		if err := rows.Scan(&r.GroupID, &r.DistrictID, &r.Address, &r.Token, &created, &r.ClassID); err != nil {
			return nil, s.wrap(op, err)
		}
		r.Created = fromMillis(created)
		recipients = append(recipients, r)
	}
	return recipients, s.wrap(op, rows.Err())
}

// RemoveRecipient removes an address from a group's digest, or a
// district's, or answers NotFound.
func (s *Store) RemoveRecipient(ctx context.Context, r analytics.Recipient) error {
	o := ownerOf(r.GroupID, r.DistrictID)
	return s.transact(ctx, "RemoveRecipient", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(o.remove), o.id, r.Address)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "%s does not receive the digest of %s %q", r.Address, o.kind, o.id)
		}
		return nil
	})
}

// Unsubscribe removes the recipient whose unsubscribe token this is, a
// group's or a district's, and returns it, or answers NotFound.
func (s *Store) Unsubscribe(ctx context.Context, token string) (analytics.Recipient, error) {
	r := analytics.Recipient{Token: token}
	err := s.transact(ctx, "Unsubscribe", func(tx *txn) error {
		var created int64
		err := tx.QueryRowContext(ctx, s.q(`DELETE FROM digest_recipients WHERE token = ?
			RETURNING group_id, address, created_at, COALESCE(class_id, '')`), token).Scan(&r.GroupID, &r.Address, &created, &r.ClassID)
		if errors.Is(err, sql.ErrNoRows) {
			err = tx.QueryRowContext(ctx, s.q(`DELETE FROM district_digest_recipients WHERE token = ?
				RETURNING district_id, address, created_at`), token).Scan(&r.DistrictID, &r.Address, &created)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return analytics.ErrUnknownUnsubscribeToken
		}
		r.Created = fromMillis(created)
		return err
	})
	return r, err
}

// ClaimDigest records that d is being sent until lease, and reports
// whether the caller is the one to send it: it has not been sent, no
// other claim on it is current, and it has been tried fewer than
// maxAttempts times. One statement, so that of several processes
// claiming at once exactly one wins.
func (s *Store) ClaimDigest(ctx context.Context, d analytics.DigestSend, now, lease time.Time, maxAttempts int) (bool, error) {
	o := ownerOf(d.GroupID, d.DistrictID)
	return s.claim(ctx, "ClaimDigest", o.claim, o.id, d.Week.String(), d.Address, millis(lease), millis(now), maxAttempts)
}

// claim runs a claim's statement, which changes one row when the claim is
// the caller's, and reports whether it was.
func (s *Store) claim(ctx context.Context, op, statement string, args ...any) (bool, error) {
	var claimed bool
	err := s.transact(ctx, op, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(statement), args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n == 1
		return err
	})
	return claimed, err
}

// SentDigests returns the addresses d's digest (its group's or its
// district's, of its week) went to.
func (s *Store) SentDigests(ctx context.Context, d analytics.DigestSend) ([]string, error) {
	o := ownerOf(d.GroupID, d.DistrictID)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(o.sentTo), o.id, d.Week.String())
	if err != nil {
		return nil, s.wrap("SentDigests", err)
	}
	defer rows.Close()
	var sent []string
	for rows.Next() {
		var address string
		if err := rows.Scan(&address); err != nil {
			return nil, s.wrap("SentDigests", err)
		}
		sent = append(sent, address)
	}
	return sent, s.wrap("SentDigests", rows.Err())
}

// DigestSent records that d went out at at.
func (s *Store) DigestSent(ctx context.Context, d analytics.DigestSend, at time.Time) error {
	o := ownerOf(d.GroupID, d.DistrictID)
	return s.transact(ctx, "DigestSent", func(tx *txn) error {
		_, err := tx.ExecContext(ctx, s.q(o.sent), millis(at), o.id, d.Week.String(), d.Address)
		return err
	})
}

// DigestFailed records why sending d failed, and when it may be claimed
// again; a zero retryAt: never.
func (s *Store) DigestFailed(ctx context.Context, d analytics.DigestSend, reason string, retryAt time.Time) error {
	retry := int64(math.MaxInt64)
	if !retryAt.IsZero() {
		retry = millis(retryAt)
	}
	o := ownerOf(d.GroupID, d.DistrictID)
	return s.transact(ctx, "DigestFailed", func(tx *txn) error {
		_, err := tx.ExecContext(ctx, s.q(o.failedAt), retry, reason, o.id, d.Week.String(), d.Address)
		return err
	})
}
