package rollup

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math/bits"
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
		b, next = appendStudent(b, next, students[i].Ordinal, &students[i].Counts)
	}
	return b
}

// appendStudent appends one student's entry, next being the ordinal after
// the previous entry's, and returns the ordinal after this one; a student
// whose counts are all zeros is left out.
func appendStudent(b []byte, next, ordinal int, c *analytics.Counts) ([]byte, int) {
	var mask byte
	for m, v := range c {
		if v != 0 {
			mask |= 1 << m
		}
	}
	if mask == 0 {
		return b, next
	}
	b = binary.AppendUvarint(b, uint64(ordinal-next))
	b = append(b, mask)
	for _, v := range c {
		if v != 0 {
			b = binary.AppendVarint(b, v)
		}
	}
	return b, ordinal + 1
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

// AddToRow returns the encoded row with add's students (by ascending
// ordinal) added, encoded anew; row may be nil (no row yet). A student
// whose counts come to all zeros is left out. Students that add does not
// name are copied as they are, not decoded: a write of a few students
// costs the row's bytes and one allocation.
func AddToRow(row []byte, add []StudentCounts) ([]byte, error) {
	return mergeToRow(row, add, (*analytics.Counts).Add)
}

// MergeToRow is how a write changes a row of span: AddToRow, or for the
// students' last days (SpanLast), each metric's later day kept.
func MergeToRow(span analytics.Span, row []byte, add []StudentCounts) ([]byte, error) {
	if span == analytics.SpanLast {
		return mergeToRow(row, add, laterDays)
	}
	return AddToRow(row, add)
}

// mergeToRow is AddToRow with merge in place of the sum.
func mergeToRow(row []byte, add []StudentCounts, merge func(c, add *analytics.Counts)) ([]byte, error) {
	if row == nil {
		return AppendCounts(nil, add), nil
	}
	if len(row) == 0 || row[0] != countsFormat {
		return nil, ErrCorruptCounts
	}
	out := make([]byte, 1, len(row)+len(add)*16)
	out[0] = countsFormat
	b, next, outNext := row[1:], 0, 0
	for len(b) > 0 {
		gap, n := binary.Uvarint(b)
		if n <= 0 || gap > 1<<31 {
			return nil, ErrCorruptCounts
		}
		size, err := entrySize(b[n:])
		if err != nil {
			return nil, err
		}
		ordinal, body := next+int(gap), b[n:n+size]
		b, next = b[n+size:], ordinal+1
		for len(add) > 0 && add[0].Ordinal < ordinal {
			out, outNext = appendStudent(out, outNext, add[0].Ordinal, &add[0].Counts)
			add = add[1:]
		}
		if len(add) > 0 && add[0].Ordinal == ordinal {
			c := decodeEntry(body)
			merge(&c, &add[0].Counts)
			out, outNext = appendStudent(out, outNext, ordinal, &c)
			add = add[1:]
			continue
		}
		// Untouched: the same bytes, behind its gap from the new neighbour.
		out = binary.AppendUvarint(out, uint64(ordinal-outNext))
		out, outNext = append(out, body...), ordinal+1
	}
	for i := range add {
		out, outNext = appendStudent(out, outNext, add[i].Ordinal, &add[i].Counts)
	}
	return out, nil
}

// AddRows returns the encoded row with the encoded row add (both as
// AppendCounts writes them) added: what a database that merges rows in
// its upsert computes, so that a write need not read the row first. It
// is the reference that SQLite's add_student_counts, written in C
// (internal/sqlstore/db_functions.c), is tested against.
func AddRows(row, add []byte) ([]byte, error) {
	students, err := DecodeCounts(add)
	if err != nil {
		return nil, err
	}
	return AddToRow(row, students)
}

// entrySize returns the length of the entry body at the start of b: its
// mask byte and one varint per bit set.
func entrySize(b []byte) (int, error) {
	if len(b) == 0 || b[0]>>analytics.NumMetrics != 0 {
		return 0, ErrCorruptCounts
	}
	n := 1
	for range bits.OnesCount8(b[0]) {
		_, k := binary.Varint(b[n:])
		if k <= 0 {
			return 0, ErrCorruptCounts
		}
		n += k
	}
	return n, nil
}

// decodeEntry returns the counts of an entry body that entrySize
// measured (and so checked).
func decodeEntry(body []byte) analytics.Counts {
	var c analytics.Counts
	mask, b := body[0], body[1:]
	for m := range c {
		if mask&(1<<m) != 0 {
			v, n := binary.Varint(b)
			c[m], b = v, b[n:]
		}
	}
	return c
}
