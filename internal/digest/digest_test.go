package digest

import (
	"errors"
	"fmt"
	"net/textproto"
	"slices"
	"testing"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

func TestParseWeek(t *testing.T) {
	tests := []struct {
		in, want, monday, err string
	}{
		{"2026-W46", "2026-W46", "2026-11-09", ""},
		{"2026-W01", "2026-W01", "2025-12-29", ""},
		{"2026-W53", "2026-W53", "2026-12-28", ""},
		{"2020-W53", "2020-W53", "2020-12-28", ""},
		{"2025-W53", "", "", "Invalid week: 2025 has no week 53"},
		{"2026-W00", "", "", "Invalid week: 2026 has no week 0"},
		{"2026-46", "", "", `Invalid week: expected an ISO week such as 2026-W46, got "2026-46"`},
	}
	for _, tt := range tests {
		w, err := analytics.ParseWeek(tt.in)
		if tt.err != "" {
			if analytics.ErrorMessage(err) != tt.err {
				t.Errorf("ParseWeek(%q): %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || w.String() != tt.want || w.Days().First.String() != tt.monday || w.Days().Len() != 7 {
			t.Errorf("ParseWeek(%q) = %s from %s, %v", tt.in, w, w.Days().First, err)
		}
	}
}

func TestChange(t *testing.T) {
	tests := []struct {
		value, previous int64
		want            string
		direction       int
	}{
		{0, 0, "no change", 0},
		{5, 0, "new", 1},
		{0, 5, "down 100%", -1},
		{12, 10, "up 20%", 1},
		{1, 3, "down 67%", -1},
		{1000, 999, "no change", 0}, // 0.1% rounds to nothing
		{39, 40, "down 2%", -1},     // -2.5%: a half up, as the dashboard's Math.round
		{41, 40, "up 3%", 1},
		{report.Suppressed, 3, "not compared", 0},
		{12, report.Suppressed, "not compared", 0},
	}
	for _, tt := range tests {
		if got, dir := Change(tt.value, tt.previous); got != tt.want || dir != tt.direction {
			t.Errorf("Change(%d, %d) = %q, %d; want %q, %d", tt.value, tt.previous, got, dir, tt.want, tt.direction)
		}
	}
}

func TestSpan(t *testing.T) {
	for week, want := range map[string]string{
		"2026-W46": "9–15 November 2026",
		"2026-W49": "30 November – 6 December 2026",
		"2026-W01": "29 December 2025 – 4 January 2026",
	} {
		w, _ := analytics.ParseWeek(week)
		if got := (Digest{Days: w.Days()}).Span(); got != want {
			t.Errorf("%s: %q, want %q", week, got, want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestNewMailer(t *testing.T) {
	tests := []struct {
		url, addr string
		ok        bool
	}{
		{"smtp://mail.example", "mail.example:25", true},
		{"smtp://u:p@mail.example:587", "mail.example:587", true},
		{"smtps://mail.example", "mail.example:465", true},
		{"http://mail.example", "", false},
		{"smtp://", "", false},
		{"smtp://mail.example/path", "", false},
	}
	for _, tt := range tests {
		m, err := NewMailer(tt.url, "digest@x.example")
		if (err == nil) != tt.ok || (err == nil && m.String() != tt.addr) {
			t.Errorf("NewMailer(%q) = %v, %v", tt.url, m, err)
		}
	}
}

func TestPermanent(t *testing.T) {
	if !Permanent(&textproto.Error{Code: 550}) || Permanent(&textproto.Error{Code: 451}) || Permanent(errors.New("dial tcp: refused")) {
		t.Error("Permanent: 5xx only")
	}
}

// TestDistrictSchools: a district's digest lists the lowest shares first
// (a hidden share, or one of nobody enrolled, last; ties by name), names
// MaxSchoolRows of them and counts the rest, and marks a school over its
// seats.
func TestDistrictSchools(t *testing.T) {
	school := func(name string, used, enrolled, seats int) SchoolWeek {
		return SchoolWeek{Adoption: report.Adoption{School: &analytics.Group{Name: name}, UsedEither: used, Enrolled: enrolled, Seats: seats}}
	}
	schools := []SchoolWeek{school("Hidden", report.Suppressed, 40, 0), school("Empty", 0, 0, 0), school("Half B", 5, 10, 0),
		school("Over", 9, 10, 8), school("Half A", 10, 20, 0), school("Low", 1, 10, 0)}
	for i := range MaxSchoolRows {
		schools = append(schools, school(fmt.Sprintf("Full %02d", i), 10, 10, 0))
	}
	lowestShareFirst(schools)
	var names []string
	for _, s := range schools[:6] {
		names = append(names, s.Name())
	}
	if want := []string{"Low", "Half A", "Half B", "Over", "Full 00", "Full 01"}; !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
	if last := schools[len(schools)-2:]; last[0].Name() != "Empty" || last[1].Name() != "Hidden" || last[0].Share() != "-" || last[1].Share() != "hidden" {
		t.Errorf("the last: %s %s, %s %s", last[0].Name(), last[0].Share(), last[1].Name(), last[1].Share())
	}
	if s := schools[3]; s.Share() != "90.0%" || s.SeatsText() != "8 (over)" || schools[0].SeatsText() != "-" {
		t.Errorf("Over: %s %s", s.Share(), s.SeatsText())
	}
	// Halves up, as the dashboard's toFixed(1): 357 of 400 is 89.25%.
	for _, tt := range []struct {
		used, enrolled int
		want           string
	}{{357, 400, "89.3%"}, {1, 8, "12.5%"}, {1, 3, "33.3%"}, {2, 3, "66.7%"}, {0, 7, "0.0%"}, {7, 7, "100.0%"}} {
		if got := school("S", tt.used, tt.enrolled, 0).Share(); got != tt.want {
			t.Errorf("%d of %d: %s, want %s", tt.used, tt.enrolled, got, tt.want)
		}
	}
	d := DistrictDigest{Schools: schools}
	if n, more := len(d.Listed()), d.MoreLine(); n != MaxSchoolRows || more != "And 6 more schools: the dashboard lists them all." {
		t.Errorf("listed %d; %q", n, more)
	}
}
