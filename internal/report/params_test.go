package report

import (
	"testing"

	"groupanalytics/internal/analytics"
)

func TestParseFlagAndInterval(t *testing.T) {
	for value, want := range map[string]bool{"true": true, "TRUE": true, "True": true, "false": false, "FaLsE": false} {
		if got, err := ParseFlag("students", value); err != nil || got != want {
			t.Errorf("ParseFlag(students, %q) = %t, %v", value, got, err)
		}
	}
	for _, value := range []string{"1", "yes", "t", " true"} {
		if _, err := ParseFlag("students", value); analytics.ErrorCode(err) != analytics.Invalid {
			t.Errorf("ParseFlag(students, %q) accepted", value)
		}
	}
	for value, want := range map[string]analytics.Interval{"day": analytics.Daily, "week": analytics.Weekly, "month": analytics.Monthly} {
		if got, err := ParseInterval(value); err != nil || got != want {
			t.Errorf("ParseInterval(%q) = %v, %v", value, got, err)
		}
	}
	for _, value := range []string{"Day", "year", "none", "hour"} {
		if _, err := ParseInterval(value); analytics.ErrorCode(err) != analytics.Invalid {
			t.Errorf("ParseInterval(%q) accepted", value)
		}
	}
}
