package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

// Firehose is how a platform sends usage as it happens: one event per
// request, from many connections at once, spread over many schools.
type Firehose struct {
	Groups   int           // schools the events go to, round robin
	Conns    int           // connections sending at once
	Duration time.Duration // how long they send
}

// FirehoseResult is what the firehose measured. Every acknowledged event
// is then looked for in its school's report.
type FirehoseResult struct {
	Groups       int     `json:"groups"`
	Connections  int     `json:"connections"`
	Seconds      float64 `json:"seconds"`
	Requests     int     `json:"requests"`
	Acknowledged int     `json:"acknowledged"`
	EventsPerSec float64 `json:"acknowledgedEventsPerSec"`
	P50          float64 `json:"p50Ms"`
	P99          float64 `json:"p99Ms"`
	Max          float64 `json:"maxMs"`
	// Refused are the 503s (the store behind or away), Failed the other
	// answers that were not 200 and the requests that got no answer.
	Refused int `json:"refused"`
	Failed  int `json:"failed"`
	// PastTimeout are the answers that came later than the server's store
	// timeout: none should.
	PastTimeout int `json:"pastStoreTimeout"`
	// CountedNotAcknowledged are events the reports count though their
	// request was not acknowledged (a refusal whose write had landed).
	CountedNotAcknowledged int `json:"countedNotAcknowledged"`
}

// summary is the line that tells the result.
func (fh FirehoseResult) summary() string {
	return fmt.Sprintf("%.0f events/s acknowledged (%d of %d requests in %.0f s), p50 %.1f ms, p99 %.1f ms, max %.0f ms; %d refused (503), %d failed, %d past the store timeout, %d counted though not acknowledged",
		fh.EventsPerSec, fh.Acknowledged, fh.Requests, fh.Seconds, fh.P50, fh.P99, fh.Max, fh.Refused, fh.Failed, fh.PastTimeout, fh.CountedNotAcknowledged)
}

// storeTimeout is the server's --store-timeout (its default).
const storeTimeout = 10 * time.Second

// firehoseGroup names the firehose's school i.
func firehoseGroup(i int) string { return fmt.Sprintf("bench-fh-%04d", i) }

