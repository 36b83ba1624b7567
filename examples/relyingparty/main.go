// Command relyingparty is a small web application that uses Gatehouse the way any client
// application would, with nothing but golang.org/x/oauth2, coreos/go-oidc and net/http: it
// logs a user in (authorization code flow with PKCE, ID token verified through the JWKS),
// reads the user's permission record for this application, asks for access when the user
// has none (no record, or a revoked one), and shows the status and role it reads.
//
// Register it as a confidential client first, then run it:
//
//	gatehouse client create --id relyingparty --name "Relying party demo" \
//	    --redirect-uri http://localhost:9090/callback
//	go run ./examples/relyingparty --issuer http://localhost:8080 \
//	    --client-id relyingparty --client-secret SECRET
//
// and open http://localhost:9090/. Every flag has a RELYINGPARTY_* environment variable.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parseConfig(os.Args[1:], os.LookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relyingparty:", err)
		os.Exit(2)
	}
	if err := run(cfg, logger); err != nil {
		logger.Error("relyingparty", "error", err)
		os.Exit(1)
	}
}

// config is what the application runs with.
type config struct {
	// Issuer is Gatehouse's base URL.
	Issuer string
	// ClientID and ClientSecret are this application's client credentials.
	ClientID, ClientSecret string
	// Addr is the address to listen on.
	Addr string
	// BaseURL is this application's public URL; the redirect URI is BaseURL + "/callback".
	BaseURL string
}

// parseConfig reads the flags in args; each falls back to its RELYINGPARTY_* variable.
func parseConfig(args []string, lookupEnv func(string) (string, bool)) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("relyingparty", flag.ContinueOnError)
	env := func(name, def string) string {
		if v, ok := lookupEnv(name); ok && v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&cfg.Issuer, "issuer", env("RELYINGPARTY_ISSUER", "http://localhost:8080"), "Gatehouse base URL (RELYINGPARTY_ISSUER)")
	fs.StringVar(&cfg.ClientID, "client-id", env("RELYINGPARTY_CLIENT_ID", "relyingparty"), "client id (RELYINGPARTY_CLIENT_ID)")
	fs.StringVar(&cfg.ClientSecret, "client-secret", env("RELYINGPARTY_CLIENT_SECRET", ""), "client secret (RELYINGPARTY_CLIENT_SECRET)")
	fs.StringVar(&cfg.Addr, "addr", env("RELYINGPARTY_ADDR", "localhost:9090"), "address to listen on (RELYINGPARTY_ADDR)")
	fs.StringVar(&cfg.BaseURL, "base-url", env("RELYINGPARTY_BASE_URL", ""), "public URL of this app (RELYINGPARTY_BASE_URL, default http://ADDR)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "http://" + cfg.Addr
	}
	cfg.Issuer = strings.TrimRight(cfg.Issuer, "/")
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.ClientSecret == "" {
		return cfg, errors.New("--client-secret (or RELYINGPARTY_CLIENT_SECRET) is required")
	}
	return cfg, nil
}

// run serves the application until SIGINT or SIGTERM.
func run(cfg config, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := newApp(ctx, cfg, http.DefaultClient, logger)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: cfg.Addr, Handler: a.routes(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("relyingparty listening", "url", cfg.BaseURL, "issuer", cfg.Issuer)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
