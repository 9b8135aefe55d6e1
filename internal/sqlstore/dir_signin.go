package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"groupanalytics/internal/analytics"
)

// AddProvider adds a school's or a district's sign-in provider; an id
// taken is a Conflict.
func (s *Store) AddProvider(ctx context.Context, p analytics.Provider) error {
	return s.transact(ctx, "AddProvider", func(tx *txn) error {
		if err := s.lockOwner(ctx, tx, p.GroupID, p.DistrictID); err != nil {
			return err
		}
		claims := p.RequiredClaims
		if claims == nil {
			claims = map[string]string{}
		}
		required, err := json.Marshal(claims)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO sign_in_providers (provider_id, name, issuer, client_id, client_secret,
				group_id, district_id, email_domains, match_claim, required_claims, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider_id) DO NOTHING`),
			p.ID, p.Name, p.Issuer, p.ClientID, p.ClientSecret, nullable(p.GroupID), nullable(p.DistrictID),
			strings.Join(p.EmailDomains, " "), p.MatchClaim, string(required), millis(p.Created))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.Conflict, "Sign-in provider %q already exists", p.ID)
		}
		return nil
	})
}

// ProvidersOf returns a school's sign-in providers (groupID) or a
// district's (districtID), by id.
func (s *Store) ProvidersOf(ctx context.Context, groupID, districtID string) ([]analytics.Provider, error) {
	column, owner := ownerColumn(groupID, districtID)
	return s.providers(ctx, "ProvidersOf", `SELECT `+providerColumns+` FROM sign_in_providers WHERE `+column+` = ? ORDER BY provider_id`, owner)
}

// providerColumns are a sign-in provider's columns, as scanProvider reads
// them.
const providerColumns = `provider_id, name, issuer, client_id, client_secret, COALESCE(group_id, ''), COALESCE(district_id, ''),
	email_domains, match_claim, required_claims, created_at`

func scanProvider(row interface{ Scan(...any) error }) (analytics.Provider, error) {
	var p analytics.Provider
	var domains, required string
	var created int64
	if err := row.Scan(&p.ID, &p.Name, &p.Issuer, &p.ClientID, &p.ClientSecret, &p.GroupID, &p.DistrictID, &domains, &p.MatchClaim,
		&required, &created); err != nil {
		return p, err
	}
	p.EmailDomains, p.Created = strings.Fields(domains), fromMillis(created)
	return p, json.Unmarshal([]byte(required), &p.RequiredClaims)
}

// Provider returns one sign-in provider, or answers NotFound.
func (s *Store) Provider(ctx context.Context, providerID string) (analytics.Provider, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	p, err := scanProvider(s.read.QueryRowContext(ctx, s.q(`SELECT `+providerColumns+` FROM sign_in_providers WHERE provider_id = ?`), providerID))
	if errors.Is(err, sql.ErrNoRows) {
		return p, analytics.Errorf(analytics.NotFound, "Sign-in provider %q not found", providerID)
	}
	return p, s.wrap("Provider", err)
}

// Providers returns every sign-in provider, by id.
func (s *Store) Providers(ctx context.Context) ([]analytics.Provider, error) {
	return s.providers(ctx, "Providers", `SELECT `+providerColumns+` FROM sign_in_providers ORDER BY provider_id`)
}

// providers runs query, which selects providerColumns.
func (s *Store) providers(ctx context.Context, op, query string, args ...any) ([]analytics.Provider, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var providers []analytics.Provider
	for rows.Next() {
		p, err := scanProvider(rows)
		if err != nil {
			return nil, s.wrap(op, err)
		}
		providers = append(providers, p)
	}
	return providers, s.wrap(op, rows.Err())
}

// RemoveProvider takes a sign-in provider away, or answers NotFound.
func (s *Store) RemoveProvider(ctx context.Context, providerID string) error {
	return s.transact(ctx, "RemoveProvider", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM sign_in_providers WHERE provider_id = ?`), providerID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return analytics.Errorf(analytics.NotFound, "Sign-in provider %q not found", providerID)
		}
		return nil
	})
}
