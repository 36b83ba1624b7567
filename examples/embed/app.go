package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
)

// appConfig is what the company's service needs to start.
type appConfig struct {
	// BaseURL is where the service is reached, e.g. https://acme.example; Gatehouse lives
	// under BaseURL/auth.
	BaseURL string
	// DatabaseURL is the company's Postgres.
	DatabaseURL string
	// Secret is Gatehouse's system secret (at least 32 bytes).
	Secret []byte
	Logger *slog.Logger
}

// app is the company's service: its own database pool, users and orders, with Gatehouse
// inside it.
type app struct {
	db       *gorm.DB
	provider *provider.Provider
	handler  http.Handler
}

// acmeSchema is the company's own schema. Its users table is the one Gatehouse's own would
// have clashed with; the table prefix keeps them apart.
var acmeSchema = []string{
	`CREATE TABLE IF NOT EXISTS users (
		id BIGSERIAL PRIMARY KEY,
		email TEXT NOT NULL UNIQUE,
		name TEXT NOT NULL,
		password_hash TEXT NOT NULL,
		email_verified BOOLEAN NOT NULL DEFAULT false,
		disabled BOOLEAN NOT NULL DEFAULT false,
		department TEXT NOT NULL DEFAULT ''
	)`,
	`CREATE TABLE IF NOT EXISTS orders (
		id BIGSERIAL PRIMARY KEY,
		user_id BIGINT NOT NULL REFERENCES users (id),
		item TEXT NOT NULL,
		placed_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`,
}

// newApp opens the company's pool, hands it to Gatehouse and builds the service's routes.
func newApp(ctx context.Context, cfg appConfig) (*app, error) {
	log := cfg.Logger
	db, err := gorm.Open(postgres.Open(cfg.DatabaseURL), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	// One pool for the whole service, Gatehouse included.
	sqlDB.SetMaxOpenConns(20)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	fail := func(err error) (*app, error) { _ = sqlDB.Close(); return nil, err }
	for _, stmt := range acmeSchema {
		if err := db.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fail(fmt.Errorf("company schema: %w", err))
		}
	}

	// Gatehouse's tables are gatehouse_*, beside the company's own, in the same pool.
	store, err := storage.FromGorm(db, storage.WithTablePrefix("gatehouse_"), storage.WithLogger(log))
	if err != nil {
		return fail(err)
	}
	accounts, err := newAcmeAccounts(db)
	if err != nil {
		return fail(err)
	}
	p, err := provider.New(provider.Config{
		Issuer: cfg.BaseURL + "/auth",
		Secret: cfg.Secret,
		Scopes: []provider.Scope{{Name: "orders.read", Description: "See your orders"}},
		// Accounts are made by the company's own sign-up, not through Gatehouse.
		Registration: provider.RegistrationClosed,
	},
		provider.WithStore(store),
		provider.WithAccounts(accounts),
		provider.WithEvents(logEvent(log)),
		provider.WithLogger(log),
	)
	if err != nil {
		return fail(err)
	}

	a := &app{db: db, provider: p}
	mux := http.NewServeMux()
	// Gatehouse serves everything under /auth: OAuth, discovery, the hosted pages.
	mux.Handle("/auth/", p)
	// The company's own API, for tokens with the orders.read scope.
	mux.Handle("GET /api/orders", p.RequireScopes("orders.read")(http.HandlerFunc(a.orders)))
	mux.HandleFunc("GET /{$}", a.home)
	mux.HandleFunc("GET /healthz", a.healthz)
	a.handler = mux
	return a, nil
}

// Close stops Gatehouse, then closes the company's pool (which Gatehouse never closes).
func (a *app) Close() error {
	err := a.provider.Close()
	if sqlDB, dbErr := a.db.DB(); dbErr == nil {
		err = errors.Join(err, sqlDB.Close())
	}
	return err
}

// logEvent writes every Gatehouse event to the service's own log, after its change
// committed.
func logEvent(log *slog.Logger) func(context.Context, provider.Event) {
	return func(ctx context.Context, e provider.Event) {
		log.InfoContext(ctx, "gatehouse event", "event", e.Name(), "detail", e)
	}
}

// order is one order as the API returns it.
type order struct {
	ID       int64     `json:"id"`
	Item     string    `json:"item"`
	PlacedAt time.Time `json:"placedAt"`
}

// orders lists the orders of the token's user. RequireScopes has verified the token
// (signature, expiry, revocation) and its orders.read scope.
func (a *app) orders(w http.ResponseWriter, r *http.Request) {
	tok, _ := provider.AccessTokenFromContext(r.Context())
	userID, err := strconv.ParseInt(tok.Subject, 10, 64)
	if !tok.UserBound || err != nil {
		http.Error(w, `{"error":"this API needs a user's token"}`, http.StatusForbidden)
		return
	}
	list := []order{}
	err = a.db.WithContext(r.Context()).Table("orders").Select("id, item, placed_at").
		Where("user_id = ?", userID).Order("id").Scan(&list).Error
	if err != nil {
		http.Error(w, `{"error":"orders unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"orders": list})
}

func (a *app) home(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><title>Acme</title><h1>Acme</h1>
<p>Our own page. Sign-in is Gatehouse, mounted under <a href="/auth/.well-known/openid-configuration">/auth</a>;
our API is <code>GET /api/orders</code> with a token that has the <code>orders.read</code> scope.</p>`)
}

func (a *app) healthz(w http.ResponseWriter, r *http.Request) {
	if err := a.provider.Ready(r.Context()); err != nil {
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}
