package analytics

import "math"

// NoDay stands for no day: a student's last use of what they never used.
const NoDay Day = math.MinInt32

// LastUse is a student's last day of use of each endpoint, cut in their
// group's zone (NoDay: never, within the usage the group keeps).
type LastUse struct {
	LiveLecture, Chat Day
}

// NeverUsed is the LastUse of a student without usage.
var NeverUsed = LastUse{NoDay, NoDay}

// Either returns the last day of use of either endpoint (NoDay: never).
func (u LastUse) Either() Day { return max(u.LiveLecture, u.Chat) }

// UseStatus says whether a student uses the service lately.
type UseStatus string

const (
	// StatusNever: no use at all.
	StatusNever UseStatus = "never"
	// StatusStopped: used it before, nothing in the last inactiveAfter
	// days (today and the days before it).
	StatusStopped UseStatus = "stopped"
	// StatusActive: some use in the last inactiveAfter days.
	StatusActive UseStatus = "active"
)

// UseStatuses are the statuses, from the most to the least in need of a
// teacher's word.
var UseStatuses = []UseStatus{StatusNever, StatusStopped, StatusActive}

// DefaultInactiveAfter is the days without use after which a student who
// used the service counts as stopped, unless their group sets another.
const DefaultInactiveAfter = 7

// MaxInactiveAfter bounds a group's inactiveAfter: a year.
const MaxInactiveAfter = 366

// Status returns the student's status on day today: stopped when their
// last use of either endpoint is inactiveAfter days before today or
// earlier.
func (u LastUse) Status(today Day, inactiveAfter int) UseStatus {
	switch last := u.Either(); {
	case last == NoDay:
		return StatusNever
	case today-last >= Day(inactiveAfter):
		return StatusStopped
	default:
		return StatusActive
	}
}

// The usage stores keep each student's last day of use of each metric as
// the student's counts of the segment {SpanLast, 0 to 0}: StudentTotals
// reads them, each "count" the code of a day (LastDayCode), 0 for never.

// LastDayCode returns the code of day d among a student's last days:
// positive for every day a report may ask for, so that 0 stays "never".
func LastDayCode(d Day) int64 { return int64(d-FirstDay) + 1 }

// LastDaysSegment is the segment whose student totals are the students'
// last days.
var LastDaysSegment = Segment{SpanLast, DayRange{0, 0}}

// LastUseOf returns the last use that a student's last days (as
// StudentTotals reads them) hold: of live lectures (a session made or a
// live lecture message) and of chat (any message).
func LastUseOf(c *Counts) LastUse {
	var live, chat int64
	for m, code := range c {
		if Metric(m).IsLiveLecture() {
			live = max(live, code)
		}
		if Metric(m).IsChat() {
			chat = max(chat, code)
		}
	}
	return LastUse{LiveLecture: dayOfCode(live), Chat: dayOfCode(chat)}
}

// dayOfCode is the day of a code that LastDayCode returned (NoDay for 0).
func dayOfCode(code int64) Day {
	if code <= 0 {
		return NoDay
	}
	return FirstDay + Day(code-1)
}

// StopAlert names the word to one of a class's digest recipients that
// students of the class stopped.
type StopAlert struct {
	GroupID, ClassID, Address string
}

// Stop is a student's crossing into stopped, named by their last day of
// use: a student who comes back and stops again makes another.
type Stop struct {
	StudentID string
	LastDay   Day
}
