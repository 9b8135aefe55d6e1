// Package analytics holds the domain of groupanalytics: groups, plans, keys,
// students and usage events, the errors callers can act on, and the two
// store contracts (the directory and the usage store). It imports nothing
// of the project's own.
package analytics

import (
	"cmp"
	"crypto/sha256"
	"slices"
	"time"
)

// Group is a school: the tenant that report keys belong to.
type Group struct {
	ID       string
	Name     string
	TimeZone string // IANA name; reports cut days in this zone
	Created  time.Time
	// MinCellSize, when not 0, hides the figures of group reports (the
	// group's, a class's) that fewer students than it make up
	// (docs/decisions.md, small cells).
	MinCellSize int
	// Retention, when not 0, is how many days of usage the group keeps:
	// older events and their share of every rollup are deleted daily
	// (docs/decisions.md, retention).
	Retention Days
	// DistrictID is the district the group is in; empty: none.
	DistrictID string
	// InactiveAfter is the days without use after which a student who
	// used the service counts as stopped (LastUse.Status).
	InactiveAfter int
}

// FirstKeptDay returns the first day of usage the group keeps at now, in
// its zone loc (FirstDay when it keeps everything).
func (g Group) FirstKeptDay(now time.Time, loc *time.Location) Day {
	return g.Retention.FirstKept(DayOf(now, loc))
}

// Location returns the group's time zone from the embedded database. Zones
// are validated when a group is created, so a failure here is a bug.
func (g Group) Location() (*time.Location, error) {
	return LoadZone(g.TimeZone)
}

// Plan is a period during which a group's keys work.
type Plan struct {
	GroupID   string
	ID        int64
	Starts    time.Time
	Ends      *time.Time // nil: open-ended; the plan is valid before Ends
	Cancelled *time.Time // set when cancelled; invalid from then on
	// Seats is how many students the plan covers; 0: it does not say.
	Seats int
}

// ValidAt reports whether the plan allows access at t (docs/decisions.md, R5).
func (p Plan) ValidAt(t time.Time) bool {
	if t.Before(p.Starts) {
		return false
	}
	if p.Ends != nil && !t.Before(*p.Ends) {
		return false
	}
	return p.Cancelled == nil || t.Before(*p.Cancelled)
}

// Days are the first and last days in loc on which the plan is valid at
// some time (last is nil for an open-ended plan): the dates an operator
// gives, where Ends is the instant after the last day.
func (p Plan) Days(loc *time.Location) (first Day, last *Day) {
	first = DayOf(p.Starts, loc)
	if p.Ends != nil {
		d := DayOf(p.Ends.Add(-time.Millisecond), loc)
		last = &d
	}
	return first, last
}

// APIKey is a school's report key, or a district's (DistrictID set,
// GroupID empty). Only the SHA-256 of the secret is kept.
type APIKey struct {
	GroupID    string
	DistrictID string
	ID         string
	Prefix     string // first characters of the secret, to recognise it in lists
	Label      string
	Hash       []byte
	Created    time.Time
	Revoked    *time.Time
	LastUsed   *time.Time // day granularity: written at most once a day
	// ForClasses marks a teacher's key, which sees only the students of
	// Classes (of its group): no other class, student or group figure.
	// Its classes' deletion leaves it seeing none.
	ForClasses bool
	Classes    []string
}

// Access is what a report key opens: its group, and the classes of a
// teacher's key (APIKey.ForClasses); or, for a district's key, its
// district (Group is then empty). A district's key that names one of its
// schools opens that school as the school's own key does, District still
// set, so that the school's access log names the district's key. A
// signed-in person's session opens the same as the key of their role
// would, with Person set and no KeyID.
type Access struct {
	Group      Group
	KeyID      string
	ForClasses bool
	Classes    []string
	District   *DistrictAccess
	Person     *Person
}

// PlatformToken authorises the platform API (ingestion and administration).
type PlatformToken struct {
	ID      string
	Prefix  string
	Label   string
	Hash    []byte
	Created time.Time
	Revoked *time.Time
}

// DistrictKeyPrefix begins the secret of every district's key; a
// school's key's begins "gak_".
const DistrictKeyPrefix = "gad_"

// HashSecret returns the stored form of a key or token.
func HashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// Student is a member of a group, as the platform names them.
type Student struct {
	GroupID string
	ID      string
	Name    string
}

// SortStudents puts students in report order: by name, then id, in byte
// order (docs/decisions.md, R1).
func SortStudents(students []Student) {
	slices.SortFunc(students, func(a, b Student) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
}

// Metric is one countable kind of usage event.
type Metric uint8

const (
	SessionsCreated Metric = iota
	TutorMeMessages
	TestMessages
	FlashcardMessages
	MaterialMessages
	LiveLectureMessages
	MainChatMessages
	NumMetrics = iota
)

// Event kinds and chat types as the platform sends them (docs/decisions.md, R6).
const (
	KindSessionCreated = "live_lecture.session_created"
	KindMessageSent    = "chat.message_sent"
)

// ChatTypes maps each chatType of a chat.message_sent event to its metric.
var ChatTypes = map[string]Metric{
	"tutor_me":     TutorMeMessages,
	"test":         TestMessages,
	"flashcard":    FlashcardMessages,
	"material":     MaterialMessages,
	"live_lecture": LiveLectureMessages,
	"main":         MainChatMessages,
}

// EventKind returns the kind, and the chatType of a chat message, of the
// events m counts, as the platform sends them.
func (m Metric) EventKind() (kind, chatType string) {
	for name, metric := range ChatTypes {
		if metric == m {
			return KindMessageSent, name
		}
	}
	return KindSessionCreated, ""
}

// IsChat reports whether m counts chat messages.
func (m Metric) IsChat() bool { return m != SessionsCreated }

// IsLiveLecture reports whether m is live-lecture usage: a session made or a
// message sent during a live lecture.
func (m Metric) IsLiveLecture() bool { return m == SessionsCreated || m == LiveLectureMessages }

// Counts holds one count per metric.
type Counts [NumMetrics]int64

// Add adds o to c.
func (c *Counts) Add(o *Counts) {
	for i := range c {
		c[i] += o[i]
	}
}

// Event is one usage event, validated. Day is its calendar date in the
// group's time zone, fixed when the event is stored.
type Event struct {
	GroupID     string
	ID          string
	StudentID   string
	StudentName string    // the name sent with the event; empty: none
	OccurredAt  time.Time // kept to the millisecond
	Metric      Metric
	Day         Day
}

// GroupRollup is a group's usage over one rollup period (a day, week or month):
// counts, and which students used live lectures and chat.
type GroupRollup struct {
	Key              Day // the day, the Monday of the week, or the first day of the month
	Counts           Counts
	LiveLectureUsers StudentSet
	ChatUsers        StudentSet
}

// Add adds o's counts and students to r: r then covers both periods, as a
// week's row covers its days'.
func (r *GroupRollup) Add(o *GroupRollup) {
	r.Counts.Add(&o.Counts)
	r.LiveLectureUsers.Union(o.LiveLectureUsers)
	r.ChatUsers.Union(o.ChatUsers)
}

// AppendResult says what became of a batch of events.
type AppendResult struct {
	Accepted   int // stored now
	Duplicates int // ids stored before (or twice in the batch), counted once
	// Gone are the groups of the batch deleted before their events were
	// written (after the caller checked them): none of their events is
	// stored, nor counted above.
	Gone []string
}
