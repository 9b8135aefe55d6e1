package rollup

import "groupanalytics/internal/analytics"

// A group's students' last days of use are stored as rows of student
// counts of span SpanLast (key 0), one per chunk of ordinals, encoded as
// any row of counts: each metric's "count" is the code of the last day
// the student used it (analytics.LastDayCode), or 0 for never. A write
// keeps the later of two days (MergeToRow); nothing is added up. They are
// kept as events arrive, so that a list of who stopped reads a few rows,
// not a year of days.

// laterDays keeps in c, metric by metric, the later of its day and add's.
func laterDays(c, add *analytics.Counts) {
	for m := range c {
		c[m] = max(c[m], add[m])
	}
}

// ForgetBefore returns the entry of last days with every day before
// first forgotten (a retention cut): what is left of the student's use
// once their usage of those days is gone.
func ForgetBefore(c analytics.Counts, first analytics.Day) analytics.Counts {
	cut := analytics.LastDayCode(first)
	for m := range c {
		if c[m] < cut {
			c[m] = 0
		}
	}
	return c
}

// LastDays gathers the students' last days of a group from their rows of
// counts of each day: what the rows of last days hold when they are made
// anew (a migration, a repair) rather than kept by writes.
type LastDays struct {
	chunks map[int][]analytics.Counts // by chunk, then by ordinal within it
}

// AddDay takes in the row of counts of chunk on day.
func (l *LastDays) AddDay(day analytics.Day, chunk int, row []byte) error {
	students, err := DecodeCounts(row)
	if err != nil {
		return err
	}
	if l.chunks == nil {
		l.chunks = map[int][]analytics.Counts{}
	}
	last := l.chunks[chunk]
	if last == nil {
		last = make([]analytics.Counts, ChunkStudents)
		l.chunks[chunk] = last
	}
	code := analytics.LastDayCode(day)
	for _, sc := range students {
		c := &last[sc.Ordinal%ChunkStudents]
		for m, v := range sc.Counts {
			if v != 0 {
				c[m] = max(c[m], code)
			}
		}
	}
	return nil
}

// Rows returns the encoded rows of last days, by chunk: none for a chunk
// without a student's day.
func (l *LastDays) Rows() map[int][]byte {
	rows := map[int][]byte{}
	for chunk, counts := range l.chunks {
		students := make([]StudentCounts, 0, len(counts))
		for i, c := range counts {
			students = append(students, StudentCounts{Ordinal: chunk*ChunkStudents + i, Counts: c})
		}
		if b := AppendCounts(nil, students); len(b) > 1 {
			rows[chunk] = b
		}
	}
	return rows
}
