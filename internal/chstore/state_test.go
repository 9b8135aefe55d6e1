package chstore

import "testing"

func TestStateCacheKeepsTheNewestAndDropsTheLeastRecentlyUsed(t *testing.T) {
	var c stateCache
	c.put("a", &state{shard: "s1", seq: 5, bytes: 100})
	c.put("a", &state{shard: "s1", seq: 4, bytes: 100})
	if st := c.get("a"); st.seq != 5 {
		t.Errorf("an older state replaced a newer one: seq %d", st.seq)
	}
	c.put("a", &state{shard: "s2", seq: 3, bytes: 100})
	if st := c.get("a"); st.shard != "s2" {
		t.Errorf("the state of the group's new shard was not kept")
	}
	c.put("b", &state{shard: "s1", seq: 1, bytes: stateCacheBytes / 2})
	c.get("a") // a is used after b
	c.put("c", &state{shard: "s1", seq: 1, bytes: stateCacheBytes / 2})
	if c.get("b") != nil || c.get("a") == nil || c.get("c") == nil {
		t.Errorf("over the bound, the least recently used group goes: a %v b %v c %v", c.get("a") != nil, c.get("b") != nil, c.get("c") != nil)
	}
	if c.bytes != 100+stateCacheBytes/2 {
		t.Errorf("bytes %d, want %d", c.bytes, 100+stateCacheBytes/2)
	}
}

// TestStateCacheKeepsCounts: of two states as new, the one with the
// students' counts is kept.
func TestStateCacheKeepsCounts(t *testing.T) {
	var c stateCache
	c.put("a", &state{shard: "s1", seq: 5, bytes: 100})
	c.put("a", &state{shard: "s1", seq: 5, bytes: 300, withCounts: true})
	c.put("a", &state{shard: "s1", seq: 5, bytes: 100})
	if st := c.get("a"); !st.withCounts || c.bytes != 300 {
		t.Errorf("kept %+v (%d bytes in all), want the state with counts", st, c.bytes)
	}
}
