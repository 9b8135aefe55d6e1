//go:build linux && cgo

package cli

/*
#include <malloc.h>

static int limit_arenas(int n) {
#ifdef M_ARENA_MAX
	return mallopt(M_ARENA_MAX, n);
#else
	return 0;
#endif
}
*/
import "C"

import "os"

// mallocArenas is how many arenas the C allocator (glibc's malloc, under
// SQLite) keeps. By default it gives each thread that finds the arenas
// busy one of its own, up to eight a core, and each keeps what it freed:
// SQLite's pages, allocated by whichever thread runs a query, then hold
// the process's resident size well above what they use.
const mallocArenas = 2

// limitMallocArenas keeps the C allocator to mallocArenas, unless
// MALLOC_ARENA_MAX chose, and returns the limit it set (0: none).
func limitMallocArenas() int {
	if os.Getenv("MALLOC_ARENA_MAX") != "" || C.limit_arenas(mallocArenas) != 1 {
		return 0
	}
	return mallocArenas
}
