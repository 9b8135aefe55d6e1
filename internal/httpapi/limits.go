package httpapi

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Rate is a rate limit: at most N requests per Per, with bursts of up to N.
// The zero Rate is no limit.
type Rate struct {
	N   int
	Per time.Duration
}

// ParseRate reads "60/m" (also /s, /h), or "off" for no limit.
func ParseRate(s string) (Rate, error) {
	if s == "off" || s == "0" {
		return Rate{}, nil
	}
	n, unit, ok := strings.Cut(s, "/")
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	count, err := strconv.Atoi(n)
	if !ok || per == 0 || err != nil || count < 1 {
		return Rate{}, fmt.Errorf("invalid rate %q: expected N/s, N/m or N/h with N at least 1, or off", s)
	}
	return Rate{N: count, Per: per}, nil
}

// Set reads a rate for a command-line flag.
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err == nil {
		*r = v
	}
	return err
}

func (r Rate) String() string {
	if r.N == 0 {
		return "off"
	}
	return fmt.Sprintf("%d/%s", r.N, map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per])
}

// Limits are the service's rate limits.
type Limits struct {
	Key   Rate // per report key
	Token Rate // per platform token
	// FailedAuth limits failed key and token checks per client address;
	// past it, every request of that address that needs a key or a token
	// is refused before the check, so that the answer tells nothing of the
	// key.
	FailedAuth Rate
	// ClientIPHeader names a header set by a trusted proxy that holds the
	// client's address (its last value); empty: the connection's peer.
	ClientIPHeader string
}

// DefaultLimits are the documented defaults.
var DefaultLimits = Limits{
	Key:        Rate{N: 60, Per: time.Minute},
	Token:      Rate{N: 6000, Per: time.Minute},
	FailedAuth: Rate{N: 20, Per: time.Minute},
}

// limiter holds one token bucket per name (a key, a token, an address).
type limiter struct {
	rate    Rate
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newLimiter(r Rate) *limiter {
	return &limiter{rate: r, buckets: map[string]*rate.Limiter{}}
}

// maxBuckets is how many buckets a limiter keeps: past it, it forgets the
// full ones (a full bucket is the same as a new one), then any.
const maxBuckets = 10_000

// quota is the state of one bucket, as the RateLimit headers tell it.
type quota struct {
	limit, remaining int
	reset            time.Duration // until the bucket is full again
	retryAfter       time.Duration // until the next request is allowed; 0: allowed now
}

// take spends one request of name's bucket, if it has one, and returns the
// bucket's state after. With spend false it only looks.
func (l *limiter) take(name string, now time.Time, spend bool) (q quota, ok bool) {
	if l.rate.N == 0 {
		return quota{}, true
	}
	every := rate.Every(l.rate.Per / time.Duration(l.rate.N))
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[name]
	if b == nil && !spend {
		// Nothing spent yet: a full budget, and no bucket to keep.
		return quota{limit: l.rate.N, remaining: l.rate.N}, true
	}
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			for k, old := range l.buckets {
				if old.TokensAt(now) >= float64(l.rate.N) {
					delete(l.buckets, k)
				}
			}
		}
		// Still full: forget a tenth at random (they refill early) rather
		// than grow without bound under a flood of names, or scan the
		// buckets at every new one.
		for k := range l.buckets {
			if len(l.buckets) < maxBuckets*9/10 {
				break
			}
			delete(l.buckets, k)
		}
		b = rate.NewLimiter(every, l.rate.N)
		l.buckets[name] = b
	}
	if spend {
		ok = b.AllowN(now, 1)
	} else {
		ok = b.TokensAt(now) >= 1
	}
	tokens := b.TokensAt(now)
	q = quota{limit: l.rate.N, remaining: max(0, int(math.Floor(tokens)))}
	q.reset = time.Duration((float64(l.rate.N) - tokens) / float64(every) * float64(time.Second))
	if !ok {
		q.retryAfter = time.Duration((1 - tokens) / float64(every) * float64(time.Second))
	}
	return q, ok
}

// setHeaders writes q as the RateLimit headers (and Retry-After when the
// request is refused), in whole seconds rounded up.
func (q quota) setHeaders(h http.Header) {
	if q.limit == 0 {
		return
	}
	h.Set("RateLimit-Limit", strconv.Itoa(q.limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(q.remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(seconds(q.reset)))
	if q.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(max(1, seconds(q.retryAfter))))
	}
}

func seconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// limiters are the server's limiters.
type limiters struct {
	key, token, failedAuth *limiter
	ipHeader               string
}

func newLimiters(l Limits) *limiters {
	return &limiters{key: newLimiter(l.Key), token: newLimiter(l.Token), failedAuth: newLimiter(l.FailedAuth),
		ipHeader: http.CanonicalHeaderKey(l.ClientIPHeader)}
}

// clientAddress is where r comes from: the trusted proxy's header, else
// the connection's peer address.
func (l *limiters) clientAddress(r *http.Request) string {
	if l.ipHeader != "" {
		if values := r.Header.Values(l.ipHeader); len(values) > 0 {
			last := values[len(values)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			return strings.TrimSpace(last)
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// tooMany answers 429 with q's headers. limit names the limit in the
// metrics; what describes it to the client.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, q quota, limit, what string) {
	q.setHeaders(w.Header())
	s.metrics.RateLimited(limit)
	s.writeStatus(w, r, http.StatusTooManyRequests,
		fmt.Sprintf("Too many requests: at most %d %s; retry in %d s", q.limit, what, max(1, seconds(q.retryAfter))))
}

// screenAddress refuses a request whose address has used up its failed
// key checks; ok says whether the request may go on to the check.
func (s *Server) screenAddress(w http.ResponseWriter, r *http.Request, now time.Time) (addr string, ok bool) {
	addr = s.limits.clientAddress(r)
	if q, ok := s.limits.failedAuth.take(addr, now, false); !ok {
		s.tooMany(w, r, q, "failed_auth", fmt.Sprintf("failed key checks per %s from one address", perName(s.limits.failedAuth.rate)))
		return addr, false
	}
	return addr, true
}

// failedAuth spends one of the address's failed checks and sets the
// headers of what is left.
func (s *Server) failedAuth(w http.ResponseWriter, addr string, now time.Time) {
	q, _ := s.limits.failedAuth.take(addr, now, true)
	q.retryAfter = 0
	q.setHeaders(w.Header())
}

// spend takes one request from the bucket of a key or token that checked
// out, answering 429 when it is empty. limit is "key" or "token".
func (s *Server) spend(w http.ResponseWriter, r *http.Request, l *limiter, name, limit string, now time.Time) bool {
	q, ok := l.take(name, now, true)
	if !ok {
		s.tooMany(w, r, q, limit, fmt.Sprintf("requests per %s for one %s", perName(l.rate), limit))
		return false
	}
	q.setHeaders(w.Header())
	return true
}

func perName(r Rate) string {
	return map[time.Duration]string{time.Second: "second", time.Minute: "minute", time.Hour: "hour"}[r.Per]
}
