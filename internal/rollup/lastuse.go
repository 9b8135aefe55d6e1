package rollup

import (
	"bytes"

	"groupanalytics/internal/analytics"
)

// A student's last days of use are counts in which each metric's "count"
// is the code of the last day the student used it (analytics.LastDayCode),
// or 0 for never. A write keeps the later of two days; nothing is added
// up. They are kept as events arrive, so that a list of who stopped reads
// them without a year of days:
//   - by ClickHouse, as rows of student counts of span SpanLast (key 0),
//     one per chunk of ordinals, encoded as any row of counts;
//   - by the SQL stores, on each student's enrolment (EncodeLastDays),
//     written by the statement that enrols a new student: a row per chunk
//     cost PostgreSQL a row read and written more per write.

// LastDaysOf returns the last days of use that events show, by group and
// student id.
func LastDaysOf(events []analytics.Event) map[[2]string]*analytics.Counts {
	last := map[[2]string]*analytics.Counts{}
	for _, e := range events {
		k := [2]string{e.GroupID, e.StudentID}
		c := last[k]
		if c == nil {
			c = new(analytics.Counts)
			last[k] = c
		}
		noteLastDay(c, e)
	}
	return last
}

// noteLastDay keeps e's day in c if it is the later of e's metric.
func noteLastDay(c *analytics.Counts, e analytics.Event) {
	c[e.Metric] = max(c[e.Metric], analytics.LastDayCode(e.Day))
}

// TakeLastDays takes the students' last days out of the delta and returns
// them by group and student id: what a SQL store writes on enrolments
// rather than in rows of counts.
func (d *Delta) TakeLastDays() map[[2]string]*analytics.Counts {
	last := map[[2]string]*analytics.Counts{}
	for k, c := range d.Students {
		if k.Span == analytics.SpanLast {
			last[[2]string{k.GroupID, k.StudentID}] = c
			delete(d.Students, k)
		}
	}
	return last
}

// EncodeLastDays returns the encoding of one student's last days, a row
// of counts of the student alone (at ordinal 0); nil when they have none.
func EncodeLastDays(c analytics.Counts) []byte {
	b := AppendCounts(nil, []StudentCounts{{Counts: c}})
	if len(b) == 1 {
		return nil
	}
	return b
}

// DecodeLastDays reads what EncodeLastDays wrote; nil is no use at all.
func DecodeLastDays(b []byte) (analytics.Counts, error) {
	var c analytics.Counts
	if b == nil {
		return c, nil
	}
	err := decodeCounts(b, func(int) *analytics.Counts { return &c })
	return c, err
}

// MergeLastDays returns the encoded last days stored with add's later days
// kept, and whether that changed them.
func MergeLastDays(stored []byte, add *analytics.Counts) ([]byte, bool, error) {
	c, err := DecodeLastDays(stored)
	if err != nil {
		return nil, false, err
	}
	laterDays(&c, add)
	b := EncodeLastDays(c)
	return b, !bytes.Equal(b, stored), nil
}

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
