package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/internal/browsertest"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// eventLog is the service's slog handler in the test: it keeps the Gatehouse events the
// service logged.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *eventLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *eventLog) WithGroup(string) slog.Handler            { return l }
func (l *eventLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "gatehouse event" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "event" {
			l.mu.Lock()
			l.events = append(l.events, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *eventLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// postgresDSN is a fresh Postgres schema for the company's database (the example is a
// Postgres service); it skips the test where no Postgres is configured, as storagetest does.
func postgresDSN(t *testing.T) string {
	t.Helper()
	for _, b := range storagetest.Backends(t) {
		if b.Name == "postgres" {
			return b.DSN(t)
		}
	}
	t.Skip("no Postgres configured (" + storagetest.EnvPostgresDSN + ")")
	return ""
}

// TestCompanyServiceEndToEnd drives the company's service as its users would: a relying
// party logs a company user in through Gatehouse's hosted pages under /auth in Chromium
// (code flow with PKCE), calls the company's orders API with the token, and revokes it;
// the service's in-process check notices the revocation at once, and its log shows an
// event for each step.
func TestCompanyServiceEndToEnd(t *testing.T) {
	browsertest.Require(t)
	dsn := postgresDSN(t)
	browserCtx := browsertest.Start(t, context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	events := &eventLog{}
	a, err := newApp(ctx, appConfig{
		BaseURL: base, DatabaseURL: dsn, Logger: slog.New(events),
		Secret: []byte("the company's gatehouse secret, 32+ bytes"),
	})
	if err != nil {
		t.Fatalf("start the service: %v", err)
	}
	srv := &http.Server{Handler: a.handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := a.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})

	// The company's own data: a user with a bigint id, and her orders.
	const email, password = "ada@acme.example", "correct horse battery staple"
	uid, err := addUser(ctx, a.db, email, "Ada Lovelace", password, "research")
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range []string{"analytical engine", "punched cards"} {
		if err := a.db.Exec("INSERT INTO orders (user_id, item) VALUES (?, ?)", uid, item).Error; err != nil {
			t.Fatal(err)
		}
	}

	// The relying party: a public client on loopback, with PKCE.
	type callback struct{ code, state string }
	got := make(chan callback, 1)
	rp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- callback{r.URL.Query().Get("code"), r.URL.Query().Get("state")}:
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><p id="done">signed in</p>`))
	}))
	t.Cleanup(rp.Close)
	client, err := a.provider.CreateClient(ctx, provider.ClientSpec{
		ID: "orders-app", Name: "Orders App", Public: true, RedirectURIs: []string{rp.URL + "/callback"},
		Scopes: []string{"openid", "profile", "email", "orders.read"},
	})
	if err != nil {
		t.Fatal(err)
	}
	op, err := oidc.NewProvider(ctx, base+"/auth")
	if err != nil {
		t.Fatalf("discovery under /auth: %v", err)
	}
	oc := oauth2.Config{
		ClientID: client.ClientID, Endpoint: op.Endpoint(), RedirectURL: rp.URL + "/callback",
		Scopes: []string{oidc.ScopeOpenID, "profile", "email", "orders.read"},
	}
	verifier, state, nonce := oauth2.GenerateVerifier(), oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	authURL := oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	if !strings.HasPrefix(authURL, base+"/auth/") {
		t.Fatalf("authorization endpoint %s is not under /auth", authURL)
	}

	// The user logs in and consents on the hosted pages, in Chromium.
	runCtx, cancelRun := context.WithTimeout(browserCtx, 45*time.Second)
	defer cancelRun()
	var loginPage string
	err = chromedp.Do(runCtx,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible(chromedp.ID("password")),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
			loginPage, err = chromedp.Location()(ctx, tg)
			return err
		}),
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[name=decision][value=allow]`)),
		chromedp.Click(chromedp.CSS(`button[name=decision][value=allow]`)),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	if err != nil {
		dumpCtx, cancelDump := context.WithTimeout(browserCtx, 5*time.Second)
		defer cancelDump()
		at, _ := chromedp.Run(dumpCtx, chromedp.Location())
		page, _ := chromedp.Run(dumpCtx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("hosted login under /auth: %v (at %s: %q)", err, at, page)
	}
	if !strings.HasPrefix(loginPage, base+"/auth/") {
		t.Errorf("the login page %s is not under /auth", loginPage)
	}
	var cb callback
	select {
	case cb = <-got:
	default:
		t.Fatal("the relying party got no callback")
	}
	if cb.state != state || cb.code == "" {
		t.Fatalf("callback state=%q code=%q", cb.state, cb.code)
	}

	// The code becomes tokens; the ID token names the company's user id.
	tok, err := oc.Exchange(ctx, cb.code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	rawID, _ := tok.Extra("id_token").(string)
	idToken, err := op.Verifier(&oidc.Config{ClientID: client.ClientID}).Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	if want := strconv.FormatInt(uid, 10); idToken.Subject != want || idToken.Nonce != nonce {
		t.Errorf("ID token sub=%q nonce=%q, want %q and %q", idToken.Subject, idToken.Nonce, want, nonce)
	}
	var claims struct {
		Email      string `json:"email"`
		Department string `json:"department"`
	}
	if err := idToken.Claims(&claims); err != nil || claims.Email != email || claims.Department != "research" {
		t.Errorf("ID token claims email=%q department=%q (%v), want the company's %q and research", claims.Email, claims.Department, err, email)
	}

	// The company's API serves the token's user.
	status, body := getOrders(t, base, tok.AccessToken)
	if status != http.StatusOK {
		t.Fatalf("GET /api/orders: %d %s", status, body)
	}
	var list struct{ Orders []order }
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Orders) != 2 || list.Orders[0].Item != "analytical engine" {
		t.Errorf("orders = %s (%v)", body, err)
	}
	if status, _ := getOrders(t, base, ""); status != http.StatusUnauthorized {
		t.Errorf("GET /api/orders without a token: %d, want 401", status)
	}
	if _, err := a.provider.VerifyAccessToken(ctx, tok.AccessToken); err != nil {
		t.Fatalf("VerifyAccessToken before revocation: %v", err)
	}

	// Revocation through the provider's endpoint is noticed at once in process.
	res, err := http.PostForm(base+"/auth/api/oauth/revoke", url.Values{
		"token": {tok.AccessToken}, "client_id": {client.ClientID},
	})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	if _, err := a.provider.VerifyAccessToken(ctx, tok.AccessToken); !errors.Is(err, provider.ErrInvalidToken) {
		t.Errorf("VerifyAccessToken after revocation: %v, want ErrInvalidToken", err)
	}
	if status, _ := getOrders(t, base, tok.AccessToken); status != http.StatusUnauthorized {
		t.Errorf("GET /api/orders with the revoked token: %d, want 401", status)
	}

	// Registration is closed: accounts come from the company's own sign-up.
	res, err = http.Post(base+"/auth/api/public/register", "application/json",
		strings.NewReader(`{"email":"eve@acme.example","password":"a long enough password","name":"Eve"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden && res.StatusCode != http.StatusNotFound {
		t.Errorf("register with registration closed: %d, want 403 or 404", res.StatusCode)
	}

	// Gatehouse's tables sit beside the company's under their prefix, and hold no copy of
	// the company's user.
	var gatehouseUsers, companyUsers int64
	if err := a.db.Raw("SELECT count(*) FROM gatehouse_users").Scan(&gatehouseUsers).Error; err != nil {
		t.Fatalf("gatehouse_users: %v", err)
	}
	if err := a.db.Raw("SELECT count(*) FROM users").Scan(&companyUsers).Error; err != nil {
		t.Fatal(err)
	}
	if gatehouseUsers != 0 || companyUsers != 1 {
		t.Errorf("gatehouse_users has %d rows, users %d; want 0 and 1", gatehouseUsers, companyUsers)
	}

	// An event for each step, in the service's log.
	seen := events.seen()
	for _, want := range []provider.Event{
		&provider.LoginSucceeded{}, &provider.ConsentGranted{}, &provider.TokenIssued{}, &provider.TokenRevoked{},
	} {
		if !slices.Contains(seen, want.Name()) {
			t.Errorf("no %s event in the service's log; saw %v", want.Name(), seen)
		}
	}
}

func getOrders(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}
