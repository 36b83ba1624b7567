package publicauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testSecret is a system secret for tests.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// clock is a settable clock for the service under test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a Service over a real store, mailing through a real SMTP server started for the
// test, counting attempts in memory on the test clock, served by an httptest server through
// Routes. A client "app" with redirect URI appRedirectURI is registered.
type env struct {
	store *storage.Store
	svc   *publicauth.Service
	clock *clock
	srv   *httptest.Server
	smtp  *smtptest.Server
}

// appRedirectURI is the registered redirect URI of the env's client.
const appRedirectURI = "https://app.example/callback"

// newTestMailer returns an SMTP mailer delivering to srv.
func newTestMailer(t *testing.T, smtpURL string) publicauth.Mailer {
	t.Helper()
	m, err := publicauth.NewSMTPMailer(smtpURL, "Gatehouse <noreply@gatehouse.test>")
	if err != nil {
		t.Fatalf("NewSMTPMailer: %v", err)
	}
	return m
}

// discardLogger logs nowhere.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// forEachBackend runs test once per storage backend, each run on a fresh store.
func forEachBackend(t *testing.T, test func(t *testing.T, b storagetest.Backend)) {
	t.Helper()
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { test(t, b) })
	}
}

// newEnv builds an env over a fresh store of backend b with cfg (its Secret defaulted);
// opts are passed to publicauth.New after the env's own, so they win.
func newEnv(t *testing.T, b storagetest.Backend, cfg publicauth.Config, opts ...publicauth.Option) *env {
	t.Helper()
	return newEnvOn(t, b.Open(t), cfg, opts...)
}

// newEnvOn builds an env over store.
func newEnvOn(t *testing.T, store *storage.Store, cfg publicauth.Config, opts ...publicauth.Option) *env {
	t.Helper()
	if cfg.Secret == nil {
		cfg.Secret = testSecret
	}
	if _, err := store.ClientByID(context.Background(), "app"); err != nil {
		if err := store.CreateClient(context.Background(), &storage.Client{ID: "app", RedirectURIs: []string{appRedirectURI}}); err != nil {
			t.Fatalf("CreateClient: %v", err)
		}
	}
	clk := &clock{now: t0}
	mail := smtptest.Start(t)
	opts = append([]publicauth.Option{
		publicauth.WithClock(clk.Now),
		publicauth.WithLogger(discardLogger()),
		publicauth.WithMailer(newTestMailer(t, mail.URL())),
		publicauth.WithLimiter(ratelimit.NewMemory(ratelimit.WithClock(clk.Now))),
	}, opts...)
	svc, err := publicauth.New(cfg, store, opts...)
	if err != nil {
		t.Fatalf("publicauth.New: %v", err)
	}
	// The mail worker stops before the SMTP server and the store close.
	t.Cleanup(svc.Close)
	r := mux.NewRouter()
	svc.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &env{store: store, svc: svc, clock: clk, srv: srv, smtp: mail}
}

// response is a completed HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

// cookie returns the Set-Cookie of that name, or nil.
func (r response) cookie(name string) *http.Cookie {
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// json decodes the body into a generic value.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return v
}

// do sends a request with the given content type and body (no Content-Type header when
// contentType is empty) and the given cookies.
func (e *env) do(t *testing.T, method, path, contentType, body string, cookies ...*http.Cookie) response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// postJSON sends v as an application/json POST.
func (e *env) postJSON(t *testing.T, path string, v any, cookies ...*http.Cookie) response {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return e.do(t, http.MethodPost, path, "application/json", string(b), cookies...)
}

// register creates a user through the service.
func (e *env) register(t *testing.T, email, password, name string) *publicauth.User {
	t.Helper()
	reg, err := e.svc.Register(context.Background(), email, password, name, nil)
	if err != nil {
		t.Fatalf("Register(%q): %v", email, err)
	}
	return reg.User
}

// login logs in over HTTP and returns the public-session cookie.
func (e *env) login(t *testing.T, email, password string) *http.Cookie {
	t.Helper()
	res := e.postJSON(t, "/api/public/login", map[string]string{"email": email, "password": password})
	if res.status != http.StatusOK {
		t.Fatalf("login status = %d, want 200 (body %s)", res.status, res.body)
	}
	c := res.cookie(publicauth.CookiePublic)
	if c == nil {
		t.Fatalf("login set no %s cookie", publicauth.CookiePublic)
	}
	return c
}

// wantStatus fails the test unless res has status want.
func wantStatus(t *testing.T, res response, want int) {
	t.Helper()
	if res.status != want {
		t.Fatalf("status = %d, want %d (body %s)", res.status, want, res.body)
	}
}

// wantBody fails the test unless res's body is exactly the JSON encoding of want.
func wantBody(t *testing.T, res response, want string) {
	t.Helper()
	if got := string(bytes.TrimSpace(res.body)); got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
}

// wantJSONHeaders fails the test unless res is uncached JSON.
func wantJSONHeaders(t *testing.T, res response) {
	t.Helper()
	if got := res.header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want %q", got, "application/json")
	}
	if got := res.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want %q", got, "no-store")
	}
}
