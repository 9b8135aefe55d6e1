// Package httpapi serves the report endpoints, the platform API and the
// health checks over HTTP.
package httpapi

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzhttp/writer"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/pgzip"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/buildinfo"
	"groupanalytics/internal/dashboard"
	"groupanalytics/internal/lti"
	"groupanalytics/internal/metrics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/report"
	"groupanalytics/internal/signin"
)

// Server answers HTTP requests. Build one with New.
type Server struct {
	engine   *report.Engine
	platform *platform.Platform
	ready    func(context.Context) error
	log      *slog.Logger
	now      func() time.Time
	handler  http.Handler
	// streamWriteTimeout is how long a client may take to accept each
	// part of a report as it streams; one that stops reading is cut off
	// after it, rather than hold its connection for good.
	streamWriteTimeout time.Duration
	limits             *limiters
	metrics            *metrics.Metrics
	accessLogOff       bool
	// publicURL is the service's address as browsers reach it, without a
	// trailing slash; empty, sign-in is off.
	publicURL string
	signIn    *signin.RelyingParty
	sessions  Sessions
	refusals  *gate
	// warehouseDir is where folder warehouses write (empty: nowhere).
	warehouseDir string
	// ltiVerifier checks LTI launches, keeping the platforms' keys.
	ltiVerifier *lti.Verifier
	courseSyncs courseSyncs
}

