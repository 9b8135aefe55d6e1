package sqlstore

import (
	"context"
	"errors"

	"github.com/pressly/goose/v3"
)

func openPostgres(context.Context, string) (*Store, error) {
	return nil, errors.New("open postgres: not built yet")
}

func (s *Store) migrationLock() goose.ProviderOption { return nil }
