package chstore

import (
	"fmt"
	"testing"

	"groupanalytics/internal/writebehind"
)

func idList(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return ids
}

// TestIDSetsAgreeWithThePlacement: a set answers only for the placement
// it is as of, moves on only from it, and is bounded.
func TestIDSetsAgreeWithThePlacement(t *testing.T) {
	at := func(seq int64) writebehind.Placement {
		return writebehind.Placement{GroupID: "g", Shard: "a", Epoch: 7, Seq: seq}
	}
	sets := newIDSets()
	if _, known := sets.maybeStored(at(3), []string{"x"}); known || !sets.wanted(at(3)) {
		t.Fatal("a group without a set: known, or not wanted")
	}
	sets.load(at(3), []string{"x", "y"}, false)
	if maybe, known := sets.maybeStored(at(3), []string{"x", "z"}); !known || len(maybe) != 1 || maybe[0] != "x" {
		t.Errorf("maybe stored %v %v, want [x] known", maybe, known)
	}
	unfinished := at(3)
	unfinished.Intent = []byte(`{}`)
	for name, p := range map[string]writebehind.Placement{
		"a later write":      at(4),
		"a write unfinished": unfinished,
		"another shard":      {GroupID: "g", Shard: "b", Epoch: 7, Seq: 3},
		"another epoch":      {GroupID: "g", Shard: "a", Epoch: 8, Seq: 3},
	} {
		if _, known := sets.maybeStored(p, []string{"z"}); known {
			t.Errorf("%s: known", name)
		}
	}
	sets.written(at(3), 4, []string{"z"})
	if maybe, known := sets.maybeStored(at(4), []string{"z", "w"}); !known || len(maybe) != 1 {
		t.Errorf("after a write: %v %v, want [z] known", maybe, known)
	}
	sets.written(at(3), 5, []string{"w"}) // from a number the set is not at
	if _, known := sets.maybeStored(at(5), nil); known || !sets.wanted(at(5)) {
		t.Error("a write from another number kept the set")
	}

	sets.load(at(5), idList("g", maxGroupIDs+1), true)
	if sets.wanted(at(5)) {
		t.Error("a group too large for a set is wanted")
	}
	h := func(i int) writebehind.Placement {
		return writebehind.Placement{GroupID: fmt.Sprint("h", i), Shard: "a", Seq: 1}
	}
	last := maxKeptIDs / maxGroupIDs
	for i := range last + 1 {
		sets.load(h(i), idList(h(i).GroupID, maxGroupIDs), false)
	}
	if kept := maxKeptIDs - sets.room(); kept > maxKeptIDs || !sets.wanted(h(0)) || sets.wanted(h(last)) {
		t.Errorf("kept %d ids, want at most %d, the oldest set dropped and the newest kept", kept, maxKeptIDs)
	}
}
