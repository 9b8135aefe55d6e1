package analytics

import "math/bits"

// StudentSet is a set of student ordinals: small dense integers a usage
// store assigns per group, so that "distinct students over a range" is a
// union of per-period sets rather than a scan of every student-day.
type StudentSet []uint64

// Add puts ordinal n in the set.
func (s *StudentSet) Add(n int) {
	w := n / 64
	if w >= len(*s) {
		*s = append(*s, make([]uint64, w+1-len(*s))...)
	}
	(*s)[w] |= 1 << (n % 64)
}

// Remove takes ordinal n out of the set.
func (s StudentSet) Remove(n int) {
	if w := n / 64; w < len(s) {
		s[w] &^= 1 << (n % 64)
	}
}

// Union adds every member of o to s.
func (s *StudentSet) Union(o StudentSet) {
	if len(o) > len(*s) {
		*s = append(*s, make([]uint64, len(o)-len(*s))...)
	}
	for i, w := range o {
		(*s)[i] |= w
	}
}

// Len returns the number of members.
func (s StudentSet) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// IntersectionLen returns the number of members s and o have in common.
func (s StudentSet) IntersectionLen(o StudentSet) int {
	n := 0
	for i := range min(len(s), len(o)) {
		n += bits.OnesCount64(s[i] & o[i])
	}
	return n
}
