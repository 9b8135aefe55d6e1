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
	RenameGroup(ctx context.Context, groupID, name string) error
	SetMinCellSize(ctx context.Context, groupID string, size int) error
	// SetInactiveAfter sets the group's inactiveAfter (Group.InactiveAfter).
	SetInactiveAfter(ctx context.Context, groupID string, days int) error
	// SetRetention sets how many days of usage the group keeps (0: all).
	SetRetention(ctx context.Context, groupID string, days Days) error

	AddPlan(ctx context.Context, p Plan) (Plan, error)
	CancelPlan(ctx context.Context, groupID string, planID int64, at time.Time) (Plan, error)
	Plans(ctx context.Context, groupID string) ([]Plan, error)

	// AddKey stores a key; a teacher's key's classes must be the group's
	// (an Invalid error names one that is not).
	AddKey(ctx context.Context, k APIKey) error
	Keys(ctx context.Context, groupID string) ([]APIKey, error)
	RevokeKey(ctx context.Context, groupID, keyID string, at time.Time) error
	// Authorize returns what the key with this hash (a school's or a
	// district's) opens when the key is not revoked and its group (for a
	// district's key, one of the district's schools) has a plan valid at
	// now, and an Unauthorized error otherwise. A refusal costs the same
	// work whatever its cause; callers that answer strangers also send
	// every refusal at a deadline, so that no difference of time shows.
	Authorize(ctx context.Context, keyHash []byte, now time.Time) (Access, error)

	// SaveStudents enrols the students not yet in the group and renames
	// those whose update carries a name, in one transaction: a bulk
	// enrolment. Ingestion enrols through UsageStore.AppendEvents instead.
	SaveStudents(ctx context.Context, groupID string, updates []StudentUpdate) error
	AddStudent(ctx context.Context, s Student) error
	RenameStudent(ctx context.Context, s Student) error
	Students(ctx context.Context, groupID string) ([]Student, error)
	// RosterVersion changes whenever the group's students, their
	// ordinals, its classes or their members change, in any process, and
	// when the group is made again after its deletion: what was read of
	// them under one version holds while it is current. NotFound for a
	// group that does not exist.
	RosterVersion(ctx context.Context, groupID string) (string, error)

	// A group's classes: CreateClass (Conflict for an id the group has
	// already), UpdateClass (its name and term), DeleteClass, and
	// SetClassMembers, which makes the class's members exactly these
	// students, all of them enrolled in the group (an Invalid error names
	// one that is not). Class and Classes return them with their members;
	// NotFound for a class the group does not have. Erasing a student or
	// the group takes their memberships with them.
	CreateClass(ctx context.Context, c Class) error
	UpdateClass(ctx context.Context, c Class) error
	DeleteClass(ctx context.Context, groupID, classID string) error
	SetClassMembers(ctx context.Context, groupID, classID string, studentIDs []string) error
	Class(ctx context.Context, groupID, classID string) (Class, error)
	Classes(ctx context.Context, groupID string) ([]Class, error)
	// ApplyRoster makes a roster import's changes in one transaction: all
	// of them or, failing, none.
	ApplyRoster(ctx context.Context, groupID string, c RosterChange) error
	// ApplyDistrictRoster makes a district's roster import in one
	// transaction: the schools that are New made, every school put in
	// the district (a Conflict for one in another district), and each
	// school's change applied, and the district's own staff's; all of it
	// or, failing, none.
	ApplyDistrictRoster(ctx context.Context, districtID string, schools []SchoolRoster, staff StaffChange) error

	// Staff, a school's or a district's: AddStaff adds a member (a
	// Conflict for an email already one of the same school's or
	// district's staff; a teacher's classes must be the school's),
	// StaffOf lists a school's (groupID) or a district's (districtID) by
	// email, RemoveStaff takes a member away by id (NotFound for none).
	AddStaff(ctx context.Context, s Staff) error
	StaffOf(ctx context.Context, groupID, districtID string) ([]Staff, error)
	RemoveStaff(ctx context.Context, staffID string) error

	// Sign-in providers, a school's or a district's: AddProvider adds
	// one (a Conflict for an id taken), ProvidersOf lists a school's
	// (groupID) or a district's (districtID) by id, RemoveProvider takes
	// one away (NotFound for none).
	AddProvider(ctx context.Context, p Provider) error
	ProvidersOf(ctx context.Context, groupID, districtID string) ([]Provider, error)
	RemoveProvider(ctx context.Context, providerID string) error
	// Provider returns one sign-in provider (NotFound for none); with
	// Providers, every provider, by id.
	Provider(ctx context.Context, providerID string) (Provider, error)
	Providers(ctx context.Context) ([]Provider, error)
	// StaffOfProvider returns the staff whom p may sign in with this
	// email, or with this roster id when it is given (Provider.MatchClaim):
	// a school's provider its staff, a district's its own and its
	// schools' staff.
	StaffOfProvider(ctx context.Context, p Provider, email, sourcedID string) ([]Staff, error)

	// Sign-in: StartSignIn keeps an attempt (and forgets those older
	// than maxAge); TakeSignIn returns the attempt of this state hash
	// and forgets it, once: a second take, or one after maxAge, is
	// NotFound.
	StartSignIn(ctx context.Context, a SignInAttempt, maxAge time.Duration) error
	TakeSignIn(ctx context.Context, stateHash []byte, now time.Time, maxAge time.Duration) (SignInAttempt, error)
	// Sessions: OpenSession keeps one (and forgets those ended);
	// Session returns the one of this token hash, its staff member as
	// now, and notes that it was seen at now (at most once a minute), or
	// answers Unauthorized for one that ended or never was; CloseSession
	// ends one. Removing a staff member or a provider ends their
	// sessions.
	OpenSession(ctx context.Context, s Session) error
	Session(ctx context.Context, tokenHash []byte, now time.Time) (Session, error)
	CloseSession(ctx context.Context, tokenHash []byte) error

	// LTI platforms, a school's or a district's: AddLTIPlatform
	// (Conflict for an id, or an issuer and client id, taken),
	// LTIPlatformsOf lists them by id, LTIPlatform returns one,
	// LTIPlatformOf the one of an issuer and client id (the issuer's only
	// one when clientID is empty), RemoveLTIPlatform takes one away with
	// its logins and sessions. NotFound for one that is not.
	AddLTIPlatform(ctx context.Context, p LTIPlatform) error
	LTIPlatformsOf(ctx context.Context, groupID, districtID string) ([]LTIPlatform, error)
	LTIPlatform(ctx context.Context, platformID string) (LTIPlatform, error)
	LTIPlatformOf(ctx context.Context, issuer, clientID string) (LTIPlatform, error)
	RemoveLTIPlatform(ctx context.Context, platformID string) error
	// A launch's login, kept and taken once as a sign-in's attempt is;
	// UseLTINonce records a launch's nonce, until expires, or answers
	// Conflict for one used before.
	StartLTILogin(ctx context.Context, l LTILogin, maxAge time.Duration) error
	TakeLTILogin(ctx context.Context, stateHash []byte, now time.Time, maxAge time.Duration) (LTILogin, error)
	UseLTINonce(ctx context.Context, platformID, nonce string, now, expires time.Time) error
	// A launch's session: OpenLTISession keeps one (and forgets those
	// ended); LTISession returns the one of this token hash and notes it
	// seen, or answers Unauthorized for one ended or never opened.
	OpenLTISession(ctx context.Context, s LTISession) error
	LTISession(ctx context.Context, tokenHash []byte, now time.Time) (LTISession, error)
	// Invitations to register by LTI Dynamic Registration:
	// AddLTIRegistration keeps one (and forgets those expired),
	// LTIRegistration returns the one of a token hash while it may be
	// used, TakeLTIRegistration returns it and forgets it, once. Either
	// answers NotFound for one unknown, taken or expired.
	AddLTIRegistration(ctx context.Context, r LTIRegistration) error
	LTIRegistration(ctx context.Context, tokenHash []byte, now time.Time) (LTIRegistration, error)
	TakeLTIRegistration(ctx context.Context, tokenHash []byte, now time.Time) (LTIRegistration, error)
	// The tool's keys, newest first; AddLTIToolKey keeps a new one.
	LTIToolKeys(ctx context.Context) ([]LTIToolKey, error)
	AddLTIToolKey(ctx context.Context, k LTIToolKey) error

	// The weekly digest's recipients, a group's or a district's
	// (Conflict for an address already one, NotFound for one that is
	// not), and the record of the digests sent. Recipients lists every
	// group's when groupID is empty, DistrictRecipients every district's
	// when districtID is.
	AddRecipient(ctx context.Context, r Recipient) error
	Recipients(ctx context.Context, groupID string) ([]Recipient, error)
	DistrictRecipients(ctx context.Context, districtID string) ([]Recipient, error)
	RemoveRecipient(ctx context.Context, r Recipient) error
	// Unsubscribe removes the recipient whose token this is and returns
	// it, or answers NotFound.
	Unsubscribe(ctx context.Context, token string) (Recipient, error)
	// ClaimDigest records that d is being sent, until lease, and reports
	// whether this caller is to send it: it is not sent, no other claim
	// on it is current, and it was tried fewer than maxAttempts times.
	// Of callers racing, in any processes, one at most wins.
	ClaimDigest(ctx context.Context, d DigestSend, now, lease time.Time, maxAttempts int) (bool, error)
	// SentDigests returns the addresses d's digest (its group's or
	// district's, of its week; its address aside) was sent to: a read, so
	// that a round finding everything sent writes nothing.
	SentDigests(ctx context.Context, d DigestSend) ([]string, error)
	// DigestSent records d as sent; DigestFailed records why it failed
	// and when it may be claimed again (zero: never).
	DigestSent(ctx context.Context, d DigestSend, at time.Time) error
	DigestFailed(ctx context.Context, d DigestSend, reason string, retryAt time.Time) error

	// The words that students stopped, to a class's recipients:
	// ClaimStops records that stops are being told to a.Address until
	// lease, and returns those this caller is to tell: neither told
	// already nor claimed by another caller whose lease is current (of
	// callers racing, in any processes, one at most gets each).
	// StopsTold records them as told at at, or given up for failure;
	// ReleaseStops lets them be claimed again from retryAt. A student's
	// erasure, and their class's deletion, take theirs.
	ClaimStops(ctx context.Context, a StopAlert, stops []Stop, now, lease time.Time) ([]Stop, error)
	StopsTold(ctx context.Context, a StopAlert, stops []Stop, at time.Time, failure string) error
	ReleaseStops(ctx context.Context, a StopAlert, stops []Stop, retryAt time.Time) error

	// The access log: RecordAccess adds an entry (its ID and key's prefix
	// and label are the store's); AccessLog lists a group's, as f picks;
	// PruneAccessLog deletes every group's entries from before a time and
	// returns how many.
	RecordAccess(ctx context.Context, e AccessEntry) error
	AccessLog(ctx context.Context, groupID string, f AccessFilter) ([]AccessEntry, error)
	PruneAccessLog(ctx context.Context, before time.Time) (int64, error)

	// Deletion receipts: AddReceipt records one (its ID is the store's);
	// Receipts lists a group's, or every group's when groupID is empty,
	// newest first. They outlive their group.
	AddReceipt(ctx context.Context, r Receipt) error
	Receipts(ctx context.Context, groupID string) ([]Receipt, error)

	// Districts: CreateDistrict (Conflict for an id taken), District and
	// Districts (with their schools), RenameDistrict, DeleteDistrict
	// (which leaves its schools and takes its keys), AttachSchool (a
	// Conflict for a school in another district; attaching it again to
	// its own does nothing) and DetachSchool (NotFound for a school not
	// in it). A district's keys: AddDistrictKey, DistrictKeys and
	// RevokeDistrictKey, as a school's; Authorize answers for them too.
	CreateDistrict(ctx context.Context, d District) error
	District(ctx context.Context, districtID string) (District, error)
	Districts(ctx context.Context) ([]District, error)
	RenameDistrict(ctx context.Context, districtID, name string) error
	DeleteDistrict(ctx context.Context, districtID string) error
	// DistrictAccess returns what the district's key opens at now, as
	// Authorize does: its schools, those with a valid plan apart.
	DistrictAccess(ctx context.Context, districtID string, now time.Time) (*DistrictAccess, error)
	AttachSchool(ctx context.Context, districtID, groupID string) error
	DetachSchool(ctx context.Context, districtID, groupID string) error
	// Enrolment returns the size of each of the groups at now: its
	// students, and its valid plans' seats.
	Enrolment(ctx context.Context, groupIDs []string, now time.Time) (map[string]Enrolment, error)
	AddDistrictKey(ctx context.Context, k APIKey) error
	DistrictKeys(ctx context.Context, districtID string) ([]APIKey, error)
	RevokeDistrictKey(ctx context.Context, districtID, keyID string, at time.Time) error

	// Warehouses, a school's or a district's: AddWarehouse (Conflict for
	// an id taken), WarehousesOf lists a school's (groupID), a district's
	// (districtID) or, both empty, every one, by id; Warehouse returns one
	// (NotFound for none); RemoveWarehouse takes one away with its days.
	AddWarehouse(ctx context.Context, w Warehouse) error
	WarehousesOf(ctx context.Context, groupID, districtID string) ([]Warehouse, error)
	Warehouse(ctx context.Context, warehouseID string) (Warehouse, error)
	RemoveWarehouse(ctx context.Context, warehouseID string) error
	// A warehouse's deliveries: QueueWarehouseDays makes days due for
	// their reason (a backfill, an erasure) at at; DeliveredWarehouseDays
	// returns, of every warehouse, the group's days among days delivered
	// before. ClaimWarehouse takes the warehouse's next run until lease,
	// when no other claim is current and its retry time has passed (of
	// callers racing, in any processes, one at most); WarehouseState reads
	// the first limit of its days queued (by school and day) and how many
	// there are, its schools' last days the schedule delivered and how its
	// last run ended; WarehouseRan records the end of a run begun at
	// started: the days delivered, and those dropped (no longer due
	// either, unless queued again since it began, but not delivered), and
	// its failure ("": none) with when to try again, and ends the claim.
	QueueWarehouseDays(ctx context.Context, warehouseID string, days []WarehouseDay, at time.Time) error
	DeliveredWarehouseDays(ctx context.Context, groupID string, days []Day) (map[string][]Day, error)
	ClaimWarehouse(ctx context.Context, warehouseID string, now, lease time.Time) (bool, error)
	WarehouseState(ctx context.Context, warehouseID string, limit int) (WarehouseState, error)
	WarehouseRan(ctx context.Context, warehouseID string, delivered, dropped []WarehouseDay, started, at time.Time, failure string, retryAt time.Time) error

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
// (AppendEvents, EraseStudent, Rebuild, EraseGroup) each hold that group's write lock,
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
	// changes nothing. When it returns nil the events are durable, and
	// visible to the reads of their group that follow a Settle.
	AppendEvents(ctx context.Context, events []Event) (AppendResult, error)
	// Settle makes every event of the group acknowledged before it was
	// called visible to the reads that follow, the directory's students
	// included: a store may acknowledge events before it has written
	// them where reads look (ClickHouse's write-behind log). Every read
	// of a group's usage or students calls it first. The reads that follow
	// take the context it returns, in which a store may carry what it read
	// to settle, so that they need not read it again. Under a context
	// marked ReadsOnly, a store that cannot write what it acknowledged
	// (ClickHouse with a replica or ZooKeeper down) may carry it to the
	// reads instead.
	Settle(ctx context.Context, groupID string) (context.Context, error)
	// SettleGroups is Settle of several groups (a district's schools) at
	// once, reading what it needs of them together.
	SettleGroups(ctx context.Context, groupIDs []string) (context.Context, error)
	// GroupRollups returns the group's rollups of seg's span (any of the
	// three: GroupSegments) whose keys lie in seg, ascending; periods
	// without usage have no row.
	GroupRollups(ctx context.Context, groupID string, seg Segment) ([]GroupRollup, error)
	// GroupsRollups is GroupRollups of several groups and segments at
	// once, in one read of each database (of each shard, not of each
	// group or segment): it passes each row to each with the indexes of
	// its group in groups and of its segment in segs. A group's rows, of
	// every segment, come one after another; the groups come in no set
	// order, and one without rows not at all. r is each's only during the
	// call: it must not keep or change it. versions are the groups'
	// UsageVersions, read before: a store may answer a group from rows it
	// keeps under its creation and version.
	GroupsRollups(ctx context.Context, groups []Group, versions []string, segs []Segment, each func(group, seg int, r *GroupRollup)) error
	// UsageVersions returns a version of each group's rollups (in the
	// order of groupIDs) as the reads that follow see them: it changes
	// with every write of them (appends, erasures, rebuilds, retention
	// cuts, moves), in any process, so that what was made of a group's
	// rollups under one version holds while it is current. A group
	// holding no usage has a version too; a group deleted and made again
	// under its id may count anew, and is told apart by its creation. ""
	// is no version: the store
	// cannot tell it now (a write unfinished), and nothing made of the
	// group's rollups is to be kept. Call SettleGroups first and pass its
	// context.
	UsageVersions(ctx context.Context, groupIDs []string) ([]string, error)
	// Ordinals returns the ordinal of each student of the group the store
	// has numbered: their place in StudentTotals' counts. A student keeps
	// their ordinal until erased, and an ordinal is never given to another
	// student, so that a reader may take the ordinals and the counts in
	// two steps.
	Ordinals(ctx context.Context, groupID string) (map[string]int, error)
	// StudentTotals sums each student's counts over the rollups of each
	// segment of segs (days and months: Segments), which do not overlap,
	// into totals[i][ordinal] for segs[i], growing totals[i] as needed.
	// The caller passes len(segs) buffers, empty (len 0) and perhaps
	// reused.
	StudentTotals(ctx context.Context, groupID string, segs []Segment, totals [][]Counts) error
	// StudentEvents returns the student's events in the group, oldest
	// first (then by id), as stored: what a copy of the student's data
	// holds. Call Settle first.
	StudentEvents(ctx context.Context, groupID, studentID string) ([]Event, error)
	// EraseStudent removes a student's enrolment, events and share of every
	// rollup at once: when it returns, no read counts anything of theirs.
	// It answers NotFound for a student the group neither has nor holds
	// usage of, and returns what it removed from each store.
	EraseStudent(ctx context.Context, groupID, studentID string) ([]Deleted, error)
	// Rebuild recomputes the group's rollups from its raw events, cutting
	// days in zone (an IANA name), which becomes the group's time zone in
	// the directory in the same write: a change of zone is a rebuild. The
	// writes of the group's usage cut days in the zone their lock reads.
	Rebuild(ctx context.Context, groupID, zone string) error
	// EraseGroup deletes a group and everything of it, in every store:
	// its usage, and in the directory its students, plans, keys, digest
	// recipients and records, and the group itself. It holds the group's
	// write lock: a write of the group's usage racing it either commits
	// first, and is erased, or finds the group gone and stores nothing
	// (AppendResult.Gone). It answers NotFound for a group that does not
	// exist, and returns once the group is gone, with what it removed
	// from each store.
	EraseGroup(ctx context.Context, groupID string) ([]Deleted, error)
	// ExpireDays removes the group's usage of the days before first (in
	// its zone) at once: its events, the write-behind log's, and their
	// share of every rollup, so that reports of the days from first on are
	// unchanged. It holds the group's write lock and records first as the
	// group's cut with its deletion: a cut at first or later recorded
	// already makes it do nothing and report ran false (another process
	// ran it). It returns what it removed from each store.
	ExpireDays(ctx context.Context, groupID string, first Day) (deleted []Deleted, ran bool, err error)
}

