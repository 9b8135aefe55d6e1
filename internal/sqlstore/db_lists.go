package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"
)

// Statements over lists: of ids, and of rows, in as few statements as each
// database allows.

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

// insertRows runs "INSERT INTO <into> <rows> <suffix>" over rows whose
// columns have the given SQL types, in as few statements as the database
// allows (eachRowSource). With scan set, the statement's RETURNING rows go
// to scan.
func (s *Store) insertRows(ctx context.Context, tx *txn, into string, types []string, rows [][]any, suffix string,
	scan func(*sql.Rows) error) error {
	return s.eachRowSource(types, rows, func(source string, args []any) error {
		return s.query(ctx, tx, "INSERT INTO "+into+" "+source+" "+suffix, args, scan)
	})
}

// selectKeyed runs query, which reads its keys from a table k with columns
// k1, k2, … of the given SQL types, for the rows of keys, in as few
// statements as the database allows, and passes every row it returns to
// scan: one statement for the rows of many groups, rather than one each.
func (s *Store) selectKeyed(ctx context.Context, tx *txn, query string, types []string, keys [][]any, scan func(*sql.Rows) error) error {
	names := make([]string, len(types))
	for i := range names {
		names[i] = fmt.Sprintf("k%d", i+1)
	}
	return s.eachRowSource(types, keys, func(source string, args []any) error {
		return s.query(ctx, tx, "WITH k("+strings.Join(names, ", ")+") AS ("+source+") "+query, args, scan)
	})
}

// eachRowSource passes rows whose columns have the given SQL types to run
// as the source of a statement, "SELECT …" or "VALUES …", with its
// arguments: PostgreSQL takes one array per column and unnests them, in
// one statement; SQLite takes multi-row VALUES, in statements of a few
// sizes (below).
func (s *Store) eachRowSource(types []string, rows [][]any, run func(source string, args []any) error) error {
	if len(rows) == 0 {
		return nil
	}
	if s.dialect.numbered {
		casts := make([]string, len(types))
		args := make([]any, len(types))
		for c, typ := range types {
			casts[c] = "CAST(? AS " + typ + "[])"
			args[c] = column(rows, c, typ)
		}
		return run("SELECT * FROM unnest("+strings.Join(casts, ", ")+")", args)
	}
	// SQLite parses and plans a statement of n rows anew for each n it
	// has not prepared yet. So rows go in chunks of powers of two, the
	// largest that fits first: a statement comes in a few sizes, each kept
	// prepared in the connection's statement cache.
	limit := min(s.dialect.maxParams/len(types), maxChunkRows)
	for len(rows) > 0 {
		n := 1 << (bits.Len(uint(min(len(rows), limit))) - 1)
		chunk := rows[:n]
		rows = rows[n:]
		args := make([]any, 0, len(chunk)*len(types))
		for _, row := range chunk {
			args = append(args, row...)
		}
		if err := run("VALUES "+placeholders(len(chunk), len(types)), args); err != nil {
			return err
		}
	}
	return nil
}

// maxChunkRows is the most rows a SQLite statement of eachRowSource
// takes, which bounds what its prepared statement holds in the cache.
const maxChunkRows = 4096

// column gathers column c of rows as a typed slice, for a PostgreSQL array.
func column(rows [][]any, c int, typ string) any {
	switch typ {
	case "text":
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r[c].(string)
		}
		return out
	case "bytea":
		out := make([][]byte, len(rows))
		for i, r := range rows {
			out[i] = r[c].([]byte)
		}
		return out
	}
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = toInt64(r[c])
	}
	return out
}

func toInt64(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int16:
		return int64(v)
	case int64:
		return v
	}
	panic(fmt.Sprintf("sqlstore: %T is not an integer column", v))
}
