package cache

import "testing"

func TestVersioned(t *testing.T) {
	c := New[string](10)
	c.Put("a", "1", "a1", 4)
	if v, ok := c.Get("a", "1"); !ok || v != "a1" {
		t.Errorf("a@1: %q %v", v, ok)
	}
	if _, ok := c.Get("a", "2"); ok {
		t.Error("a@2 found: a value is found only under its version")
	}
	c.Put("b", "1", "b1", 4)
	c.Get("a", "1") // a is now the most recently used
	c.Put("c", "1", "c1", 4)
	if _, ok := c.Get("b", "1"); ok {
		t.Error("b kept past the limit, though the least recently used")
	}
	if _, ok := c.Get("a", "1"); !ok {
		t.Error("a let go, though used more recently than b")
	}
	c.Put("a", "2", "a2", 2) // replaces a@1
	if v, ok := c.Get("a", "2"); !ok || v != "a2" || c.Cost() != 6 {
		t.Errorf("a@2: %q %v, cost %d", v, ok, c.Cost())
	}
	c.Put("d", "1", "d1", 11)
	if _, ok := c.Get("d", "1"); ok || c.Cost() != 6 {
		t.Errorf("a value over the limit was kept (cost %d)", c.Cost())
	}
}