// WriteObserver is told what a usage store's writer does, for the
// operators' metrics.
type WriteObserver interface {
	// Merged: a write merged calls (batches) holding events.
	Merged(calls, events int)
	// Retried: op is tried again after a deadlock or serialization failure.
	Retried(op string)
}

type readsOnlyKey struct{}

// ReadsOnly marks ctx as a caller's that only reads after Settle: no write
// of its depends on the events acknowledged before being written where
// reads look, so a store may settle for it without writing them.
func ReadsOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readsOnlyKey{}, true)
}

// IsReadsOnly reports whether ctx was marked ReadsOnly.
func IsReadsOnly(ctx context.Context) bool {
	v, _ := ctx.Value(readsOnlyKey{}).(bool)
	return v
}

// ReplicaHealth is how one ClickHouse server of the usage tier stands, as
// it told the last probe, for the operators' metrics and alerts.
type ReplicaHealth struct {
	Shard   string // the shard's name, its replicas' host:port joined by "|"
	Replica string // host:port
	Up      bool   // it answered; the rest is zero when it did not
	// ReadonlyTables are its replicated tables that lost ZooKeeper.
	ReadonlyTables int
	// Delay is how far its most behind table lags the shard's newest
	// write; Queue, the replication tasks it has waiting.
	Delay time.Duration
	Queue int
	// Deletions are the deletions (mutations) it has not done yet, the
	// oldest waiting OldestDeletion.
	Deletions      int
	OldestDeletion time.Duration
}

// DirectoryHealth is how the directory's database stands, for the
// operators' metrics and alerts.
type DirectoryHealth struct {
	Up bool // it answered the probe
	// Replicated: a PostgreSQL server, which tells of its standbys; the
	// rest is zero otherwise.
	Replicated bool
	// Synchronous: its commits wait for a standby (synchronous_standby_names).
	Synchronous bool
	// Standbys are the standbys streaming from it, the furthest behind
	// ReplayLag behind it.
	Standbys  int
	ReplayLag time.Duration
}
