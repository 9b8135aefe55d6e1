package sqlstore

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The arguments of statements that take lists: of ids, and of rows.

// inList returns "IN (SELECT value FROM json_each(?))" for SQLite, "IN
// (SELECT unnest(CAST(? AS pgType[])))" for PostgreSQL, and the argument
// that fills it: the values bound once, however many. Not "IN (?, ?, …)"
// on SQLite: a statement of 1,000 placeholders is parsed again at each
// call, and each value bound by a call through cgo. Not "= ANY(?)" on
// PostgreSQL: a generic plan filters a scan with it, searching the array
// for each row.
func inList[T any](d dialect, values []T, pgType string) (string, []any) {
	list, args := valuesOf(d, values, pgType)
	return "IN (" + list + ")", args
}

// valuesOf returns a query of the values, one a row (column value on
// SQLite), and the argument that fills it: inList's list.
func valuesOf[T any](d dialect, values []T, pgType string) (string, []any) {
	if d.numbered {
		return "SELECT unnest(CAST(? AS " + pgType + "[]))", []any{values}
	}
	b, err := json.Marshal(values)
	if err != nil {
		panic(fmt.Sprintf("sqlstore: a list of %T as JSON: %v", values, err))
	}
	return "SELECT value FROM json_each(?)", []any{string(b)}
}

func anySlice[T any](items []T) []any {
	out := make([]any, len(items))
	for i, v := range items {
		out[i] = v
	}
	return out
}

// placeholders returns "(?, ?, ?), (?, ?, ?)" for rows rows of cols columns.
func placeholders(rows, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
}
