package lti

import (
	"strings"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
)

// TestToolKeys: the first key signs at once; a key is due after
// ToolKeyLifetime; a new key is published a day before it signs, and the
// one before it stays published until then and a rotation after.
func TestToolKeys(t *testing.T) {
	day := 24 * time.Hour
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	key := func(id string, age time.Duration) analytics.LTIToolKey {
		return analytics.LTIToolKey{ID: id, Created: now.Add(-age)}
	}
	ids := func(keys []analytics.LTIToolKey) string {
		var out []string
		for _, k := range keys {
			out = append(out, k.ID)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		name               string
		keys               []analytics.LTIToolKey
		signing, published string
		due                bool
	}{
		{"none", nil, "", "", true},
		{"a first key", []analytics.LTIToolKey{key("a", time.Minute)}, "a", "a", false},
		{"a key due", []analytics.LTIToolKey{key("a", 91*day)}, "a", "a", true},
		{"a new key not yet signing", []analytics.LTIToolKey{key("b", time.Hour), key("a", 91*day)}, "a", "b,a", false},
		{"the new key signing", []analytics.LTIToolKey{key("b", day+time.Hour), key("a", 92*day)}, "b", "b,a", false},
		{"the one before the last dropped", []analytics.LTIToolKey{key("c", 2*day), key("b", 93*day), key("a", 184*day)}, "c", "c,b", false},
		{"during a rotation", []analytics.LTIToolKey{key("c", time.Hour), key("b", 91*day), key("a", 182*day)}, "b", "c,b,a", false},
	} {
		signing, published, due := ToolKeys(c.keys, now)
		if signing.ID != c.signing || ids(published) != c.published || due != c.due {
			t.Errorf("%s: signing %q, published %q, due %v; want %q, %q, %v", c.name, signing.ID, ids(published), due, c.signing, c.published, c.due)
		}
	}
}
