package sqlstore

import (
	"context"
	"strings"

	"groupanalytics/internal/analytics"
)

// AddProvider adds a school's or a district's sign-in provider; an id
// taken is a Conflict.
func (s *Store) AddProvider(ctx context.Context, p analytics.Provider) error {
	return s.transact(ctx, "AddProvider", func(tx *txn) error {
		if p.DistrictID != "" {
			if err := s.lockDistrict(ctx, tx, p.DistrictID); err != nil {
				return err
			}
		} else if err := s.lockGroup(ctx, tx, p.GroupID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO sign_in_providers (provider_id, name, issuer, client_id, client_secret,
				group_id, district_id, email_domains, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider_id) DO NOTHING`),
			p.ID, p.Name, p.Issuer, p.ClientID, p.ClientSecret, nullable(p.GroupID), nullable(p.DistrictID),
			strings.Join(p.EmailDomains, " "), millis(p.Created))
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
	ctx, cancel := s.bound(ctx)
	defer cancel()
	column, owner := ownerColumn(groupID, districtID)
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT provider_id, name, issuer, client_id, client_secret, COALESCE(group_id, ''),
		COALESCE(district_id, ''), email_domains, created_at FROM sign_in_providers WHERE `+column+` = ? ORDER BY provider_id`), owner)
	if err != nil {
		return nil, s.wrap("ProvidersOf", err)
	}
	defer rows.Close()
	var providers []analytics.Provider
	for rows.Next() {
		var p analytics.Provider
		var domains string
		var created int64
		if err := rows.Scan(&p.ID, &p.Name, &p.Issuer, &p.ClientID, &p.ClientSecret, &p.GroupID, &p.DistrictID, &domains, &created); err != nil {
			return nil, s.wrap("ProvidersOf", err)
		}
		p.EmailDomains, p.Created = strings.Fields(domains), fromMillis(created)
		providers = append(providers, p)
	}
	return providers, s.wrap("ProvidersOf", rows.Err())
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
