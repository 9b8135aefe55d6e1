package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/digest"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/metrics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/report"
	"groupanalytics/internal/stores"
	"groupanalytics/internal/warehouse"
)

func runServe(e *env, args []string) error {
	fs, db := flags(e, "serve")
	sf := addServeFlags(fs)
	if err := parse(e, fs, args, false); err != nil {
		return err
	}
	return serve(e, *sf, *db, nil)
}

// serveFlags are the flags of a serving process (serve and demo).
type serveFlags struct {
	addr, level, metricsAddr string
	storeTimeout             time.Duration
	limits                   httpapi.Limits
	mail                     *mailFlags
	digestEvery              time.Duration
	accessLogKept            analytics.Days
	accessLog                bool
	memoryLimit              memoryLimit
	sessions                 httpapi.Sessions
	warehouseDir             string
	warehouseEvery           time.Duration
}

// listen listens on addr, the value of the flag named flagName; an
// address in use says which flag picks another.
func listen(addr, flagName string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("--%s %s: %w: another program listens there; pick another address with --%s, such as --%s 127.0.0.1:8081",
			flagName, addr, syscall.EADDRINUSE, flagName, flagName)
	} else if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagName, err)
	}
	return ln, nil
}

func addServeFlags(fs *flag.FlagSet) *serveFlags {
	sf := &serveFlags{limits: httpapi.DefaultLimits}
	fs.StringVar(&sf.addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&sf.level, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&sf.storeTimeout, "store-timeout", 10*time.Second, "longest a store call may take before the request gets a 503")
	fs.StringVar(&sf.metricsAddr, "metrics-addr", "", "address of a separate listener serving Prometheus metrics at /metrics and profiles at /debug/pprof/ (empty: none)")
	fs.Var(&sf.limits.Key, "key-rate-limit", "requests per report key: N/s, N/m or N/h (bursts of N), or off")
	fs.Var(&sf.limits.Token, "token-rate-limit", "requests per platform token: N/s, N/m or N/h, or off")
	fs.Var(&sf.limits.FailedAuth, "failed-auth-limit", "failed key and token checks per client address: N/s, N/m or N/h, or off")
	fs.StringVar(&sf.limits.ClientIPHeader, "client-ip-header", "", "header a trusted proxy sets to the client's address, e.g. X-Forwarded-For (empty: the connection's peer)")
	sf.mail = addMailFlags(fs)
	fs.DurationVar(&sf.digestEvery, "digest-interval", time.Minute, "how often to look for weekly digests, and students who stopped, due (with --smtp-url)")
	sf.accessLogKept = defaultAccessLogKept
	fs.Var(&sf.accessLogKept, "access-log-retention", "how long the access log keeps an entry, in days (e.g. 730d), or off: for good")
	fs.BoolVar(&sf.accessLog, "access-log", true, "record every answer that carries student-level data in the access log; false only to measure what the log costs")
	fs.DurationVar(&sf.sessions.Lifetime, "session-lifetime", 12*time.Hour, "how long a staff member's sign-in lasts at most")
	fs.DurationVar(&sf.sessions.Idle, "session-idle", 2*time.Hour, "a staff member's sign-in ends after this long without a request")
	fs.StringVar(&sf.warehouseDir, "warehouse-dir", "", "directory under which folder warehouses write their files (empty: folder warehouses are off; buckets need none)")
	fs.DurationVar(&sf.warehouseEvery, "warehouse-interval", time.Minute, "how often to look for warehouse deliveries due")
	fs.Var(&sf.memoryLimit, "memory-limit", "the Go runtime's soft memory limit, e.g. 256MiB or 2GiB, or off (default 256MiB, or GOMEMLIMIT when set)")
	return sf
}

// defaultMemoryLimit keeps a serving process within the memory goal (300
// MB resident): the garbage collector works harder as the heap nears it,
// rather than letting it grow to twice what is live. What the process
// keeps between requests is bounded well below it (docs/operating.md).
const defaultMemoryLimit = 256 << 20

// memoryLimit is a flag of bytes, written with MiB or GiB; 0 is the
// default, -1 off.
type memoryLimit int64

func (m *memoryLimit) String() string {
	switch {
	case *m == 0:
		return ""
	case *m < 0:
		return "off"
	case *m%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", *m>>30)
	}
	return fmt.Sprintf("%dMiB", *m>>20)
}

func (m *memoryLimit) Set(v string) error {
	if v == "off" {
		*m = -1
		return nil
	}
	unit := int64(1 << 20)
	number, ok := strings.CutSuffix(v, "MiB")
	if !ok {
		number, ok = strings.CutSuffix(v, "GiB")
		unit = 1 << 30
	}
	n, err := strconv.ParseInt(number, 10, 32)
	if !ok || err != nil || n <= 0 {
		return fmt.Errorf("expected a size such as 256MiB or 2GiB, or off")
	}
	*m = memoryLimit(n * unit)
	return nil
}

