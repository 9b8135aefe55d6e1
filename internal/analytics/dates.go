package analytics

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Date is a startDate or endDate as given: a calendar date or a wall-clock
// time (both name a day in the group's zone directly), or an instant with
// an offset (which names the day it falls on in the group's zone).
type Date struct {
	day     Day
	instant *time.Time
}

// OnDay returns the Date of a calendar day: the same day in every zone.
func OnDay(d Day) Date { return Date{day: d} }

// Day returns the calendar day d names in loc.
func (d Date) Day(loc *time.Location) Day {
	if d.instant != nil {
		return DayOf(*d.instant, loc)
	}
	return d.day
}

// isoDate matches YYYY-MM-DD, optionally followed by a time of day and an
// offset. A space before the offset stands for '+': an unencoded '+' in a
// query string arrives as a space.
var isoDate = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})` +
	`(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?` +
	`([Zz]|[+\- ]\d{2}(?::?\d{2})?)?)?$`)

// Years accepted in dates (docs/decisions.md, R2): every bound echoed for a day of
// them, in any zone, has a four-digit year.
const (
	MinYear = 1
	MaxYear = 9998
)

// ParseDate reads a startDate or endDate value (docs/decisions.md, R2).
func ParseDate(name, value string) (Date, error) {
	const expected = "an ISO 8601 date or timestamp"
	m := isoDate.FindStringSubmatch(value)
	if m == nil {
		return Date{}, malformed(name, expected, value)
	}
	if m[4] == "" || m[8] == "" {
		// A calendar date, or a wall-clock time naming its own date.
		_, err := dateTime(name, expected, value, m[1:7], "", "Z")
		return Date{day: DateDay(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]))}, err
	}
	t, err := dateTime(name, expected, value, m[1:7], m[7], m[8])
	return Date{instant: &t}, err
}

func malformed(name, expected, value string) error {
	return Errorf(Invalid, "Invalid %s: expected %s, got %q", name, expected, value)
}

// rfc3339 matches an RFC 3339 timestamp: seconds and an offset required,
// at most nine digits of fraction.
var rfc3339 = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$`)

// ParseTimestamp reads an RFC 3339 timestamp with an offset, such as an
// event's occurredAt, as strictly as ParseDate reads dates.
func ParseTimestamp(name, value string) (time.Time, error) {
	const expected = "an RFC 3339 timestamp with offset"
	m := rfc3339.FindStringSubmatch(value)
	if m == nil {
		return time.Time{}, malformed(name, expected, value)
	}
	return dateTime(name, expected, value, m[1:7], m[7], m[8])
}

// dateTime checks and assembles the parts of a matched date or timestamp:
// year, month, day, hour, minute, second (empty parts are zero), the
// fraction's digits and the offset.
func dateTime(name, expected, value string, parts []string, frac, offset string) (time.Time, error) {
	year, month, day := atoi(parts[0]), time.Month(atoi(parts[1])), atoi(parts[2])
	hour, minute, sec := atoi(parts[3]), atoi(parts[4]), atoi(parts[5])
	if year < MinYear || year > MaxYear {
		return time.Time{}, Errorf(Invalid, "Invalid %s: the year must be from %04d to %04d, got %q", name, MinYear, MaxYear, value)
	}
	off, ok := parseOffset(offset)
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 || !ok {
		return time.Time{}, malformed(name, expected, value)
	}
	nanos := atoi(frac + strings.Repeat("0", 9-len(frac)))
	return time.Date(year, month, day, hour, minute, sec, nanos, time.FixedZone("", off)), nil
}

// atoi reads the digits a pattern matched; empty is zero.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// parseOffset reads Z, ±hh, ±hhmm or ±hh:mm as seconds east of UTC.
func parseOffset(s string) (int, bool) {
	if s == "Z" || s == "z" {
		return 0, true
	}
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	digits := strings.ReplaceAll(s[1:], ":", "")
	hours, _ := strconv.Atoi(digits[:2])
	minutes := 0
	if len(digits) == 4 {
		minutes, _ = strconv.Atoi(digits[2:])
	}
	if hours > 23 || minutes > 59 {
		return 0, false
	}
	return sign * (hours*3600 + minutes*60), true
}

func daysIn(year int, month time.Month) int {
	return time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// FormatTime is how reports echo their bounds: UTC with milliseconds.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
