package analytics

import (
	"strconv"
	"strings"
	"time"
)

// Days is a period of whole days, as operators write it: "730d", or "off"
// (0: kept for good).
type Days int

// MaxDays caps a period of days: about a hundred years.
const MaxDays = 36600

// ParseDays reads "Nd" (1 to MaxDays) or "off".
func ParseDays(v string) (Days, error) {
	if strings.EqualFold(v, "off") {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v, "d"))
	if err != nil || !strings.HasSuffix(v, "d") || n < 1 || n > MaxDays {
		return 0, Errorf(Invalid, "Invalid period %q: expected a number of days such as 730d (1d to %dd), or off", v, MaxDays)
	}
	return Days(n), nil
}

func (d Days) String() string {
	if d == 0 {
		return "off"
	}
	return strconv.Itoa(int(d)) + "d"
}

// Set makes Days a flag.Value.
func (d *Days) Set(v string) error {
	n, err := ParseDays(v)
	if err == nil {
		*d = n
	}
	return err
}

// Before returns the instant before which what is kept d days is due to
// go, at now.
func (d Days) Before(now time.Time) time.Time { return now.AddDate(0, 0, -int(d)) }

// FirstDay is the first day a report may ask for: no usage is older.
var FirstDay = DateDay(MinYear, time.January, 1)

// FirstKept returns the first day that a group keeping its usage d days
// keeps on day today: the last d days, today included (every day, when
// d is 0).
func (d Days) FirstKept(today Day) Day {
	if d == 0 {
		return FirstDay
	}
	return today - Day(d) + 1
}
