package sqlstore

// #include "db_functions.h"
import "C"

import (
	"fmt"

	"groupanalytics/internal/analytics"
)

// registerFunctions gives every SQLite connection opened after it the
// functions by which an upsert adds to a rollup row (db_functions.c).
func registerFunctions() error {
	if rc := C.ga_register_functions(C.int(analytics.NumMetrics)); rc != 0 {
		return fmt.Errorf("sqlite: register the rollups' functions: code %d", rc)
	}
	return nil
}
