package analytics

import (
	"context"
	"time"
)

// Deleted is what a deletion removed from one table of one store: rows,
// or, for rollups that keep other students' counts, rows rewritten
// without the student's share.
type Deleted struct {
	Store string // "sqlite", "postgres" or "clickhouse"
	Table string
	Rows  int64
}

// The actions a receipt records.
const (
	ActionStudentErased = "student erased"
	ActionGroupDeleted  = "group deleted"
	ActionUsageExpired  = "usage expired"
)

// Receipt records a deletion once done: what, whose, at whose request,
// when it began and finished, and what it removed from each store. It is
// kept after the data is gone, and names no student but by id.
type Receipt struct {
	ID        int64
	GroupID   string
	StudentID string // the student erased; empty for a group
	// KeptFrom is a retention run's cut: the usage of the days before it
	// went. Zero for other deletions.
	KeptFrom    Day
	Action      string
	RequestedBy string // "token <id> (<label>)" or "command line"
	Began       time.Time
	Finished    time.Time
	Deleted     []Deleted
}

type requesterKey struct{}

// WithRequester returns ctx carrying who asks for what is done with it:
// a deletion's receipt names them.
func WithRequester(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, requesterKey{}, who)
}

// RequesterOf returns who asks, as WithRequester set it ("unknown" if not).
func RequesterOf(ctx context.Context) string {
	if who, ok := ctx.Value(requesterKey{}).(string); ok {
		return who
	}
	return "unknown"
}
