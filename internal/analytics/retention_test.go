package analytics

import "testing"

func TestParseDays(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Days
		ok   bool
	}{
		{"730d", 730, true}, {"1d", 1, true}, {"off", 0, true}, {"OFF", 0, true}, {"36600d", MaxDays, true},
		{"0d", 0, false}, {"730", 0, false}, {"2y", 0, false}, {"-1d", 0, false}, {"36601d", 0, false}, {"", 0, false}, {"d", 0, false},
	} {
		got, err := ParseDays(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParseDays(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
		if err == nil && c.in != "OFF" && got.String() != c.in {
			t.Errorf("%q read back as %q", c.in, got.String())
		}
	}
}
