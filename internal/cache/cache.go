// Package cache keeps values by key, each labelled with the version of
// what it was made from, within a bound on their total cost: the least
// recently used go first.
package cache

import (
	"container/list"
	"sync"
)

// Versioned is a cache safe for concurrent use. A value is found only
// under the version it was put with: a caller reads the current version
// (cheaply, from where the truth is), then asks for the value of it.
type Versioned[V any] struct {
	mu    sync.Mutex
	limit int // total cost kept at most
	cost  int
	byKey map[string]*list.Element
	order list.List // most recently used first
}

type entry[V any] struct {
	key, version string
	value        V
	cost         int
}

// New returns a cache that keeps values of a total cost up to limit.
func New[V any](limit int) *Versioned[V] {
	return &Versioned[V]{limit: limit, byKey: map[string]*list.Element{}}
}

// Get returns the value kept for key if it was put with version.
func (c *Versioned[V]) Get(key, version string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		if e := el.Value.(*entry[V]); e.version == version {
			c.order.MoveToFront(el)
			return e.value, true
		}
	}
	var zero V
	return zero, false
}

// Put keeps value for key, made from version, in place of what was kept
// for key, and lets go of the least recently used values past the limit.
// A value costing more than the limit is not kept.
func (c *Versioned[V]) Put(key, version string, value V, cost int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.remove(el)
	}
	if cost > c.limit {
		return
	}
	c.byKey[key] = c.order.PushFront(&entry[V]{key, version, value, cost})
	c.cost += cost
	for c.cost > c.limit {
		c.remove(c.order.Back())
	}
}

// Cost is the total cost of what is kept.
func (c *Versioned[V]) Cost() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cost
}

func (c *Versioned[V]) remove(el *list.Element) {
	e := c.order.Remove(el).(*entry[V])
	delete(c.byKey, e.key)
	c.cost -= e.cost
}
