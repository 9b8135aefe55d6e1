package platform

import (
	"sync"
	"time"
)

// recentFor is how long a platform token that was accepted is kept: every
// event request needs it, and a firehose asks thousands of times a second;
// a second is long enough to save nearly every read and short enough for a
// token revoked by another process (the CLI) to stop working at once for a
// person's sense of time. Only answers that let a request through are
// kept: a token not accepted or a group not found is asked again, so that
// a new token or group works at once.
const recentFor = time.Second

// zoneFor is how long a group's existence and zone are kept. Kept too long
// they do no harm (see ingestGroup), and a firehose over thousands of groups
// reads each of them once a minute rather than once a second.
const zoneFor = time.Minute

// maxRecent bounds what a recent holds: past it, the expired answers go.
const maxRecent = 100_000

// recent keeps answers by key for a while.
type recent[V any] struct {
	mu      sync.Mutex
	answers map[string]recentAnswer[V]
}

type recentAnswer[V any] struct {
	value   V
	expires time.Time
}

// get returns the answer kept for key, if it has not expired at now.
func (r *recent[V]) get(key string, now time.Time) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.answers[key]
	if !ok || !now.Before(a.expires) {
		var zero V
		return zero, false
	}
	return a.value, true
}

// put keeps value for key from now on, for keep.
func (r *recent[V]) put(key string, value V, now time.Time, keep time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answers == nil {
		r.answers = map[string]recentAnswer[V]{}
	}
	if len(r.answers) >= maxRecent {
		for k, a := range r.answers {
			if !now.Before(a.expires) {
				delete(r.answers, k)
			}
		}
	}
	r.answers[key] = recentAnswer[V]{value, now.Add(keep)}
}

// forget drops the answer kept for key.
func (r *recent[V]) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.answers, key)
}

// forgetWhere drops the answers for which drop holds.
func (r *recent[V]) forgetWhere(drop func(V) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, a := range r.answers {
		if drop(a.value) {
			delete(r.answers, k)
		}
	}
}
