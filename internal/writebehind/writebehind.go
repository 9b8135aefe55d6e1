// Package writebehind is the contract between a usage store on ClickHouse
// (package chstore) and the directory that coordinates it (package
// sqlstore on PostgreSQL): the groups' locks, the write-behind log of
// events acknowledged and not yet in ClickHouse, and where each group's
// usage lives. Neither store knows the other; both know this.
package writebehind

import (
	"context"
	"time"

	"groupanalytics/internal/analytics"
)

// Coordinator is what a usage store on ClickHouse needs of the directory's
// database, which stands in for the unique keys and transactions
// ClickHouse lacks: the groups' locks, their enrolment, the log, and where
// each group's usage lives.
type Coordinator interface {
	// WithGroupLock runs fn in one directory transaction holding the
	// group's write lock, committed when fn returns nil and rolled back
	// otherwise (and when the process dies). It is not retried.
	WithGroupLock(ctx context.Context, groupID string, fn func(tx GroupLock) error) error
	// WithGroupsLock runs fn in one directory transaction holding locks
	// of the groups as mode says, committed when fn returns nil. An apply
	// lock lets one applier of a group at a time, excluded by the group's
	// write lock, not by its log's writers.
	WithGroupsLock(ctx context.Context, groupIDs []string, mode LockMode, fn func(tx GroupsLock) error) error
	// WithGroupsLogging runs fn in one directory transaction holding the
	// log locks of those of the groups that no write lock holds
	// (committed when fn returns nil): shared by the log's writers and
	// appliers, excluded by the write lock. The others that exist are
	// busy.
	WithGroupsLogging(ctx context.Context, groupIDs []string, fn func(tx LogLock) error) error
	// LoggedGroups returns the groups with events in the write-behind
	// log, those waiting longest first, up to limit; LoggedPlacement
	// whether a group has any and, read at the same moment, its
	// placement; LogStats how many events the log holds and when the
	// oldest was logged (zero when none is).
	LoggedGroups(ctx context.Context, limit int) ([]string, error)
	LoggedPlacement(ctx context.Context, groupID string) (logged bool, p Placement, placed bool, err error)
	// LoggedPlacements is LoggedPlacement of several groups at once: those
	// with events in the log, and the placements of those placed.
	LoggedPlacements(ctx context.Context, groupIDs []string) (logged []string, placements []Placement, err error)
	LogStats(ctx context.Context) (events int, oldest time.Time, err error)
	// VacuumLog clears the log's table of the rows taken out of it.
	VacuumLog(ctx context.Context) error
	// LeadApplier reports whether this process leads the log's appliers
	// (one process at a time does), trying to become the leader when none
	// is.
	LeadApplier(ctx context.Context) (bool, error)
	// Placement returns the group's placement; ok is false when it has
	// none (it holds no usage yet).
	Placement(ctx context.Context, groupID string) (p Placement, ok bool, err error)
	// Placements returns every group's placement.
	Placements(ctx context.Context) ([]Placement, error)
}

// Pending is a group's log as LogLock.Pending read it.
type Pending struct {
	Placement Placement
	Placed    bool // the group has a placement
	Zone      string
	Events    []analytics.Event
}

// LockMode says how WithGroupsLock locks groups.
type LockMode int

const (
	// SkipHeld takes the apply locks of those of the groups that no other
	// transaction holds; the others that exist are busy, for another try.
	SkipHeld LockMode = iota
	// WaitApply waits for the apply lock of one group.
	WaitApply
	// WaitWrite waits for the write lock of one group, which excludes the
	// log's writers too.
	WaitWrite
)

// GroupsLock is a directory transaction holding several groups' locks.
type GroupsLock interface {
	// Locked are the groups locked, in id order, sharing the
	// transaction: use them one at a time.
	Locked() []GroupLock
	// Gone are the groups asked for that do not exist.
	Gone() []string
	// Placements reads the placements of the locked groups that have one.
	Placements(ctx context.Context) (map[string]Placement, error)
	// Place is Place of several of the locked groups, at once.
	Place(ctx context.Context, shards map[string]string) (map[string]Placement, error)
	// MarkIntents is MarkIntent of several of the locked groups, at once.
	MarkIntents(ctx context.Context, intents map[string][]byte) (seqs map[string]int64, err error)
	// SaveStudents is SaveStudents of several of the locked groups
	// (updates by group), with the transaction.
	SaveStudents(ctx context.Context, updates map[string][]analytics.StudentUpdate) error
	// ClearIntents is ClearIntent of several of the locked groups, with
	// the transaction.
	ClearIntents(ctx context.Context, groupIDs []string) error
	// Logged reads the log's events of the locked groups, up to limit in
	// all, oldest first; Unlog takes those of groupIDs out of the log,
	// with the transaction.
	Logged(ctx context.Context, limit int) (map[string][]analytics.Event, error)
	Unlog(ctx context.Context, groupIDs []string) error
}

