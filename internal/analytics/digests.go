package analytics

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Recipient is an address that receives a group's weekly digest, or a
// district's (DistrictID set, GroupID empty).
type Recipient struct {
	GroupID    string
	DistrictID string
	Address    string
	// Token is the secret of the digest's unsubscribe link: it removes
	// this recipient, and nothing else, without a key.
	Token   string
	Created time.Time
	// ClassID, if set, makes the recipient a class's teacher: the digest
	// is the class's (its members' figures and students), not the
	// school's. The class's deletion removes the recipient.
	ClassID string
}

// ErrUnknownUnsubscribeToken is the answer to an unsubscribe link whose
// token no recipient holds (any more).
var ErrUnknownUnsubscribeToken = &Error{Code: NotFound, Message: "This link is not valid: it may have been used already"}

// Week is an ISO 8601 week: Monday to Sunday, numbered within its
// ISO year (2026-W46).
type Week struct {
	Year, Number int
}

var weekPattern = regexp.MustCompile(`^(\d{4})-W(\d{2})$`)

// ParseWeek reads an ISO week such as 2026-W46.
func ParseWeek(value string) (Week, error) {
	m := weekPattern.FindStringSubmatch(value)
	if m == nil {
		return Week{}, Errorf(Invalid, "Invalid week: expected an ISO week such as 2026-W46, got %q", value)
	}
	year, _ := strconv.Atoi(m[1])
	number, _ := strconv.Atoi(m[2])
	w := Week{year, number}
	if y, n := w.Monday().ISOWeek(); number < 1 || y != year || n != number {
		return Week{}, Errorf(Invalid, "Invalid week: %d has no week %d", year, number)
	}
	return w, nil
}

// WeekOf is the week holding day d.
func WeekOf(d Day) Week {
	y, n := d.Start(time.UTC).ISOWeek()
	return Week{y, n}
}

// Monday is the week's first day, as a UTC midnight.
func (w Week) Monday() time.Time {
	// 4 January is always in week 1.
	jan4 := time.Date(w.Year, time.January, 4, 0, 0, 0, 0, time.UTC)
	week1 := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
	return week1.AddDate(0, 0, 7*(w.Number-1))
}

// Days are the week's seven days.
func (w Week) Days() DayRange {
	m := w.Monday()
	first := DateDay(m.Year(), m.Month(), m.Day())
	return DayRange{First: first, Last: first + 6}
}

// Previous is the week before.
func (w Week) Previous() Week { return WeekOf(w.Days().First - 7) }

func (w Week) String() string { return fmt.Sprintf("%04d-W%02d", w.Year, w.Number) }

// DigestSend names one digest: a group's week, or a district's
// (DistrictID set, GroupID empty), to one address. It is sent once: the
// directory records it before it goes out.
type DigestSend struct {
	GroupID    string
	DistrictID string
	Week       Week
	Address    string
}
