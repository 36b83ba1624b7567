// Command embed is a company's own Go service with Gatehouse inside it, the way a team
// embeds the provider:
//
//   - the company's Postgres pool, shared with Gatehouse (storage.FromGorm) whose tables
//     carry the prefix gatehouse_, beside the company's own users table with bigint ids;
//   - the company's users, through provider.WithAccounts, and registration closed;
//   - Gatehouse mounted under /auth on the company's mux;
//   - the company's API GET /api/orders, behind RequireScopes("orders.read");
//   - Gatehouse's events written to the company's slog log.
//
// Run it against a Postgres database:
//
//	export ACME_DATABASE_URL='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
//	export GATEHOUSE_SECRET=$(openssl rand -hex 32)
//	go run ./examples/embed add-user ada@acme.example 'Ada Lovelace'   # reads the password
//	go run ./examples/embed add-client cli http://127.0.0.1:9999/callback
//	go run ./examples/embed
//
// then open http://localhost:8080/auth/.well-known/openid-configuration.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log, os.Args[1:]); err != nil {
		log.Error("embed", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := appConfig{
		BaseURL:     envOr("ACME_BASE_URL", "http://localhost:8080"),
		DatabaseURL: os.Getenv("ACME_DATABASE_URL"),
		Secret:      []byte(os.Getenv("GATEHOUSE_SECRET")),
		Logger:      log,
	}
	if cfg.DatabaseURL == "" {
		return errors.New("set ACME_DATABASE_URL to the company's Postgres, e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	}
	if len(cfg.Secret) < 32 {
		return errors.New("set GATEHOUSE_SECRET to at least 32 bytes, e.g. $(openssl rand -hex 32)")
	}
	a, err := newApp(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.Close()

	switch {
	case len(args) == 0:
		return serve(ctx, log, a, envOr("ACME_ADDR", ":8080"))
	case args[0] == "add-user" && len(args) == 3:
		fmt.Fprint(os.Stderr, "password: ")
		password, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil {
			return err
		}
		id, err := addUser(ctx, a.db, args[1], args[2], strings.TrimRight(password, "\r\n"), "")
		if err != nil {
			return err
		}
		fmt.Println("user", id)
		return nil
	case args[0] == "add-client" && len(args) == 3:
		c, err := a.provider.CreateClient(ctx, provider.ClientSpec{
			ID: args[1], Public: true, RedirectURIs: []string{args[2]},
			Scopes: []string{"openid", "profile", "email", "orders.read"},
		})
		if err != nil {
			return err
		}
		fmt.Println("public client", c.ClientID, "(PKCE, no secret)")
		return nil
	default:
		return errors.New("usage: embed | embed add-user EMAIL NAME | embed add-client ID REDIRECT_URI")
	}
}

func serve(ctx context.Context, log *slog.Logger, a *app, addr string) error {
	srv := &http.Server{Addr: addr, Handler: a.handler, ReadHeaderTimeout: 10 * time.Second}
	shutdown := make(chan error, 1)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shutdown <- srv.Shutdown(sctx)
	}()
	log.Info("listening", "addr", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// ListenAndServe returns as soon as Shutdown begins: wait for the running requests
	// before the deferred Close closes the database under them.
	return <-shutdown
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
