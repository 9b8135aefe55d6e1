// Package metrics holds what the service tells operators in the
// Prometheus format: requests, events, the writers, the stores, rate
// limits, the Go runtime and the build. A nil *Metrics records nothing.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"groupanalytics/internal/buildinfo"
)

// Metrics are the service's metrics, in a registry of their own.
type Metrics struct {
	registry    *prometheus.Registry
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	events      *prometheus.CounterVec
	mergedCalls prometheus.Histogram
	mergedSize  prometheus.Histogram
	retries     *prometheus.CounterVec
	storeErrors *prometheus.CounterVec
	limited     *prometheus.CounterVec
	digests     *prometheus.CounterVec
	warehouse   *prometheus.CounterVec
	whFiles     prometheus.Counter
	whFailing   *prometheus.GaugeVec
}

// New makes the metrics and registers them, with the Go runtime's, the
// process's and the build's.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groupanalytics_http_requests_total",
			Help: "HTTP requests answered, by route (the path pattern, or other), method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "groupanalytics_http_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its answer, by route and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groupanalytics_events_total",
			Help: "Events received by the platform API and import, by result: accepted, duplicate or rejected.",
		}, []string{"result"}),
		mergedCalls: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "groupanalytics_writer_merged_calls",
			Help:    "Calls (batches) merged into each write of the usage store.",
			Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128},
		}),
		mergedSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "groupanalytics_writer_merged_events",
			Help:    "Events in each write of the usage store.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groupanalytics_store_retries_total",
			Help: "Store operations tried again after a deadlock or serialization failure, by operation.",
		}, []string{"op"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groupanalytics_store_errors_total",
			Help: "Requests failed by the stores, by kind: unavailable (503) or internal (500).",
		}, []string{"kind"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groupanalytics_rate_limited_total",
			Help: "Requests refused with 429, by limit: key, token or failed_auth.",
		}, []string{"limit"}),
		digests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groupanalytics_digests_total",
			Help: "Weekly digests by what became of each try: sent, retry (refused for now, tried again later) or given_up.",
		}, []string{"result"}),
		warehouse: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groupanalytics_warehouse_runs_total",
			Help: "Warehouse deliveries' runs, by result: delivered, or failed (tried again after a backoff).",
		}, []string{"result"}),
		whFiles: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "groupanalytics_warehouse_files_total",
			Help: "Files written to warehouses, manifests included.",
		}),
		whFailing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "groupanalytics_warehouse_failing_runs",
			Help: "Runs in a row that failed, by warehouse: 0 once one delivers.",
		}, []string{"warehouse"}),
	}
	// Every series an alert counts the rate of is there from the start at
	// zero: rate() over a series that appears at 1 misses that first burst.
	zero(m.events, "accepted", "duplicate", "rejected")
	zero(m.storeErrors, "unavailable", "internal")
	zero(m.limited, "key", "token", "failed_auth")
	zero(m.digests, "sent", "retry", "given_up")
	zero(m.warehouse, "delivered", "failed")
	b := buildinfo.Get()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "groupanalytics_build_info",
		Help:        "The running build: always 1, its labels say which.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.Go},
	})
	build.Set(1)
	m.registry.MustRegister(m.requests, m.duration, m.events, m.mergedCalls, m.mergedSize, m.retries,
		m.storeErrors, m.limited, m.digests, m.warehouse, m.whFiles, m.whFailing, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// zero makes the series of each of a one-label counter's values, at zero.
func zero(c *prometheus.CounterVec, values ...string) {
	for _, v := range values {
		c.WithLabelValues(v)
	}
}

// Route makes a route's series of failed requests (500 and 503), at zero,
// so that an alert on their rate sees a route's first failures.
func (m *Metrics) Route(route, method string) {
	if m == nil {
		return
	}
	for _, status := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable} {
		m.requests.WithLabelValues(route, method, strconv.Itoa(status))
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Request counts an answered request.
func (m *Metrics) Request(route, method string, status int, took time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(took.Seconds())
}

// Events counts what became of received events.
func (m *Metrics) Events(accepted, duplicates, rejected int) {
	if m == nil {
		return
	}
	m.events.WithLabelValues("accepted").Add(float64(accepted))
	m.events.WithLabelValues("duplicate").Add(float64(duplicates))
	m.events.WithLabelValues("rejected").Add(float64(rejected))
}

// Merged records a write of the usage store that merged calls holding
// events.
func (m *Metrics) Merged(calls, events int) {
	if m == nil {
		return
	}
	m.mergedCalls.Observe(float64(calls))
	m.mergedSize.Observe(float64(events))
}

// Retried counts an operation tried again.
func (m *Metrics) Retried(op string) {
	if m != nil {
		m.retries.WithLabelValues(op).Inc()
	}
}

// StoreError counts a request the stores failed: kind is unavailable or
// internal.
func (m *Metrics) StoreError(kind string) {
	if m != nil {
		m.storeErrors.WithLabelValues(kind).Inc()
	}
}

// RateLimited counts a request refused by a limit.
func (m *Metrics) RateLimited(limit string) {
	if m != nil {
		m.limited.WithLabelValues(limit).Inc()
	}
}

// Digest counts what became of a try of a weekly digest: "sent", "retry"
// or "given_up".
func (m *Metrics) Digest(result string) {
	if m != nil {
		m.digests.WithLabelValues(result).Inc()
	}
}

// WarehouseRun counts a warehouse's run that wrote files, delivered or
// failed, and sets how many of its runs in a row failed.
func (m *Metrics) WarehouseRun(warehouseID string, files int, failures int) {
	if m == nil {
		return
	}
	result := "delivered"
	if failures > 0 {
		result = "failed"
	}
	m.warehouse.WithLabelValues(result).Inc()
	m.whFiles.Add(float64(files))
	m.whFailing.WithLabelValues(warehouseID).Set(float64(failures))
}

// WriteBehindLog publishes what stats tells of the usage store's
// write-behind log: the events it holds and how long the oldest of them
// has waited for ClickHouse (on SQLite: for the fold of their rollups).
func (m *Metrics) WriteBehindLog(stats func() (events int, oldestAge time.Duration)) {
	if m == nil {
		return
	}
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "groupanalytics_log_events",
		Help: "Events acknowledged and waiting in the write-behind log for ClickHouse (on SQLite: for the fold of their rollups).",
	}, func() float64 { n, _ := stats(); return float64(n) }))
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "groupanalytics_log_oldest_event_age_seconds",
		Help: "How long the oldest event of the write-behind log has waited for ClickHouse (on SQLite: for the fold of its rollups).",
	}, func() float64 { _, age := stats(); return age.Seconds() }))
}

// QueueDepth publishes depth as the number of calls waiting for the usage
// store's writer.
func (m *Metrics) QueueDepth(depth func() int) {
	if m == nil {
		return
	}
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "groupanalytics_writer_queue_depth",
		Help: "Calls of the usage store waiting for its writer.",
	}, func() float64 { return float64(depth()) }))
}
