//go:build !linux || !cgo

package cli

// limitMallocArenas leaves the C allocator as it is: only glibc's keeps
// an arena a busy thread (malloc_glibc.go).
func limitMallocArenas() int { return 0 }
