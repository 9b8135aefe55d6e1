package rollup

import (
	"cmp"
	"encoding/binary"
	"slices"

	"groupanalytics/internal/analytics"
)

// PackedSpans are the spans a district's answers read of a school: the
// index of Packed.
var PackedSpans = [...]analytics.Span{analytics.SpanDay, analytics.SpanMonth, analytics.SpanWeek}

// Packed is a group's rollup rows, by span (PackedSpans' index),
// ascending by key: their keys, searched, and the rows encoded one after
// another (appendPacked), row j from at[j]. Bytes rather than
// analytics.GroupRollup: a third of the memory, nothing for the collector
// to scan, and a school's rows of a range read from one run of memory,
// where a first answer of a district of 1,000 schools waited on memory
// for each row of a map.
type Packed [len(PackedSpans)]struct {
	keys []analytics.Day
	at   []uint32 // len(keys)+1 offsets into data
	data []byte
}

// Pack encodes rows as p's of span index i, sorting them by key, and
// returns about what they cost kept.
func (p *Packed) Pack(i int, rows []analytics.GroupRollup) int {
	slices.SortFunc(rows, func(a, b analytics.GroupRollup) int { return cmp.Compare(a.Key, b.Key) })
	var data []byte
	keys, at := make([]analytics.Day, len(rows)), make([]uint32, len(rows)+1)
	for j := range rows {
		keys[j], at[j] = rows[j].Key, uint32(len(data))
		data = appendPacked(data, &rows[j])
	}
	at[len(rows)] = uint32(len(data))
	p[i].keys, p[i].at, p[i].data = keys, at, slices.Clone(data)
	return len(data) + 8*len(rows)
}

// Each decodes p's rows of each of segs into r in turn, passing each to
// each with its segment's index. It reports false, passing none, when a
// segment is of a span not packed.
func (p *Packed) Each(segs []analytics.Segment, r *analytics.GroupRollup, each func(seg int)) bool {
	for _, seg := range segs {
		if !slices.Contains(PackedSpans[:], seg.Span) {
			return false
		}
	}
	for i, seg := range segs {
		span := &p[slices.Index(PackedSpans[:], seg.Span)]
		from, _ := slices.BinarySearch(span.keys, seg.Keys.First)
		to, _ := slices.BinarySearch(span.keys, seg.Keys.Last+1)
		if from == to {
			continue // also a span without rows, never packed
		}
		for j, data := from, span.data[span.at[from]:span.at[to]]; j < to; j++ {
			r.Key = span.keys[j]
			data = decodePacked(data, r)
			each(i)
		}
	}
	return true
}

// appendPacked appends r's counts (varints) and its two sets (a count of
// words, then the words) to b.
func appendPacked(b []byte, r *analytics.GroupRollup) []byte {
	for _, c := range r.Counts {
		b = binary.AppendVarint(b, c)
	}
	for _, set := range []analytics.StudentSet{r.LiveLectureUsers, r.ChatUsers} {
		b = binary.AppendUvarint(b, uint64(len(set)))
		for _, w := range set {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	return b
}

// decodePacked decodes the row appendPacked wrote at the start of data
// into r, its sets in their arrays of before, and returns the rest of
// data.
func decodePacked(data []byte, r *analytics.GroupRollup) []byte {
	for m := range r.Counts {
		c, n := binary.Varint(data)
		r.Counts[m], data = c, data[n:]
	}
	for _, set := range []*analytics.StudentSet{&r.LiveLectureUsers, &r.ChatUsers} {
		l, n := binary.Uvarint(data)
		data = data[n:]
		*set = (*set)[:0]
		for range l {
			*set = append(*set, binary.LittleEndian.Uint64(data))
			data = data[8:]
		}
	}
	return data
}