// setUpFirehose creates the firehose's schools, each with a plan and a key,
// and returns their keys.
func setUpFirehose(ctx context.Context, st *stores.Stores, groups int) ([]string, error) {
	p := platform.New(st.Directory, st.Usage)
	keys := make([]string, groups)
	for i := range groups {
		id := firehoseGroup(i)
		if _, err := p.CreateGroup(ctx, id, id, "UTC"); err != nil {
			return nil, err
		}
		if _, err := p.AddPlan(ctx, id, "2000-01-01", "", 0); err != nil {
			return nil, err
		}
		var err error
		if _, keys[i], err = p.CreateKey(ctx, id, "bench"); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// firehoseSent is what the firehose's phases sent each school: the events
// acknowledged, the requests refused or failed (whose events may have
// been written all the same), and the students of the acknowledged events.
type firehoseSent struct {
	acked, refused []int
	students       [][]string
	// beyond is how many events the reports counted beyond those
	// acknowledged, at the last check.
	beyond int
}

func newFirehoseSent(groups int) *firehoseSent {
	return &firehoseSent{acked: make([]int, groups), refused: make([]int, groups), students: make([][]string, groups)}
}

// firehose sends one event per request from fh.Conns connections for
// fh.Duration, spread over the schools round robin: first, each event from
// a student new to its school; then, as long again, each from a student
// whose event the first phase stored (steady traffic). After each phase it
// checks that each school's report counts every event acknowledged for it.
func firehose(base, token string, keys []string, fh Firehose, day analytics.Day) (fresh, enrolled FirehoseResult, err error) {
	sent := newFirehoseSent(len(keys))
	fresh, err = firehosePhase(base, token, keys, fh, day, sent, "fh", func(g, n int) string { return studentID(n % 500) })
	if err != nil {
		return fresh, enrolled, err
	}
	// The first phase's students, their counts frozen: the second
	// phase's appends go past them.
	students := slices.Clone(sent.students)
	enrolled, err = firehosePhase(base, token, keys, fh, day, sent, "fe", func(g, n int) string {
		if len(students[g]) == 0 {
			return studentID(0)
		}
		return students[g][n%len(students[g])]
	})
	return fresh, enrolled, err
}

// firehosePhase is one phase of the firehose: request n sends school
// n % len(keys) its (n / len(keys))th event, from the student that student
// names, its id prefixed with idPrefix. sent keeps the count of every
// phase so far, which each school's report must match.
func firehosePhase(base, token string, keys []string, fh Firehose, day analytics.Day, sent *firehoseSent, idPrefix string,
	student func(g, n int) string) (FirehoseResult, error) {
	res := FirehoseResult{Groups: len(keys), Connections: fh.Conns}
	noon := day.Start(time.UTC).Add(12 * time.Hour)
	var mu sync.Mutex
	var latencies []float64
	var next int
	start := time.Now()
	deadline := start.Add(fh.Duration)
	var wg sync.WaitGroup
	for range fh.Conns {
		wg.Go(func() {
			conn := &firehoseConn{addr: strings.TrimPrefix(base, "http://"), token: token}
			defer conn.close()
			for time.Now().Before(deadline) {
				mu.Lock()
				n := next
				next++
				mu.Unlock()
				g := n % len(keys)
				from := student(g, n/len(keys))
				body, _ := json.Marshal([]platform.EventInput{{ID: fmt.Sprintf("%s%09d", idPrefix, n), GroupID: firehoseGroup(g),
					StudentID: from, OccurredAt: noon.Add(time.Duration(n%3600) * time.Second).Format(time.RFC3339),
					Kind: analytics.KindMessageSent, ChatType: "tutor_me"}})
				asked := time.Now()
				status, answer, err := conn.post("/v1/events", body)
				took := time.Since(asked)
				var out platform.IngestResult
				if err == nil && status == http.StatusOK {
					err = json.Unmarshal(answer, &out)
				}
				mu.Lock()
				res.Requests++
				latencies = append(latencies, ms(took))
				if took > storeTimeout {
					res.PastTimeout++
				}
				switch {
				case err == nil && status == http.StatusOK && out.Accepted == 1:
					res.Acknowledged++
					sent.acked[g]++
					sent.students[g] = append(sent.students[g], from)
				case status == http.StatusServiceUnavailable:
					res.Refused++
					sent.refused[g]++
				default:
					res.Failed++
					sent.refused[g]++ // it may have been written all the same
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.EventsPerSec = float64(res.Acknowledged) / res.Seconds
	slices.Sort(latencies)
	res.P50, res.P99 = percentile(latencies, 50), percentile(latencies, 99)
	if len(latencies) > 0 {
		res.Max = latencies[len(latencies)-1]
	}
	beyond, err := checkFirehoseCounts(base, keys, day, sent)
	if err != nil {
		return res, err
	}
	res.CountedNotAcknowledged, sent.beyond = beyond-sent.beyond, beyond
	return res, nil
}

// checkFirehoseCounts checks that every acknowledged event is in its
// school's next report, once; one whose request was refused may be there
// too, but no other. It returns how many events the reports count past
// those acknowledged.
func checkFirehoseCounts(base string, keys []string, day analytics.Day, sent *firehoseSent) (beyond int, err error) {
	sc := scenario{endpoint: "chat", r: analytics.DayRange{First: day, Last: day}}
	for g, key := range keys {
		body, _, err := request(base, key, sc)
		if err != nil {
			return 0, fmt.Errorf("firehose: %s's report: %w", firehoseGroup(g), err)
		}
		var answer struct {
			Reports []struct {
				Data []struct{ Value int }
			}
		}
		if err := json.Unmarshal(body, &answer); err != nil || len(answer.Reports) != 1 {
			return 0, fmt.Errorf("firehose: %s's report: %v: %.200s", firehoseGroup(g), err, body)
		}
		counted := answer.Reports[0].Data[0].Value
		if counted < sent.acked[g] || counted > sent.acked[g]+sent.refused[g] {
			return 0, fmt.Errorf("firehose: %s counts %d events, but %d were acknowledged and %d refused", firehoseGroup(g), counted, sent.acked[g], sent.refused[g])
		}
		beyond += counted - sent.acked[g]
	}
	return beyond, nil
}

// firehoseConn is one of the firehose's connections. It writes each
// request as bytes and reads the answer with net/http's parser, without
// net/http's client: its pool, its two goroutines a connection and their
// hand-offs cost the load generator half of a core at 4,500 requests a
// second (BENCHMARKS.md), which on a two-core machine it took from the
// server it measures. A platform's senders run on machines of their own.
type firehoseConn struct {
	addr, token string
	conn        net.Conn
	r           *bufio.Reader
	request     []byte
}

// post sends body to path and returns the answer's status and body. A
// connection that failed, or that the server closes, is dialled again
// for the next request.
func (c *firehoseConn) post(path string, body []byte) (int, []byte, error) {
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.addr)
		if err != nil {
			return 0, nil, err
		}
		c.conn, c.r = conn, bufio.NewReader(conn)
	}
	c.request = fmt.Appendf(c.request[:0], "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, c.addr, c.token, len(body))
	c.request = append(c.request, body...)
	if err := c.conn.SetDeadline(time.Now().Add(2 * storeTimeout)); err != nil {
		c.close()
		return 0, nil, err
	}
	if _, err := c.conn.Write(c.request); err != nil {
		c.close()
		return 0, nil, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		c.close()
		return 0, nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.Close {
		c.close()
	}
	return resp.StatusCode, answer, err
}

func (c *firehoseConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