// Config is what a Server is made of.
type Config struct {
	// Engine answers the report endpoints; its directory checks the keys.
	Engine *report.Engine
	// Platform serves the platform API; its directory checks the tokens.
	Platform *platform.Platform
	// Ready reports whether the store answers; /readyz calls it.
	Ready func(context.Context) error
	Log   *slog.Logger
	// Now is the clock of the report endpoints and the rate limits; nil
	// means time.Now. (The platform has a clock of its own.)
	Now func() time.Time
	// StreamWriteTimeout bounds each write of a streamed report; 0 means
	// 20 seconds.
	StreamWriteTimeout time.Duration
	// Limits are the rate limits; the zero value limits nothing.
	Limits Limits
	// Metrics, if set, records what the server does.
	Metrics *metrics.Metrics
	// AccessLogOff leaves student-level answers out of the access log:
	// only to measure what the log costs (serve --access-log=false).
	AccessLogOff bool
	// PublicURL is the service's address as browsers reach it (such as
	// https://analytics.example.org): staff sign-in sends providers back
	// to it, and is off without it.
	PublicURL string
	// Sessions are the lifetimes of the staff's signed-in sessions.
	Sessions Sessions
	// WarehouseDir is the directory under which folder warehouses
	// write; empty: they are off.
	WarehouseDir string
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{
		engine:   cfg.Engine,
		platform: cfg.Platform,
		ready:    cfg.Ready,
		log:      cfg.Log,
		now:      cfg.Now,

		streamWriteTimeout: cmp.Or(cfg.StreamWriteTimeout, 20*time.Second),
		limits:             newLimiters(cfg.Limits),
		metrics:            cfg.Metrics,
		accessLogOff:       cfg.AccessLogOff,
		publicURL:          strings.TrimRight(cfg.PublicURL, "/"),
		signIn:             signin.New(),
		refusals:           newGate(),
		warehouseDir:       cfg.WarehouseDir,
		ltiVerifier:        lti.NewVerifier(),
		sessions: Sessions{Lifetime: cmp.Or(cfg.Sessions.Lifetime, 12*time.Hour),
			Idle: cmp.Or(cfg.Sessions.Idle, 2*time.Hour)},
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.handler = s.holdRefusals(s.logRequests(s.screen(compress(s.mux()))))
	return s
}

// compress compresses answers of 1 KiB and more, streamed, with gzip or
// zstd as the client's Accept-Encoding prefers, gzip on a tie (a browser
// names both). gzip is made by pgzip at the fastest level, in blocks of
// 256 KiB compressed at once on the machine's cores while the next are
// encoded: a report of 130,000 students (55 MB of JSON) shrinks to 4 MB
// (zstd would make 3 MB, but with one core, in twice the time of the
// uncompressed answer) and costs a fifth more than sending it plain.
var compress = func() func(http.Handler) http.HandlerFunc {
	wrap, err := gzhttp.NewWrapper(gzhttp.MinSize(1024), gzhttp.CompressionLevel(gzip.BestSpeed), gzhttp.PreferZstd(false),
		gzhttp.Implementation(writer.GzipWriterFactory{
			Levels: func() (int, int) { return gzip.HuffmanOnly, gzip.BestCompression },
			New:    newParallelGzip,
		}))
	if err != nil {
		panic(err) // the options are constants
	}
	return wrap
}()

// parallelGzip is a pgzip writer that goes back to its pool when closed.
type parallelGzip struct{ *pgzip.Writer }

var parallelGzips sync.Pool

func newParallelGzip(w io.Writer, level int) writer.GzipWriter {
	if z, ok := parallelGzips.Get().(*parallelGzip); ok {
		z.Reset(w)
		return z
	}
	zw, err := pgzip.NewWriterLevel(w, level)
	if err != nil {
		panic(err) // the level is a constant
	}
	_ = zw.SetConcurrency(256<<10, 4) // valid sizes: cannot fail
	return &parallelGzip{zw}
}

func (z *parallelGzip) Close() error {
	err := z.Writer.Close()
	parallelGzips.Put(z)
	return err
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// innermost returns the server's own ResponseWriter under the wrappers:
// MaxBytesReader needs it to close the connection after an oversized body.
func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// maxHeaderBytes caps a request's header fields. Past Go's own limit
// (1 MiB) Go answers 431 itself, in plain text; up to it, we do, in JSON.
const maxHeaderBytes = 64 << 10

// screen answers in JSON the requests that the mux would answer in plain
// text or with a redirect: CONNECT (the mux matches its host, not a path),
// paths that are not clean ("//x", "/a/../b"), and oversized headers.
func (s *Server) screen(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := 0
		for name, values := range r.Header {
			for _, v := range values {
				size += len(name) + len(v) + 4
			}
		}
		switch {
		case size > maxHeaderBytes:
			s.writeStatus(w, r, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("Request header fields too large: at most %d bytes", maxHeaderBytes))
		case r.Method == http.MethodConnect || !isCleanPath(r.URL.Path):
			s.writeStatus(w, r, http.StatusNotFound, "Not found")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// isCleanPath reports whether p is a path the mux serves without
// redirecting: rooted, with no empty, "." or ".." elements.
func isCleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

type errorBody struct {
	Error string `json:"error"`
}

var statusOf = map[analytics.Code]int{
	analytics.Invalid:         http.StatusBadRequest,
	analytics.Unauthorized:    http.StatusForbidden,
	analytics.Unauthenticated: http.StatusUnauthorized,
	analytics.NotFound:        http.StatusNotFound,
	analytics.Conflict:        http.StatusConflict,
	analytics.TooLarge:        http.StatusRequestEntityTooLarge,
	analytics.Unavailable:     http.StatusServiceUnavailable,
	analytics.Internal:        http.StatusInternalServerError,
}

// StatusClientClosedRequest is what the request log says of a request
// whose client went away before its answer (nginx's 499).
const StatusClientClosedRequest = 499

// writeError answers with err's status and caller-safe message. Only
// failures of the service are logged; their details never reach the caller.
// A request whose client has gone is only noted in the request log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	code := analytics.ErrorCode(err)
	msg := analytics.ErrorMessage(err)
	switch code {
	case analytics.Internal:
		msg = "Internal error"
		s.metrics.StoreError("internal")
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	case analytics.Unavailable:
		// Down or behind: a client that backs off for a second is
		// likely to get through.
		w.Header().Set("Retry-After", "1")
		s.metrics.StoreError("unavailable")
		s.log.WarnContext(r.Context(), "store unavailable", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	}
	s.writeStatus(w, r, statusOf[code], msg)
}

// writeStatus answers with an error body. A request body not read to its
// end is not read now: the connection closes after the answer instead, so
// that a client trickling a body it need not send gets its answer at once.
func (s *Server) writeStatus(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if body, ok := r.Context().Value(bodyKey{}).(*trackedBody); ok && !body.done() {
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, status, errorBody{msg})
}

// readBody reads a request body, which the route has capped; past the cap
// it is a TooLarge error that says the limit.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, analytics.Errorf(analytics.TooLarge, "Request body too large: at most %d bytes", tooLarge.Limit)
	case err != nil:
		return nil, analytics.Errorf(analytics.Invalid, "Request body could not be read")
	}
	return body, nil
}

// readJSONBody reads a body to be decoded as JSON: its bytes must be UTF-8,
// which JSON decoding would otherwise replace without a word.
func readJSONBody(r *http.Request) ([]byte, error) {
	body, err := readBody(r)
	if err == nil && !utf8.Valid(body) {
		err = analytics.Errorf(analytics.Invalid, "Invalid body: not valid UTF-8")
	}
	return body, err
}

// writeJSON answers with v as JSON, without HTML escaping: these are API
// answers, and "<token>" should read as written.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"Internal error"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// health is /healthz's answer: the process runs, and which build it is.
type health struct {
	Status string `json:"status"`
	buildinfo.Info
}

// asset serves a file of the dashboard, or a 404.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	if !dashboard.Asset(w, r, r.PathValue("file")) {
		s.writeStatus(w, r, http.StatusNotFound, "Not found")
	}
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, health{"ok", buildinfo.Get()})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		s.log.WarnContext(r.Context(), "not ready", "error", err.Error())
		writeJSON(w, http.StatusServiceUnavailable, errorBody{"Not ready: the store cannot be reached"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// recorder remembers what a handler answered, for the request log.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	if status != StatusClientClosedRequest {
		r.ResponseWriter.WriteHeader(status)
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// trackedBody is a request body that knows whether it was read to its end.
type trackedBody struct {
	io.ReadCloser
	empty bool
	eof   bool
}

type bodyKey struct{}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *trackedBody) done() bool { return b.empty || b.eof }

// logRequests logs one line per request: never the query string or any
// header, so that no key or token reaches the log. A panic before the
// answer began becomes a 500; after, the connection is cut so that the
// client cannot take a partial answer for a whole one. Either way one log
// line, without a stack trace.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		body := &trackedBody{ReadCloser: r.Body, empty: r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0}
		r.Body = body
		route := "other"
		r = r.WithContext(context.WithValue(context.WithValue(r.Context(), bodyKey{}, body), routeKey{}, &route))
		defer func() {
			v := recover()
			switch {
			case v == nil:
			case r.Context().Err() != nil:
				rec.status = StatusClientClosedRequest
			case v == http.ErrAbortHandler:
				s.log.WarnContext(r.Context(), "response aborted", "method", r.Method, "path", r.URL.Path)
			default:
				s.log.ErrorContext(r.Context(), "panic", "method", r.Method, "path", r.URL.Path, "error", fmt.Sprint(v))
				if rec.status == 0 {
					writeJSON(rec, http.StatusInternalServerError, errorBody{"Internal error"})
					v = nil
				}
			}
			took := time.Since(start)
			s.log.InfoContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
				"bytes", rec.bytes, "duration_ms", float64(took.Microseconds())/1000)
			s.metrics.Request(route, r.Method, rec.status, took)
			if v != nil {
				panic(http.ErrAbortHandler)
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// routeKey holds, in a request's context, where the route it took is
// written: the path pattern, for the metrics (a raw path would give them a
// label per group and student).
type routeKey struct{}

func setRoute(r *http.Request, pattern string) {
	if route, ok := r.Context().Value(routeKey{}).(*string); ok {
		*route = pattern
	}
}

//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
