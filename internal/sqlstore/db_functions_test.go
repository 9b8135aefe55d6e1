package sqlstore

import (
	"bytes"
	"context"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/rollup"
)

// TestSQLiteFunctionsMatchRollup: SQLite's add_student_counts and
// union_students (db_functions.c) give what rollup.AddRows and
// rollup.UnionSets give, byte for byte, and fail where AddRows fails: on
// random rows (ordinals near and far apart, counts small, negative and
// huge, students whose counts add up to zeros), on no stored row, and on
// the same rows cut short, lengthened or with a byte changed.
func TestSQLiteFunctionsMatchRollup(t *testing.T) {
	s := openTestSQLite(t)
	rng := rand.New(rand.NewPCG(1, 2))
	randomCounts := func() analytics.Counts {
		var c analytics.Counts
		for m := range c {
			switch rng.IntN(4) {
			case 0:
				c[m] = rng.Int64N(5)
			case 1:
				c[m] = rng.Int64N(1000) - 500
			case 2:
				c[m] = int64(rng.Uint64())
			}
		}
		return c
	}
	randomStudents := func() []rollup.StudentCounts {
		var students []rollup.StudentCounts
		ordinal := -1
		for range rng.IntN(12) {
			ordinal += 1 + rng.IntN([]int{1, 3, 300, 1 << 20}[rng.IntN(4)])
			students = append(students, rollup.StudentCounts{Ordinal: ordinal, Counts: randomCounts()})
		}
		return students
	}
	// added returns students to add to stored ones: some of theirs, some
	// taking them back to zeros, and some new.
	added := func(stored []rollup.StudentCounts) []rollup.StudentCounts {
		byOrdinal := map[int]analytics.Counts{}
		for _, st := range stored {
			switch rng.IntN(3) {
			case 0:
				byOrdinal[st.Ordinal] = randomCounts()
			case 1:
				var back analytics.Counts
				for m, v := range st.Counts {
					back[m] = -v
				}
				byOrdinal[st.Ordinal] = back
			}
		}
		for _, st := range randomStudents() {
			byOrdinal[st.Ordinal] = st.Counts
		}
		var students []rollup.StudentCounts
		for _, n := range slices.Sorted(maps.Keys(byOrdinal)) {
			students = append(students, rollup.StudentCounts{Ordinal: n, Counts: byOrdinal[n]})
		}
		return students
	}
	damaged := func(b []byte) []byte {
		b = slices.Clone(b)
		switch rng.IntN(5) {
		case 0:
			if len(b) > 0 {
				b = b[:rng.IntN(len(b))]
			}
		case 1, 2:
			if len(b) > 0 {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
		case 3:
			b = append(b, byte(rng.Uint32()))
		}
		return b
	}
	failures := 0
	for i := range 4000 {
		stored := randomStudents()
		row, add := rollup.AppendCounts(nil, stored), rollup.AppendCounts(nil, added(stored))
		switch {
		case i%10 == 0:
			row = nil // no row stored
		case i%3 == 1:
			row = damaged(row)
		case i%3 == 2:
			add = damaged(add)
		}
		if addsAsRollupDoes(t, s, row, add) {
			failures++
		}
	}
	if failures < 500 || failures > 2500 {
		t.Errorf("%d of 4,000 rows were found corrupt: too few or too many to tell", failures)
	}
	for range 1000 {
		a, b := make([]byte, rng.IntN(40)), make([]byte, rng.IntN(40))
		for _, set := range [][]byte{a, b} {
			for j := range set {
				set[j] = byte(rng.Uint32())
			}
		}
		var got []byte
		if err := s.read.QueryRow(`SELECT union_students(?, ?)`, a, b).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := rollup.UnionSets(a, b); !bytes.Equal(got, want) {
			t.Fatalf("union_students(%x, %x) = %x; rollup.UnionSets gave %x", a, b, got, want)
		}
	}
}

// FuzzSQLiteAddStudentCounts: for any two byte strings, add_student_counts
// gives what rollup.AddRows gives, or fails where it fails (go test -fuzz,
// with -asan to check db_functions.c's reads and writes too).
func FuzzSQLiteAddStudentCounts(f *testing.F) {
	row := rollup.AppendCounts(nil, []rollup.StudentCounts{{Ordinal: 3, Counts: analytics.Counts{1, 2}}, {Ordinal: 300, Counts: analytics.Counts{0, -5, 1 << 40}}})
	add := rollup.AppendCounts(nil, []rollup.StudentCounts{{Ordinal: 3, Counts: analytics.Counts{-1, -2}}, {Ordinal: 7, Counts: analytics.Counts{6: 9}}})
	f.Add(row, add)
	f.Add([]byte{}, add)
	f.Add(row, []byte{1, 0x80})
	s, err := Open(context.Background(), filepath.Join(f.TempDir(), "store.db"), Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, row, add []byte) { addsAsRollupDoes(t, s, row, add) })
}

// addsAsRollupDoes fails t unless add_student_counts(row, add) gives what
// rollup.AddRows gives, or fails as corrupt where it fails, and says
// whether the rows were found corrupt.
func addsAsRollupDoes(t *testing.T, s *Store, row, add []byte) (corrupt bool) {
	t.Helper()
	want, wantErr := rollup.AddRows(row, add)
	var got []byte
	err := s.read.QueryRow(`SELECT add_student_counts(?, ?)`, row, add).Scan(&got)
	switch {
	case wantErr != nil && err == nil:
		t.Fatalf("add_student_counts(%x, %x) = %x; rollup.AddRows failed: %v", row, add, got, wantErr)
	case wantErr == nil && err != nil:
		t.Fatalf("add_student_counts(%x, %x) failed: %v; rollup.AddRows gave %x", row, add, err, want)
	case err != nil && !strings.Contains(err.Error(), rollup.ErrCorruptCounts.Error()):
		t.Fatalf("add_student_counts(%x, %x) failed with %q", row, add, err)
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("add_student_counts(%x, %x) = %x; rollup.AddRows gave %x", row, add, got, want)
	}
	return err != nil
}
