package rollup

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"

	"groupanalytics/internal/analytics"
)

// A group's per-student counts of one period are stored as a few rows,
// one per chunk of ChunkStudents ordinals, each row the counts of the
// chunk's students with usage, encoded by AppendCounts. A report of a
// year of 10,000 students reads a few hundred such rows rather than a row
// per student per period, and a write rewrites only the chunks of the
// students it touches.

// ChunkStudents is how many student ordinals one row of counts covers.
const ChunkStudents = 256

// ChunkOf returns the chunk of ordinal n.
func ChunkOf(n int) int { return n / ChunkStudents }

// StudentCounts is one student's counts in a row.
type StudentCounts struct {
	Ordinal int
	Counts  analytics.Counts
}

// countsFormat is the first byte of an encoded row, for the day its
// format changes.
const countsFormat = 1

// ErrCorruptCounts is returned for a row that AppendCounts did not write.
var ErrCorruptCounts = errors.New("corrupt student counts")

// AppendCounts appends the encoding of students (by ascending ordinal) to
// b: per student, the gap from the ordinal after the previous one, a byte
// with a bit set for each metric that is not zero, and those counts as
// varints: about 8 bytes a student.
func AppendCounts(b []byte, students []StudentCounts) []byte {
	b = append(b, countsFormat)
	next := 0
	for i := range students {
		s := &students[i]
		var mask byte
		for m, v := range s.Counts {
			if v != 0 {
				mask |= 1 << m
			}
		}
		if mask == 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(s.Ordinal-next))
		b = append(b, mask)
		for _, v := range s.Counts {
			if v != 0 {
				b = binary.AppendVarint(b, v)
			}
		}
		next = s.Ordinal + 1
	}
	return b
}

// decodeCounts walks the row b that AppendCounts wrote and adds each
// student's counts to the Counts that at returns for their ordinal. It is
// the inner loop of student reports: it reads one-byte varints, nearly
// all of them, without a call.
func decodeCounts(b []byte, at func(ordinal int) *analytics.Counts) error {
	if len(b) == 0 || b[0] != countsFormat {
		return ErrCorruptCounts
	}
	b = b[1:]
	next := 0
	for len(b) > 0 {
		var gap uint64
		if b[0] < 0x80 {
			gap, b = uint64(b[0]), b[1:]
		} else {
			g, n := binary.Uvarint(b)
			if n <= 0 || g > 1<<31 {
				return ErrCorruptCounts
			}
			gap, b = g, b[n:]
		}
		if len(b) == 0 {
			return ErrCorruptCounts
		}
		mask := b[0]
		b = b[1:]
		ord := next + int(gap)
		next = ord + 1
		c := at(ord)
		for m := range c {
			if mask&(1<<m) == 0 {
				continue
			}
			if len(b) > 0 && b[0] < 0x80 {
				c[m] += int64(b[0]>>1) ^ -int64(b[0]&1)
				b = b[1:]
				continue
			}
			v, n := binary.Varint(b)
			if n <= 0 {
				return ErrCorruptCounts
			}
			c[m] += v
			b = b[n:]
		}
	}
	return nil
}

// DecodeCounts reads what AppendCounts wrote.
func DecodeCounts(b []byte) ([]StudentCounts, error) {
	students := make([]StudentCounts, 0, len(b)/6)
	err := decodeCounts(b, func(ordinal int) *analytics.Counts {
		students = append(students, StudentCounts{Ordinal: ordinal})
		return &students[len(students)-1].Counts
	})
	return students, err
}

// AddCounts adds each student's counts in the encoded row b to
// totals[ordinal], growing totals as needed, and returns totals.
func AddCounts(totals []analytics.Counts, b []byte) ([]analytics.Counts, error) {
	err := decodeCounts(b, func(ordinal int) *analytics.Counts {
		if n := len(totals); ordinal >= n {
			totals = slices.Grow(totals, ordinal+1-n)[:ordinal+1]
			clear(totals[n:])
		}
		return &totals[ordinal]
	})
	return totals, err
}

// CountsKey names one row of student counts.
type CountsKey struct {
	GroupID string
	Span    analytics.Span
	Key     analytics.Day
	Chunk   int
}

// CountsRows returns what the delta adds to the rows of student counts,
// each row's students by ascending ordinal, and the rows' keys in one
// fixed order; ordinal gives each student's.
func (d *Delta) CountsRows(ordinal func(groupID, studentID string) int) ([]CountsKey, map[CountsKey][]StudentCounts) {
	rows := map[CountsKey][]StudentCounts{}
	for k, c := range d.Students {
		n := ordinal(k.GroupID, k.StudentID)
		ck := CountsKey{k.GroupID, k.Span, k.Key, ChunkOf(n)}
		rows[ck] = append(rows[ck], StudentCounts{Ordinal: n, Counts: *c})
	}
	keys := make([]CountsKey, 0, len(rows))
	for k, students := range rows {
		slices.SortFunc(students, func(a, b StudentCounts) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b CountsKey) int {
		return cmp.Or(cmp.Compare(a.GroupID, b.GroupID), cmp.Compare(a.Span, b.Span), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Chunk, b.Chunk))
	})
	return keys, rows
}

// MergeCounts returns the students of row with add added: both by
// ascending ordinal, the result too. A student whose counts come to all
// zeros is left out.
func MergeCounts(row, add []StudentCounts) []StudentCounts {
	out := make([]StudentCounts, 0, len(row)+len(add))
	i, j := 0, 0
	for i < len(row) || j < len(add) {
		var s StudentCounts
		switch {
		case j == len(add) || i < len(row) && row[i].Ordinal < add[j].Ordinal:
			s, i = row[i], i+1
		case i == len(row) || add[j].Ordinal < row[i].Ordinal:
			s, j = add[j], j+1
		default:
			s = row[i]
			s.Counts.Add(&add[j].Counts)
			i, j = i+1, j+1
		}
		if s.Counts != (analytics.Counts{}) {
			out = append(out, s)
		}
	}
	return out
}
