//go:build linux && cgo

package cli

import "testing"

// TestMallocArenasLimited: a serving process keeps the C allocator to
// mallocArenas arenas, unless MALLOC_ARENA_MAX chose for it.
func TestMallocArenasLimited(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
	}{
		{"", mallocArenas},
		{"8", 0},
	} {
		t.Setenv("MALLOC_ARENA_MAX", c.env)
		if got := limitMallocArenas(); got != c.want {
			t.Errorf("MALLOC_ARENA_MAX %q: arenas limited to %d, want %d", c.env, got, c.want)
		}
	}
}