// apply sets the limit: the flag's, or the default unless GOMEMLIMIT
// set one already. Under a limit, the collector also waits for the heap to
// grow to five times what is live rather than twice (gcPercent), unless
// GOGC says otherwise: the limit bounds the heap all the same.
func (m memoryLimit) apply() {
	switch {
	case m < 0:
		return
	case m > 0:
		debug.SetMemoryLimit(int64(m))
	case os.Getenv("GOMEMLIMIT") == "":
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// gcPercent is the collector's GOGC under a memory limit. A serving
// process's live heap is small beside the limit (16 MB under a firehose of
// one event per request), and Go's default of 100 collected it 14 times a
// second there, a tenth of the CPU, much of it in the one writer of an
// embedded store; at 400 it collects a third as often (BENCHMARKS.md).
const gcPercent = 400

// mailFlags are the flags of the weekly digest's mail: serve's, and
// digest send's.
type mailFlags struct {
	smtpURL, from, publicURL string
}

func addMailFlags(fs *flag.FlagSet) *mailFlags {
	mf := &mailFlags{}
	fs.StringVar(&mf.smtpURL, "smtp-url", "", "SMTP server of the weekly digests: smtp://[user:password@]host[:port] (STARTTLS when offered) or smtps://…; empty: no digests")
	fs.StringVar(&mf.publicURL, "public-url", "", "the service's address as people reach it, for the digest's links and staff sign-in, e.g. https://analytics.example.org")
	fs.StringVar(&mf.from, "mail-from", "", "the digests' sender address (default: digest@ the --public-url's host)")
	return mf
}

// sender returns the digest sender the flags name, or nil without an
// SMTP URL.
func (mf *mailFlags) sender(s *stores.Stores, log *slog.Logger) (*digest.Sender, error) {
	public, err := url.Parse(mf.publicURL)
	badPublic := err != nil || (public.Scheme != "http" && public.Scheme != "https") || public.Host == ""
	switch {
	case mf.publicURL != "" && badPublic:
		return nil, fmt.Errorf("invalid --public-url %q: expected the service's address as people reach it, e.g. https://analytics.example.org", mf.publicURL)
	case mf.smtpURL == "":
		return nil, nil
	case badPublic:
		return nil, errors.New("--smtp-url needs --public-url: the service's address as recipients reach it, e.g. https://analytics.example.org")
	}
	from := cmp.Or(mf.from, "digest@"+public.Hostname())
	if from, err = platform.CheckAddress(from); err != nil {
		return nil, fmt.Errorf("--mail-from: %s", analytics.ErrorMessage(err))
	}
	mailer, err := digest.NewMailer(mf.smtpURL, from)
	if err != nil {
		return nil, err
	}
	return digest.NewSender(s.Directory, report.NewEngine(s.Directory, s.Usage), mailer, mf.publicURL, log), nil
}

func newLogger(e *env, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid --log-level %q: expected debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: l})), nil
}

