package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	redislimit "github.com/gatehouse-id/gatehouse/ratelimit/redis"
)

// shutdownTimeout bounds a graceful shutdown: requests still running then are cut off.
const shutdownTimeout = 20 * time.Second

func (c *cli) serve(ctx context.Context, args []string) int {
	cmd, resolve := serveCommand()
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		cfg, err := resolve()
		if err != nil {
			return err
		}
		return c.runServer(ctx, cfg)
	})
}

// runServer opens the provider, listens on cfg.Addr and serves until ctx is done, then shuts
// down: no new connections, running requests get shutdownTimeout to finish, then the
// provider is closed.
func (c *cli) runServer(ctx context.Context, cfg Config) error {
	logger := newLogger(c.stderr, cfg.LogLevel)
	secret, err := loadSecret(cfg.Provider.Secret, cfg.Provider.DSN, c.random, logger)
	if err != nil {
		return err
	}
	cfg.Provider.Secret = secret
	tr, err := newTracing(ctx, c.lookupEnv)
	if err != nil {
		return err
	}
	defer func() {
		// Spans still buffered are exported before the process ends, within a bound.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tr.shutdown(sctx); err != nil {
			logger.Warn("exporting the last spans failed", slog.Any("error", err))
		}
	}()
	m := newMetrics()
	opts := []provider.Option{provider.WithLogger(logger), provider.WithEvents(m.event)}
	if tp := tr.provider(); tp != nil {
		opts = append(opts, provider.WithTracerProvider(tp))
	}
	if cfg.RedisLimits.URL != "" {
		limiter, err := redislimit.New(cfg.RedisLimits.URL, redislimit.WithCoolDown(cfg.RedisLimits.CoolDown), redislimit.WithLogger(logger))
		if err != nil {
			return fmt.Errorf("rate limits: %w", err)
		}
		defer limiter.Close() // after the provider, which counts in it until it closes
		opts = append(opts, provider.WithLimiter(limiter))
	}
	p, err := provider.New(cfg.Provider, opts...)
	if err != nil {
		return err
	}
	m.stats = p.Stats
	if cfg.Demo {
		if err := ensureDemoClient(ctx, p, cfg.Provider.Issuer, logger); err != nil {
			p.Close()
			return err
		}
	}
	ln := c.listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			p.Close()
			return err
		}
	}
	if cfg.DebugAddr != "" {
		stopDebug, err := startDebug(cfg.DebugAddr, logger)
		if err != nil {
			ln.Close()
			p.Close()
			return fmt.Errorf("debug listener: %w", err)
		}
		defer stopDebug()
	}
	var d *demo
	if cfg.Demo {
		d = newDemo(cfg.Provider.Issuer, internalURL(ln.Addr()), logger)
	}
	srv := &http.Server{
		Handler:           tr.handler(newHandler(logger, p, p.Ready, m, d)),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	warnIssuerPort(logger, cfg.Provider.Issuer, ln.Addr())
	logger.Info("gatehouse listening",
		slog.String("addr", ln.Addr().String()),
		slog.String("issuer", cfg.Provider.Issuer),
		slog.String("dsn", redactDSN(cfg.Provider.DSN)),
		slog.Bool("demo", cfg.Demo),
		slog.Bool("tracing", tr != nil))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
		p.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	logger.Info("shutting down", slog.String("timeout", shutdownTimeout.String()))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("graceful shutdown did not finish in time; closing connections", slog.Any("error", err))
		srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("serve", slog.Any("error", err))
	}
	if err := p.Close(); err != nil {
		return fmt.Errorf("close provider: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// newHandler wraps the provider with the process's own routes — /healthz, /readyz,
// /metrics and, when d is not nil, the demo under /demo (after the issuer's path) — and with
// the access log, request id and panic recovery middleware. The provider gets every other
// path and answers those outside the issuer's path with its JSON 404.
func newHandler(logger *slog.Logger, p http.Handler, ready func(context.Context) error, m *metrics, d *demo) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /readyz", readyz(logger, ready))
	mux.Handle("GET /metrics", m)
	if d != nil {
		d.register(mux)
	}
	mux.Handle("/", p)
	return accessLog(logger, m, recoverPanics(logger, mux))
}

// warnIssuerPort warns when a local issuer names another port than the one listened on:
// browsers would be sent to the wrong place.
func warnIssuerPort(logger *slog.Logger, issuer string, addr net.Addr) {
	u, err := url.Parse(issuer)
	tcp, ok := addr.(*net.TCPAddr)
	if err != nil || !ok {
		return
	}
	host, port := u.Hostname(), u.Port()
	if host != "localhost" && host != "127.0.0.1" && host != "::1" {
		return
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != strconv.Itoa(tcp.Port) {
		logger.Warn("the issuer's port differs from the port listened on; set --issuer (GATEHOUSE_ISSUER) to the address browsers use",
			slog.String("issuer", issuer), slog.String("addr", addr.String()))
	}
}
