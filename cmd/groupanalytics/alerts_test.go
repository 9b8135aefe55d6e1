package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The alert rules of deploy/prometheus: their unit tests, and the alerts
// the fault tests' own series fire.

// promtool returns Debian's promtool (package prometheus), or skips the
// test (fails it in CI). The rules are written for Prometheus 2.42 and
// later; its promtool is the version tried.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	switch {
	case err == nil:
		return path
	case os.Getenv("CI") != "":
		t.Fatal("promtool is required in CI: apt-get install prometheus")
	}
	t.Skip("SKIPPED: no promtool (apt-get install prometheus)")
	return ""
}

// TestAlertRules checks deploy/prometheus: the alert rules and their unit
// tests (each alert fires once its condition has held for its `for:`, and
// not before), the Grafana dashboard's queries, and that every series of
// ours they name is one the service exports.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	const dir = "../../deploy/prometheus"
	promtoolIn := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	promtoolIn(dir, "check", "rules", "alerts.yml")
	promtoolIn(dir, "test", "rules", "alerts_test.yml")
	promtoolIn(dir, "check", "config", "prometheus.yml")

	// The dashboard's queries, checked as recording rules.
	var dashboard struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, p := range dashboard.Panels {
		for j, target := range p.Targets {
			fmt.Fprintf(&rules, "      - record: panel_%d_%d\n        expr: %q\n", i, j, target.Expr)
		}
	}
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "dashboard.yml"), []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtoolIn(tmp, "check", "rules", "dashboard.yml")

	// Every series of ours named is exported: its name is in the metrics
	// package (a histogram's with its suffix).
	alerts, err := os.ReadFile(filepath.Join(dir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var exported strings.Builder
	sources, _ := filepath.Glob("../../internal/metrics/*.go")
	for _, name := range sources {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		exported.Write(src)
	}
	for _, name := range regexp.MustCompile(`groupanalytics_[a-z_]+`).FindAllString(string(alerts)+string(data), -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !strings.Contains(exported.String(), `"`+base+`"`) {
			t.Errorf("deploy/prometheus names %s, which the service does not export", name)
		}
	}
}

// metricsRecorder scrapes a serving process's metrics once a second, as
// Prometheus would, keeping the service's own series.
type metricsRecorder struct {
	addr    string
	mu      sync.Mutex
	scrapes []map[string]float64 // by series, one a second; nil: the scrape failed
	stop    chan struct{}
	done    chan struct{}
}

// recordMetrics scrapes addr once a second until the test ends.
func recordMetrics(t *testing.T, addr string) *metricsRecorder {
	r := &metricsRecorder{addr: addr, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		client := &http.Client{Timeout: 6 * time.Second} // past the probe's 5 s
		for tick := time.NewTicker(time.Second); ; {
			scrape := scrapeMetrics(client, addr)
			r.mu.Lock()
			r.scrapes = append(r.scrapes, scrape)
			r.mu.Unlock()
			select {
			case <-r.stop:
				tick.Stop()
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(r.end)
	return r
}

// end stops the scrapes.
func (r *metricsRecorder) end() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// now is the number of scrapes so far: where a fault begins. It waits
// for two that the process answered first, so that the rules see how
// things stood before the fault.
func (r *metricsRecorder) now(t *testing.T) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r.mu.Lock()
		n, answered := len(r.scrapes), 0
		for _, scrape := range r.scrapes {
			if scrape != nil {
				answered++
			}
		}
		r.mu.Unlock()
		if answered >= 2 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process answered %d of %d scrapes of its metrics in 30 s", answered, n)
		}
	}
}

// scrapeMetrics reads the service's own series (groupanalytics_*, not a
// histogram's), by series as Prometheus names them, with the up series a
// scrape adds; nil when the process does not answer.
func scrapeMetrics(client *http.Client, addr string) map[string]float64 {
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	series := map[string]float64{}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, "groupanalytics_") || strings.Contains(line, "_bucket{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		series[line[:i]] = v
	}
	if lines.Err() != nil {
		return nil
	}
	return series
}

// checkAlerts runs the alert rules with promtool over the series
// recorded, the fault from the scrape at from on: no alert fires before
// the fault, and each of want fires if the last state recorded lasts 15
// minutes, longer than any rule's `for:`; with none wanted, no page does.
func (r *metricsRecorder) checkAlerts(t *testing.T, from int, want ...string) {
	t.Helper()
	bin := promtool(t)
	r.end()
	rules, err := filepath.Abs("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	const lasting = 15 * 60 // seconds the last state is held
	n := len(r.scrapes)
	var test strings.Builder
	fmt.Fprintf(&test, "rule_files: [%q]\nevaluation_interval: 1s\ntests:\n  - interval: 1s\n    input_series:\n", rules)
	for _, name := range r.seriesNames() {
		values := make([]string, n)
		for i, scrape := range r.scrapes {
			switch v, ok := scrape[name]; {
			case ok:
				values[i] = strconv.FormatFloat(v, 'g', -1, 64)
			case name == upSeries && scrape != nil:
				values[i] = "1"
			case name == upSeries:
				values[i] = "0"
			default:
				values[i] = "_"
			}
		}
		fmt.Fprintf(&test, "      - series: '%s'\n        values: '%s %sx%d'\n", withInstance(name, r.addr), strings.Join(values, " "), values[n-1], lasting)
	}
	fmt.Fprintf(&test, "    promql_expr_test:\n")
	fmt.Fprintf(&test, "      - {expr: 'ALERTS{alertstate=\"firing\"}', eval_time: %ds, exp_samples: []}\n", max(from-1, 0))
	for _, alert := range want {
		fmt.Fprintf(&test, "      - expr: 'max by (alertname) (ALERTS{alertname=%q, alertstate=\"firing\"})'\n        eval_time: %ds\n        exp_samples: [{labels: '{alertname=%q}', value: 1}]\n",
			alert, n-1+lasting, alert)
	}
	if len(want) == 0 {
		fmt.Fprintf(&test, "      - {expr: 'ALERTS{alertstate=\"firing\", severity=\"page\"}', eval_time: %ds, exp_samples: []}\n", n-1+lasting)
	}
	file := filepath.Join(t.TempDir(), "recorded_test.yml")
	if err := os.WriteFile(file, []byte(test.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "test", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("the alerts over the series recorded (%d s, the fault from %d s on), want %v firing: %v\n%s", n, from, want, err, out)
	} else {
		t.Logf("recorded %d s of metrics (the fault from %d s on): %v fire once the last state has lasted", n, from, want)
	}
}

// seriesNames are the series any scrape had, and the process's up.
func (r *metricsRecorder) seriesNames() []string {
	names := map[string]bool{upSeries: true}
	for _, scrape := range r.scrapes {
		for name := range scrape {
			names[name] = true
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// upSeries is the series Prometheus adds for each scrape of a process: 1
// when it answered.
const upSeries = `up{job="groupanalytics"}`

// withInstance adds the instance label that Prometheus adds to a scrape's
// series.
func withInstance(series, instance string) string {
	label := fmt.Sprintf("instance=%q", instance)
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[:i+1] + label + "," + series[i+1:]
	}
	return series + "{" + label + "}"
}