// LogLock is a directory transaction holding several groups' log locks:
// the write-behind log's writer.
type LogLock interface {
	// Locked are the groups locked, in id order; Gone those asked for
	// that do not exist.
	Locked() []string
	Gone() []string
	// Pending reads a locked group's placement, zone and the events the
	// log holds of it (at most limit, oldest first), as of one moment:
	// what a read adds to the group's applied rows while they cannot be
	// written. SaveStudents enrols and names students of locked groups
	// (by group), with the transaction, as an apply would.
	Pending(ctx context.Context, groupID string, limit int) (Pending, error)
	SaveStudents(ctx context.Context, updates map[string][]analytics.StudentUpdate) error
	// Placements reads the placements of the locked groups that have one.
	Placements(ctx context.Context) (map[string]Placement, error)
	// Log adds the events, of locked groups, to the log at time at, in
	// their order, and returns those it added (by group and id): the log
	// holds the others already.
	Log(ctx context.Context, events []analytics.Event, at time.Time) (map[string]map[string]bool, error)
	// Unlog takes out the events of these ids, by group, that the
	// transaction added.
	Unlog(ctx context.Context, ids map[string][]string) error
}

// GroupLock is a directory transaction holding one group's write lock.
// While it lasts, the directory is read through it only: other writers of
// the group wait for the lock holding connections of their own.
type GroupLock interface {
	// GroupID is the group whose lock it holds.
	GroupID() string
	// Placement reads the group's placement.
	Placement(ctx context.Context) (p Placement, ok bool, err error)
	// GroupsPerShard counts the groups placed on each shard.
	GroupsPerShard(ctx context.Context) (map[string]int, error)
	// Location returns the group's time zone, as the lock read it: it
	// changes only under the lock.
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
	SaveStudents(ctx context.Context, updates []analytics.StudentUpdate) error
	// DeleteStudent returns what it removed: nothing, when the student
	// was neither enrolled nor logged.
	DeleteStudent(ctx context.Context, studentID string) ([]analytics.Deleted, error)
	// AddReceipt writes a deletion receipt with the transaction: an
	// erasure finished by a repair has no caller left to write it.
	AddReceipt(ctx context.Context, r analytics.Receipt) error
	ClearIntent(ctx context.Context) error
	// DeleteGroup deletes the group and all the directory holds of it,
	// with the transaction, and returns what it removed.
	DeleteGroup(ctx context.Context) ([]analytics.Deleted, error)
	// SetTimeZone changes the group's time zone, with the transaction.
	SetTimeZone(ctx context.Context, zone string) error
	// ExpireBefore records first as the group's retention cut and takes
	// the log's events from before the instant before out of it, with the
	// transaction, returning what it removed; claimed is false, and
	// nothing done, when a cut at first or later was recorded already.
	ExpireBefore(ctx context.Context, first analytics.Day, before time.Time) (claimed bool, deleted []analytics.Deleted, err error)
}

// Placement says which shard holds a group's usage, and what the group's
// last write left behind.
type Placement struct {
	GroupID string
	Shard   string // the shard's name (its address)
	// Seq numbers the group's writes: each write of the group's usage
	// takes the next one, so that later rows outrank earlier ones.
	Seq int64
	// Intent is what the write in progress (or one that died) means to
	// do, set before it writes and cleared when it commits; nil when no
	// write is unfinished. The store reads it back to finish or repair
	// the write.
	Intent []byte
	// Epoch tells a group from one deleted before it under the same id
	// (it is drawn when the group is first placed): their writes are
	// numbered apart, so a state kept of one never stands for the other.
	Epoch int64
}