// serve opens the store dsn names and answers HTTP on addr until e.ctx
// ends, then shuts down gracefully: requests under way get up to 30
// seconds to finish. prepare, if set, runs once the address is bound and
// before the first request is served; it gets the server's base URL.
func serve(e *env, sf serveFlags, db storeFlags, prepare func(s *stores.Stores, baseURL string) error) error {
	log, err := newLogger(e, sf.level)
	if err != nil {
		return err
	}
	if err := sf.validate(); err != nil {
		return err
	}
	cfg := stores.Config{Create: true, Serve: true, CallTimeout: sf.storeTimeout, Log: log}
	var m *metrics.Metrics // none unless they are served
	if sf.metricsAddr != "" {
		m = metrics.New()
		cfg.Observer = m
	}
	sf.memoryLimit.apply()
	limitMallocArenas()
	// The address first: a process that cannot listen (a second demo on
	// the same port) fails before it opens, let alone changes, a store.
	ln, err := listen(sf.addr, "addr")
	if err != nil {
		return err
	}
	defer ln.Close()
	store, err := db.open(e, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	sender, err := sf.mail.sender(store, log)
	if err != nil {
		return err
	}
	if sender != nil {
		sender.Metrics = m
	}
	m.QueueDepth(store.QueueDepth)
	m.WriteBehindLog(store.LogStats)
	m.Tier(store.Health)
	if sf.metricsAddr != "" {
		closeMetrics, err := serveMetrics(m, sf.metricsAddr, log)
		if err != nil {
			return err
		}
		defer closeMetrics()
	}
	if prepare != nil {
		if err := prepare(store, "http://"+ln.Addr().String()); err != nil {
			return err
		}
	}
	plat := platform.New(store.Directory, store.Usage)
	srv := newHTTPServer(store, plat, sf, m, log)
	directory, usage := store.Engines()
	log.Info("listening", "addr", "http://"+ln.Addr().String(), "store", directory, "usage", usage)
	ctx, stop := context.WithCancel(e.ctx)
	defer stop()
	deliverer := &warehouse.Deliverer{Directory: store.Directory, Engine: report.NewEngine(store.Directory, store.Usage), Root: sf.warehouseDir,
		Log: log, Now: time.Now, Metrics: m}
	wait := runBackground(ctx, sender, deliverer, plat, sf, log)
	defer func() { stop(); wait() }() // before the store closes
	return serveUntilDone(e.ctx, srv, ln, log)
}

// validate refuses the flags that cannot serve.
func (sf serveFlags) validate() error {
	if sf.storeTimeout <= 0 {
		return fmt.Errorf("invalid --store-timeout %s: expected a positive duration such as 10s", sf.storeTimeout)
	}
	if sf.digestEvery <= 0 {
		return fmt.Errorf("invalid --digest-interval %s: expected a positive duration such as 1m", sf.digestEvery)
	}
	if sf.warehouseEvery <= 0 {
		return fmt.Errorf("invalid --warehouse-interval %s: expected a positive duration such as 1m", sf.warehouseEvery)
	}
	return nil
}

// serveMetrics serves the metrics and profiles on a listener of their own
// at addr, and returns what closes it.
func serveMetrics(m *metrics.Metrics, addr string, log *slog.Logger) (func() error, error) {
	mln, err := listen(addr, "metrics-addr")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	// Profiles, for operators: the listener is theirs, not the public's.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go msrv.Serve(mln)
	log.Info("metrics", "addr", "http://"+mln.Addr().String()+"/metrics")
	return msrv.Close, nil
}

// newHTTPServer is the service's HTTP server on store, with its timeouts.
func newHTTPServer(store *stores.Stores, plat *platform.Platform, sf serveFlags, m *metrics.Metrics, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler: httpapi.New(httpapi.Config{
			Engine:   report.NewEngine(store.Directory, store.Usage),
			Platform: plat,
			Ready:    store.Ping,
			Log:      log,
			Limits:   sf.limits,
			Metrics:  m,

			AccessLogOff: !sf.accessLog,
			PublicURL:    sf.mail.publicURL,
			Sessions:     sf.sessions,
			WarehouseDir: sf.warehouseDir,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		// A backstop: report streams give each write a deadline of its own.
		WriteTimeout: time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// runBackground starts, until ctx ends, the weekly digests (with a
// sender), the warehouses' deliveries and the retention runs, and returns
// what waits for them to end.
func runBackground(ctx context.Context, sender *digest.Sender, deliverer *warehouse.Deliverer, plat *platform.Platform, sf serveFlags,
	log *slog.Logger) (wait func()) {
	digests := make(chan struct{})
	if sender == nil {
		log.Info("weekly digests off: no --smtp-url")
		close(digests)
	} else {
		log.Info("weekly digests on", "smtp", sender.Mailer.String(), "from", sender.Mailer.From, "every", sf.digestEvery.String())
		go func() { defer close(digests); sender.Run(ctx, sf.digestEvery) }()
	}
	if !sf.accessLog {
		log.Warn("access log off: answers that carry student-level data are not recorded")
	}
	delivered := make(chan struct{})
	go func() { defer close(delivered); deliverer.Run(ctx, sf.warehouseEvery) }()
	pruned := make(chan struct{})
	go func() { defer close(pruned); keepRetention(ctx, plat, sf.accessLogKept, log) }()
	return func() { <-digests; <-delivered; <-pruned }
}

// serveUntilDone serves on ln until the server fails or ctx ends; then it
// shuts the server down, letting the answers under way finish (30 s).
func serveUntilDone(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// defaultAccessLogKept is how long the access log keeps an entry unless
// the operator says otherwise: two years, as district agreements commonly
// ask.
const defaultAccessLogKept analytics.Days = 730

// retentionEvery is how often a serving process deletes what is kept no
// longer: the access log's entries past their retention, and the usage
// of the days before the first each group keeps. A group's day ends at
// its own midnight, so hourly runs cut each within the hour.
var retentionEvery = time.Hour

// keepRetention deletes, at once and then every retentionEvery until ctx
// ends, the access log's entries older than kept (none when off) and the
// usage groups keep no longer.
func keepRetention(ctx context.Context, p *platform.Platform, kept analytics.Days, log *slog.Logger) {
	tick := time.NewTicker(retentionEvery)
	defer tick.Stop()
	for {
		n, err := p.PruneAccessLog(ctx, time.Now(), kept)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("pruning the access log failed", "error", err.Error())
		case n > 0:
			log.Info("pruned the access log", "entries", n, "kept", kept.String())
		}
		receipts, err := p.ExpireUsage(ctx, time.Now())
		for _, r := range receipts {
			log.Info("deleted usage past its retention", "group", r.GroupID, "before", r.KeptFrom.String())
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("a retention run failed", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
