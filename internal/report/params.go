package report

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// Interval is how a range is cut into reports (decisions R1).
type Interval int

const (
	Whole Interval = iota // one report for the whole range
	Daily
	Weekly  // ISO weeks, Monday to Sunday
	Monthly // calendar months
)

var intervalNames = map[Interval]string{Whole: "none", Daily: "day", Weekly: "week", Monthly: "month"}

func (iv Interval) String() string { return intervalNames[iv] }

// ParseInterval reads the interval parameter: day, week or month.
func ParseInterval(value string) (Interval, error) {
	switch value {
	case "day":
		return Daily, nil
	case "week":
		return Weekly, nil
	case "month":
		return Monthly, nil
	}
	return Whole, analytics.Errorf(analytics.Invalid, "Invalid interval: expected day, week or month, got %q", value)
}

// ParseStudents reads the students parameter: true or false, in any case.
func ParseStudents(value string) (bool, error) {
	switch strings.ToLower(value) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, analytics.Errorf(analytics.Invalid, "Invalid students: expected true or false, got %q", value)
}

// Date is a startDate or endDate as given: a calendar date or a wall-clock
// time (both name a day in the group's zone directly), or an instant with
// an offset (which names the day it falls on in the group's zone).
type Date struct {
	day     analytics.Day
	instant *time.Time
}

// Day returns the calendar day d names in loc.
func (d Date) Day(loc *time.Location) analytics.Day {
	if d.instant != nil {
		return analytics.DayOf(*d.instant, loc)
	}
	return d.day
}

// isoDate matches YYYY-MM-DD, optionally followed by a time of day and an
// offset. A space before the offset stands for '+': an unencoded '+' in a
// query string arrives as a space.
var isoDate = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})` +
	`(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?` +
	`([Zz]|[+\- ]\d{2}(?::?\d{2})?)?)?$`)

// ParseDate reads a startDate or endDate value (decisions R2).
func ParseDate(name, value string) (Date, error) {
	bad := analytics.Errorf(analytics.Invalid, "Invalid %s: expected an ISO 8601 date or timestamp, got %q", name, value)
	m := isoDate.FindStringSubmatch(value)
	if m == nil {
		return Date{}, bad
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	year, month, day := num(m[1]), time.Month(num(m[2])), num(m[3])
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) {
		return Date{}, bad
	}
	if m[4] == "" {
		return Date{day: analytics.DateDay(year, month, day)}, nil
	}
	hour, minute, sec := num(m[4]), num(m[5]), num(m[6])
	if hour > 23 || minute > 59 || sec > 59 {
		return Date{}, bad
	}
	if m[8] == "" {
		return Date{day: analytics.DateDay(year, month, day)}, nil
	}
	frac := m[7] + strings.Repeat("0", 9-len(m[7]))
	offset, ok := parseOffset(m[8])
	if !ok {
		return Date{}, bad
	}
	t := time.Date(year, month, day, hour, minute, sec, num(frac), time.FixedZone("", offset))
	return Date{instant: &t}, nil
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

// Query is a report request with its parameter values read. Nil dates
// take their defaults.
type Query struct {
	Start, End *Date
	Students   bool
	Interval   Interval
}

// DefaultStart is the first day reported when startDate is not given:
// 2025-01-01 in the group's time zone (for a UTC group, exactly the
// documented 2025-01-01T00:00:00.000Z).
var DefaultStart = analytics.DateDay(2025, time.January, 1)

// FormatTime is how reports echo their bounds: UTC with milliseconds.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Plural returns "1 day", "2 days": n and unit, in the plural unless n is 1.
func Plural(n int, unit string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
