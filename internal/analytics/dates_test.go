package analytics

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseDate(t *testing.T) {
	berlin, _ := LoadZone("Europe/Berlin")
	tests := []struct {
		value string
		want  string // the day named in Europe/Berlin; "" for an error
	}{
		{"2025-03-07", "2025-03-07"},
		{"2025-03-07T10:15:00Z", "2025-03-07"},
		{"2025-03-07T23:30:00Z", "2025-03-08"}, // 00:30 in Berlin
		{"2025-03-07T23:30:00.123+01:00", "2025-03-07"},
		{"2025-03-07T23:30:00-05:00", "2025-03-08"},
		{"2025-03-07T23:30:00 01:00", "2025-03-07"}, // an unencoded '+' arrives as a space
		{"2025-03-07T23:30:00+0100", "2025-03-07"},
		{"2025-03-07T23:30:00+01", "2025-03-07"},
		{"2025-03-07T23:30", "2025-03-07"}, // no offset: wall time in the group's zone
		{"2025-03-07T23:30:59.999999999", "2025-03-07"},
		{"2025-03-07t10:15:00z", "2025-03-07"},
		{"2024-02-29", "2024-02-29"},
		{"2025-02-29", ""},
		{"2025-13-01", ""},
		{"2025-00-10", ""},
		{"2025-01-32", ""},
		{"2025-1-5", ""},
		{"25-01-05", ""},
		{"2025-01-05T24:00:00Z", ""},
		{"2025-01-05T10:60:00Z", ""},
		{"2025-01-05T10:00:00+25:00", ""},
		{"2025-01-05T10:00:00X", ""},
		{"next week", ""},
		{"1736035200", ""},
		{"2025-01-05 ", ""},
	}
	for _, tt := range tests {
		d, err := ParseDate("startDate", tt.value)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseDate(%q) accepted, want an error", tt.value)
			} else if want := `Invalid startDate: expected an ISO 8601 date or timestamp, got "` + tt.value + `"`; err.Error() != want {
				t.Errorf("ParseDate(%q) error %q, want %q", tt.value, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseDate(%q): %v", tt.value, err)
			continue
		}
		if got := d.Day(berlin).String(); got != tt.want {
			t.Errorf("ParseDate(%q) names %s in Berlin, want %s", tt.value, got, tt.want)
		}
	}
}

// TestParseDateYears: only the years 0001 to 9998 are accepted, so that
// every bound a report echoes has a four-digit year (docs/decisions.md, R2).
func TestParseDateYears(t *testing.T) {
	for _, value := range []string{"0001-01-01", "9998-12-31", "9998-12-31T23:59:59Z", "0001-01-01T00:00:00+14:00"} {
		if _, err := ParseDate("endDate", value); err != nil {
			t.Errorf("ParseDate(%q): %v", value, err)
		}
	}
	for _, value := range []string{"0000-01-01", "9999-01-01", "9999-12-31T23:59:59Z", "0000-12-31T23:00:00-05:00"} {
		_, err := ParseDate("endDate", value)
		if want := `Invalid endDate: the year must be from 0001 to 9998, got "` + value + `"`; err == nil || err.Error() != want {
			t.Errorf("ParseDate(%q) = %v, want %q", value, err, want)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct{ value, want string }{
		{"2025-03-07T10:15:00Z", "2025-03-07T10:15:00Z"},
		{"2025-03-07T10:15:00.123456789+02:00", "2025-03-07T08:15:00.123456789Z"},
		{"2025-03-07t10:15:00z", "2025-03-07T10:15:00Z"},
		{"2025-03-07T10:15:00-23:59", "2025-03-08T10:14:00Z"},
		{"2025-03-07T10:15:00+24:00", ""},
		{"2025-03-07T10:15:00.1234567890Z", ""}, // ten digits of fraction
		{"2025-03-07T10:15Z", ""},               // no seconds
		{"2025-03-07T10:15:00", ""},             // no offset
		{"2025-03-07T10:15:00+0200", ""},
		{"2025-03-07 10:15:00Z", ""},
		{"2025-02-29T10:15:00Z", ""},
		{"2025-03-07T10:15:60Z", ""},
		{"0000-03-07T10:15:00Z", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := ParseTimestamp("occurredAt", tt.value)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseTimestamp(%q) accepted", tt.value)
		case tt.want == "" && ErrorCode(err) != Invalid:
			t.Errorf("ParseTimestamp(%q): %v, want an Invalid error", tt.value, err)
		case tt.want != "" && err != nil:
			t.Errorf("ParseTimestamp(%q): %v", tt.value, err)
		case tt.want != "" && got.UTC().Format(time.RFC3339Nano) != tt.want:
			t.Errorf("ParseTimestamp(%q) = %s, want %s", tt.value, got.UTC().Format(time.RFC3339Nano), tt.want)
		}
	}
}

// echoed is the form of every bound a report echoes (the OpenAPI pattern).
var echoed = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// FuzzParseDate: any value is either refused with an Invalid error naming
// the parameter, or names a day whose bounds echo as four-digit-year UTC
// timestamps in every zone.
func FuzzParseDate(f *testing.F) {
	for _, seed := range []string{"2025-03-07", "2025-03-07T10:15:00Z", "2025-03-07T23:30:00 01:00", "0001-01-01",
		"9998-12-31T23:59:59.999999999-23:59", "0000-01-01", "9999-12-31", "2025-02-29", "2025-03-07T24:00:00Z",
		"2025-03-07T10:00:00+24:00", "2025-03-07T10:00", "\x00", "2025-03-07T10:15:00.1234567890Z"} {
		f.Add(seed)
	}
	zones := []string{"UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Tokyo", "America/Santiago", "Asia/Amman"}
	f.Fuzz(func(t *testing.T, value string) {
		d, err := ParseDate("startDate", value)
		if err != nil {
			if ErrorCode(err) != Invalid || !strings.HasPrefix(err.Error(), "Invalid startDate: ") {
				t.Fatalf("ParseDate(%q): %v", value, err)
			}
			return
		}
		for _, zone := range zones {
			loc, _ := LoadZone(zone)
			day := d.Day(loc)
			for _, bound := range []string{FormatTime(day.Start(loc)), FormatTime(day.End(loc))} {
				if !echoed.MatchString(bound) {
					t.Fatalf("ParseDate(%q) in %s echoes %q", value, zone, bound)
				}
			}
		}
	})
}

// FuzzParseTimestamp: any value is refused with an Invalid error, or is an
// instant in the years 0001 to 9998 that formats back to itself.
func FuzzParseTimestamp(f *testing.F) {
	for _, seed := range []string{"2025-03-07T10:15:00Z", "2025-03-07T10:15:00.123+02:00", "2025-03-07T10:15:00+24:00",
		"2025-03-07T10:15:00.1234567890Z", "0000-01-01T00:00:00Z", "2025-03-07t10:15:00z"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		at, err := ParseTimestamp("occurredAt", value)
		if err != nil {
			if ErrorCode(err) != Invalid || !strings.HasPrefix(err.Error(), "Invalid occurredAt: ") {
				t.Fatalf("ParseTimestamp(%q): %v", value, err)
			}
			return
		}
		back, perr := time.Parse(time.RFC3339Nano, strings.ToUpper(value))
		if perr != nil || !back.Equal(at) {
			t.Fatalf("ParseTimestamp(%q) = %s; Go reads it as %s (%v)", value, at, back, perr)
		}
	})
}
