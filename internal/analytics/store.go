package analytics

import (
	"context"
	"time"
)

// Directory holds who may ask what: groups, their plans and keys, their
// students, and the platform's tokens. It is small, relational and
// transactional. Every method that touches a group's data takes its id.
type Directory interface {
	CreateGroup(ctx context.Context, g Group) error
	Group(ctx context.Context, groupID string) (Group, error)
	Groups(ctx context.Context) ([]Group, error)

	AddPlan(ctx context.Context, p Plan) (Plan, error)
	CancelPlan(ctx context.Context, groupID string, planID int64, at time.Time) (Plan, error)
	Plans(ctx context.Context, groupID string) ([]Plan, error)

	AddKey(ctx context.Context, k APIKey) error
	Keys(ctx context.Context, groupID string) ([]APIKey, error)
	RevokeKey(ctx context.Context, groupID, keyID string, at time.Time) error
	// Authorize returns the group of the key with this hash when the key is
	// not revoked and its group has a plan valid at now, and an Unauthorized
	// error otherwise. It does the same work whichever the cause, so that
	// the time taken does not tell one cause from another.
	Authorize(ctx context.Context, keyHash []byte, now time.Time) (Group, error)

	// SaveStudents enrols the students not yet in the group and renames
	// those whose update carries a name, in one transaction: a bulk
	// enrolment. Ingestion enrols through UsageStore.AppendEvents instead.
	SaveStudents(ctx context.Context, groupID string, updates []StudentUpdate) error
	AddStudent(ctx context.Context, s Student) error
	RenameStudent(ctx context.Context, s Student) error
	Students(ctx context.Context, groupID string) ([]Student, error)

	AddToken(ctx context.Context, t PlatformToken) error
	Tokens(ctx context.Context) ([]PlatformToken, error)
	RevokeToken(ctx context.Context, tokenID string, at time.Time) error
	// AuthorizeToken returns the unrevoked token with this hash, or an
	// Unauthenticated error.
	AuthorizeToken(ctx context.Context, tokenHash []byte) (PlatformToken, error)
}

// StudentUpdate enrols a student, or renames one when Name is set.
type StudentUpdate struct {
	ID   string
	Name string // empty: keep the current name (a new student is named by id)
}

// UsageStore holds usage events and the rollups that reports read. It is
// large and append-mostly; every method is scoped to one group except
// AppendEvents, which takes a batch that may span groups.
//
// The per-group write discipline: the writes of a group's usage
// (AppendEvents, EraseStudent, Rebuild) each hold that group's write lock,
// taken through the directory's database, so that they take turns per
// group in every process and on every engine. They keep the directory's
// students in step with the events: the students of stored events are
// enrolled with them, and an erased student's enrolment goes with their
// usage, atomically. Reads take no lock and see whole writes only.
type UsageStore interface {
	// AppendEvents stores the events whose ids are new to their group,
	// enrols the students of those events that the group lacks (named by
	// id until a name arrives) and applies the names they carry, the last
	// one sent winning, and updates the rollups, all at once. An event
	// whose id is already stored (or comes twice) is a duplicate and
	// changes nothing. When it returns nil the events are durable and
	// visible to the next read.
	AppendEvents(ctx context.Context, events []Event) (AppendResult, error)
	// GroupRollups returns the group's rollups of seg's span whose keys lie
	// in seg, ascending; periods without usage have no row.
	GroupRollups(ctx context.Context, groupID string, seg Segment) ([]GroupRollup, error)
	// StudentTotals adds each student's counts over the rollups of seg to
	// totals, creating entries as needed.
	StudentTotals(ctx context.Context, groupID string, seg Segment, totals map[string]*Counts) error
	// EraseStudent removes a student's enrolment, events and share of every
	// rollup at once: when it returns, no read counts anything of theirs.
	// It answers NotFound for a student the group neither has nor holds
	// usage of.
	EraseStudent(ctx context.Context, groupID, studentID string) error
	// Rebuild recomputes the group's rollups from its raw events, cutting
	// days in loc.
	Rebuild(ctx context.Context, groupID string, loc *time.Location) error
}

// WriteObserver is told what a usage store's writer does, for the
// operators' metrics.
type WriteObserver interface {
	// Merged: a write merged calls (batches) holding events.
	Merged(calls, events int)
	// Retried: op is tried again after a deadlock or serialization failure.
	Retried(op string)
}

// Placement says which shard of a sharded usage store holds a group's
// usage, and what the group's last write left behind.
type Placement struct {
	GroupID string
	Shard   string // the shard's name (its address)
	// Seq numbers the group's writes: each write of the group's usage
	// takes the next one, so that later rows outrank earlier ones.
	Seq int64
	// Intent is what the write in progress (or one that died) means to
	// do, set before it writes and cleared when it commits; nil when no
	// write is unfinished. The usage store reads it back to finish or
	// repair the write.
	Intent []byte
}

// UsageLocks is the directory's part of the per-group write discipline for
// a usage store that keeps events in another database (ClickHouse): the
// groups' write locks, their enrolment, and where each group's usage lives.
type UsageLocks interface {
	// WithGroupLock runs fn in one directory transaction holding the
	// group's write lock, committed when fn returns nil and rolled back
	// otherwise (and when the process dies). It is not retried.
	WithGroupLock(ctx context.Context, groupID string, fn func(tx GroupLock) error) error
	// Placement returns the group's placement; ok is false when it has
	// none (it holds no usage yet).
	Placement(ctx context.Context, groupID string) (p Placement, ok bool, err error)
	// Placements returns every group's placement.
	Placements(ctx context.Context) ([]Placement, error)
}

// GroupLock is a directory transaction holding one group's write lock.
// While it lasts, the directory is read through it only: other writers of
// the group wait for the lock holding connections of their own.
type GroupLock interface {
	// Placement reads the group's placement.
	Placement(ctx context.Context) (p Placement, ok bool, err error)
	// GroupsPerShard counts the groups placed on each shard.
	GroupsPerShard(ctx context.Context) (map[string]int, error)
	// Location returns the group's time zone.
	Location(ctx context.Context) (*time.Location, error)
	// Place records the group on shard, placing or moving it (committed
	// at once, so that it stands whatever becomes of the transaction),
	// and returns the placement.
	Place(ctx context.Context, shard string) (Placement, error)
	// MarkIntent records intent and takes the group's next write number,
	// committed at once: if the write dies, the intent stays.
	MarkIntent(ctx context.Context, intent []byte) (seq int64, err error)
	// Commit-time changes, applied with the transaction: enrolment, an
	// erased student's removal, the end of the intent. ClearIntent comes
	// last: after it, MarkIntent would wait for the transaction.
	SaveStudents(ctx context.Context, updates []StudentUpdate) error
	DeleteStudent(ctx context.Context, studentID string) (bool, error)
	ClearIntent(ctx context.Context) error
}
