// Command embed shows a team's own Go server with Gatehouse inside it: the team keeps its
// own mux and pages, and hands every OpenID Connect, public-auth and hosted-page route to
// the provider.
//
//	GATEHOUSE_SECRET=$(openssl rand -hex 32) go run ./examples/embed
//
// then open http://localhost:8080/ and
// http://localhost:8080/.well-known/openid-configuration.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	// The example keeps its data in SQLite: link its driver.
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("embed", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	secret := os.Getenv("GATEHOUSE_SECRET")
	if len(secret) < 32 {
		return errors.New("set GATEHOUSE_SECRET to at least 32 bytes, e.g. $(openssl rand -hex 32)")
	}
	p, err := provider.New(provider.Config{
		Issuer:              "http://localhost:8080",
		DSN:                 "sqlite:./embed.db",
		Secret:              []byte(secret),
		AccessTokenLifespan: 15 * time.Minute,
	}, provider.WithLogger(logger))
	if err != nil {
		return err
	}
	defer p.Close()

	mux := http.NewServeMux()
	// The team's own routes.
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Acme</title><h1>Acme</h1>
<p>Our own page. Sign-in is served by Gatehouse on the same server:
<a href="/login">log in</a>, <a href="/.well-known/openid-configuration">discovery</a>.</p>`)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := p.Ready(r.Context()); err != nil {
			http.Error(w, "database unavailable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// Everything else: /api/oauth/*, /.well-known/*, /api/public/*, the hosted pages.
	mux.Handle("/", p)

	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	shutdown := make(chan error, 1)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shutdown <- srv.Shutdown(sctx)
	}()
	logger.Info("listening on http://localhost:8080")
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// ListenAndServe returns as soon as Shutdown begins: wait for the running requests
	// before the deferred p.Close closes the database under them.
	return <-shutdown
}
