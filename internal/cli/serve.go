package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"groupanalytics/internal/httpapi"
)

func runServe(e *env, args []string) error {
	fs, db := flags(e, "serve")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	timeout := storeTimeoutFlag(fs)
	if err := parse(e, fs, args, false); err != nil {
		return err
	}
	return serve(e, *addr, *level, *db, *timeout, nil)
}

// storeTimeoutFlag is the bound on each store call of a serving process.
func storeTimeoutFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("store-timeout", 10*time.Second, "longest a store call may take before the request gets a 503")
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
func serve(e *env, addr, level string, db storeFlags, storeTimeout time.Duration, prepare func(s *stores, baseURL string) error) error {
	log, err := newLogger(e, level)
	if err != nil {
		return err
	}
	if storeTimeout <= 0 {
		return fmt.Errorf("invalid --store-timeout %s: expected a positive duration such as 10s", storeTimeout)
	}
	store, err := openStores(e, db, true, storeTimeout, log)
	if err != nil {
		return err
	}
	defer store.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if prepare != nil {
		if err := prepare(store, "http://"+ln.Addr().String()); err != nil {
			ln.Close()
			return err
		}
	}
	srv := &http.Server{
		Handler: httpapi.New(httpapi.Config{
			Directory: store.dir,
			Usage:     store.usage,
			Ready:     store.ping,
			Log:       log,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		// A backstop: report streams give each write a deadline of its own.
		WriteTimeout: time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	usage := store.dir.Dialect()
	if store.ch != nil {
		usage = fmt.Sprintf("clickhouse (%d shards)", len(store.ch.Shards()))
	}
	log.Info("listening", "addr", "http://"+ln.Addr().String(), "store", store.dir.Dialect(), "usage", usage)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-e.ctx.Done():
	}
	log.Info("shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}
