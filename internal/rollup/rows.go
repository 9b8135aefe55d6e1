package rollup

import (
	"encoding/binary"
	"slices"
	"strings"

	"groupanalytics/internal/analytics"
)

// MetricColumns are the count columns of the rollup tables, in
// analytics.Metric order.
var MetricColumns = [analytics.NumMetrics]string{"sessions", "tutor_me", "test", "flashcard", "material", "live_lecture", "main"}

// Columns returns pattern for each count column, its name put where
// pattern says {c}, joined by ", ": Columns("sum({c})") is
// "sum(sessions), sum(tutor_me), …".
func Columns(pattern string) string {
	parts := make([]string, len(MetricColumns))
	for i, c := range MetricColumns {
		parts[i] = strings.ReplaceAll(pattern, "{c}", c)
	}
	return strings.Join(parts, ", ")
}

// ScanDest returns the destinations of a row scan that reads lead, then
// every count of c in metric order.
func ScanDest(c *analytics.Counts, lead ...any) []any {
	dest := make([]any, 0, len(lead)+len(c))
	dest = append(dest, lead...)
	for i := range c {
		dest = append(dest, &c[i])
	}
	return dest
}

// EncodeSet stores a student set as little-endian words, without trailing
// empty ones.
func EncodeSet(s analytics.StudentSet) []byte {
	n := len(s)
	for n > 0 && s[n-1] == 0 {
		n--
	}
	b := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(b[8*i:], s[i])
	}
	return b
}

// UnionSets returns the union of two sets that EncodeSet stored, stored
// alike: the words of one ORed into the other's. It is the reference that
// SQLite's union_students (internal/sqlstore/db_functions.c) is tested
// against.
func UnionSets(a, b []byte) []byte {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := slices.Clone(a)
	for i := range b {
		out[i] |= b[i]
	}
	return out
}

// DecodeSet reads what EncodeSet stored.
func DecodeSet(b []byte) analytics.StudentSet {
	s := make(analytics.StudentSet, len(b)/8)
	for i := range s {
		s[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return s
}
