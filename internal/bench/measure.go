package bench

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Server is a groupanalytics serve process: the one under measurement,
// or one that a test of the binary starts.
type Server struct {
	Cmd  *exec.Cmd
	Base string // http://host:port
}

// StartServer starts the binary's serve on a free loopback port, with
// args naming its stores and settings, and waits until it is ready.
func StartServer(binary string, args []string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", addr, "--log-level", "warn"}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	s := &Server{Cmd: cmd, Base: "http://" + addr}
	for range 400 {
		if resp, err := http.Get(s.Base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.Stop()
	return nil, errors.New("the server did not become ready")
}

// productionArgs are the server's flags as in production: rate limits,
// set too high to refuse anything, and metrics.
var productionArgs = []string{"--key-rate-limit", "1000000/s", "--token-rate-limit", "1000000/s", "--failed-auth-limit", "1000000/s",
	"--metrics-addr", "127.0.0.1:0"}

// startServer starts the server as in production, with rate limits (too
// high to refuse anything) and metrics, and with a warehouse directory
// when the warehouse is measured; it returns the server, its arguments,
// that directory, and what stops it and removes the directory.
func startServer(cfg Config, serverArgs []string) (srv *Server, prodArgs []string, warehouseDir string, stop func(), err error) {
	prodArgs = slices.Concat(serverArgs, productionArgs)
	removeDir := func() {}
	if cfg.Warehouse != "" {
		if warehouseDir, err = os.MkdirTemp("", "groupanalytics-bench-warehouse-"); err != nil {
			return nil, nil, "", nil, err
		}
		if !cfg.Keep {
			removeDir = func() { os.RemoveAll(warehouseDir) }
		}
		prodArgs = append(prodArgs, warehouseArgs(warehouseDir)...)
	}
	if srv, err = StartServer(cfg.Binary, prodArgs); err != nil {
		removeDir()
		return nil, nil, "", nil, err
	}
	return srv, prodArgs, warehouseDir, func() { srv.Stop(); removeDir() }, nil
}

// Stop stops the server gracefully (SIGTERM), or kills it after 30 s.
func (s *Server) Stop() {
	s.Cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.Cmd.Process.Kill()
	}
}

// memory reads a figure of the server's memory from /proc, in bytes:
// VmHWM, the high-water mark of resident memory, or VmRSS, what it holds.
func (s *Server) memory(field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// client asks for answers as the scenario says: with compression off, Go
// would ask for gzip of its own accord and undo it unseen.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}, Timeout: 5 * time.Minute}

// newRequest is the report request of sc.
func newRequest(base, key string, sc scenario) (*http.Request, error) {
	req, err := http.NewRequest("POST", base+"/api/groups/"+sc.endpoint+"?"+sc.query(), nil)
	if err != nil {
		return nil, err
	}
	setCredential(req, key)
	if sc.acceptEncoding != "" {
		// Set by hand, so that the transport leaves the body as sent.
		req.Header.Set("Accept-Encoding", sc.acceptEncoding)
	}
	return req, nil
}

// request makes one report request and returns its body as sent, and
// its Content-Encoding.
func request(base, key string, sc scenario) ([]byte, string, error) {
	req, err := newRequest(base, key, sc)
	if err != nil {
		return nil, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: status %d: %s", sc.name, resp.StatusCode, body)
	}
	return body, resp.Header.Get("Content-Encoding"), err
}

// timedRequest asks sc as request does and reads the answer to its end
// without keeping it, as curl -o /dev/null would: the answer was checked
// once already, and keeping 55 MB in this process, the server's too, would
// count the growth of the client's buffer in the server's time.
func timedRequest(base, key string, sc scenario) error {
	req, err := newRequest(base, key, sc)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("%s: status %d: %s", sc.name, resp.StatusCode, body)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// decode undoes a Content-Encoding.
func decode(body []byte, encoding string) ([]byte, error) {
	switch encoding {
	case "":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		return io.ReadAll(zr)
	}
	return nil, fmt.Errorf("answer in an unknown Content-Encoding %q", encoding)
}

// measure times sequential requests, then the throughput of concurrent
// clients, and returns the figures with the answer.
func measure(base, key string, sc scenario, cfg Config) (ReportResult, answer, error) {
	rr := ReportResult{Name: sc.name}
	body, encoding, err := request(base, key, sc) // warm-up, and the answer
	if err != nil {
		return rr, nil, err
	}
	rr.Bytes, rr.Encoding = len(body), encoding
	if body, err = decode(body, encoding); err != nil {
		return rr, nil, err
	}
	got, n, err := parseAnswer(body)
	if err != nil {
		return rr, nil, err
	}
	rr.Reports = n
	var durations []float64
	for range cfg.Requests {
		start := time.Now()
		if err := timedRequest(base, key, sc); err != nil {
			return rr, nil, err
		}
		durations = append(durations, ms(time.Since(start)))
	}
	rr.P50, rr.P95, rr.P99 = percentile(durations, 50), percentile(durations, 95), percentile(durations, 99)
	var count int64
	var mu sync.Mutex
	var firstErr error
	deadline := time.Now().Add(cfg.Throughput)
	start := time.Now()
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := timedRequest(base, key, sc); err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				count++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rr.RequestsPerS = float64(count) / time.Since(start).Seconds()
	return rr, got, firstErr
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile returns the nearest-rank percentile p of values.
func percentile(values []float64, p int) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

// parseAnswer reduces a report response to comparable values. Periods are
// keyed by their first day; weeks and months by their calendar bucket.
func parseAnswer(body []byte) (answer, int, error) {
	var resp struct {
		Reports []struct {
			StartDate       string          `json:"startDate"`
			StudentID       string          `json:"studentId"`
			NumStudentsUsed json.RawMessage `json:"numStudentsUsed"`
			Data            []struct {
				Value *int64 `json:"value"`
			} `json:"data"`
		} `json:"reports"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, 0, err
	}
	a := answer{}
	for _, r := range resp.Reports {
		var values []int64
		for _, m := range r.Data {
			values = append(values, hiddenAs(m.Value))
		}
		if r.NumStudentsUsed != nil {
			var n *int64
			if err := json.Unmarshal(r.NumStudentsUsed, &n); err != nil {
				return nil, 0, err
			}
			values = append(values, hiddenAs(n))
		}
		a[r.StartDate[:10]+"|"+r.StudentID] = values
	}
	return a, len(resp.Reports), nil
}

// hiddenAs reads a figure, -1 for one a minCellSize hides (null).
func hiddenAs(v *int64) int64 {
	if v == nil {
		return -1
	}
	return *v
}

// sameShown compares an answer that hides figures with one that does not,
// in the figures it shows, and says how many it hides.
func sameShown(hiding, all answer) (same bool, hidden int) {
	if len(hiding) != len(all) {
		return false, 0
	}
	for k, got := range hiding {
		want := all[k]
		if len(got) != len(want) {
			return false, 0
		}
		for i, v := range got {
			if v == -1 {
				hidden++
			} else if v != want[i] {
				return false, 0
			}
		}
	}
	return true, hidden
}

// sameAnswer compares the service's answer with the baseline's, where the
// baseline leaves out the rows that are all zeros.
func sameAnswer(service, baseline answer) bool {
	for k, want := range baseline {
		if !slices.Equal(service[k], want) {
			return false
		}
	}
	for k, got := range service {
		if _, ok := baseline[k]; !ok && slices.ContainsFunc(got, func(v int64) bool { return v != 0 }) {
			return false
		}
	}
	return true
}
