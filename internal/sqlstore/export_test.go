package sqlstore

import (
	"context"
	"strconv"
)

// RowsKept reports whether the group's rollup rows are kept, and current.
func (s *Store) RowsKept(ctx context.Context, groupID string) bool {
	versions, err := s.rowsVersions(ctx, []string{groupID})
	if err != nil {
		return false
	}
	_, ok := s.kept.rows.Get(groupID, versions[groupID])
	return ok
}

// DistrictKept reports whether the district's schools are kept, and
// current.
func (s *Store) DistrictKept(ctx context.Context, districtID string) bool {
	var version int64
	if err := s.read.QueryRowContext(ctx, s.q(`SELECT COALESCE((SELECT version FROM district_versions WHERE district_id = ?), 0)`), districtID).Scan(&version); err != nil {
		return false
	}
	_, ok := s.keptDistricts.Get(districtID, strconv.FormatInt(version, 10))
	return ok
}
