package social_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/social"
	"github.com/gatehouse-id/gatehouse/ui"
)

// testSecret is a system secret for tests.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// completion is one call of Host.CompleteLogin.
type completion struct {
	user                    *publicauth.User
	method, token, returnTo string
}

// fakeHost is the provider as social sees it (social.Host): paused authorization requests
// by token, registered redirect URIs, and pages. CompleteLogin records the login it is
// asked to finish and answers 200 "completed"; ErrorPage answers the status package ui
// gives the error, with
// "title: message".
type fakeHost struct {
	mu        sync.Mutex
	paused    map[string]bool
	redirects map[string]bool
	// failWith, when set, is what CheckPausedRequest and IsRegisteredRedirectURI return.
	failWith    error
	completions []completion
	// pageErrors are the errors ErrorPage was asked to answer, in order.
	pageErrors []error
}

func (h *fakeHost) CheckPausedRequest(ctx context.Context, token string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.failWith != nil:
		return h.failWith
	case !h.paused[token]:
		return publicauth.ErrRequestExpired
	}
	return nil
}

func (h *fakeHost) IsRegisteredRedirectURI(ctx context.Context, uri string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.redirects[uri], h.failWith
}

func (h *fakeHost) CompleteLogin(w http.ResponseWriter, r *http.Request, u *publicauth.User, method, token, returnTo string) {
	h.mu.Lock()
	h.completions = append(h.completions, completion{user: u, method: method, token: token, returnTo: returnTo})
	h.mu.Unlock()
	_, _ = io.WriteString(w, "completed")
}

func (h *fakeHost) ErrorPage(w http.ResponseWriter, r *http.Request, err error) {
	h.mu.Lock()
	h.pageErrors = append(h.pageErrors, err)
	h.mu.Unlock()
	status, title, message := ui.Describe(err)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, title+": "+message)
}

// lastPageError is the error the last error page answered, or nil.
func (h *fakeHost) lastPageError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pageErrors) == 0 {
		return nil
	}
	return h.pageErrors[len(h.pageErrors)-1]
}

func (h *fakeHost) set(fn func(h *fakeHost)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn(h)
}

// last is the last completed login, or false when there was none.
func (h *fakeHost) last() (completion, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.completions) == 0 {
		return completion{}, false
	}
	return h.completions[len(h.completions)-1], true
}

func (h *fakeHost) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.completions)
}

// env is a social Service over a real publicauth.Service on a memStore, inside a fakeHost,
// served by a real HTTP server on 127.0.0.1, with one fake upstream per kind asked for.
type env struct {
	store *memStore
	auth  *publicauth.Service
	host  *fakeHost
	svc   *social.Service
	// logPath is the file the service logs to: the test reads it without sharing memory
	// with the server goroutines.
	logPath string
	url     string
	idps    map[string]*fakeIdP // by kind
}

func newEnv(t *testing.T, kinds ...string) *env {
	t.Helper()
	return newEnvWith(t, nil, kinds...)
}

// newEnvWith is newEnv with options for the social Service.
func newEnvWith(t *testing.T, opts []social.Option, kinds ...string) *env {
	t.Helper()
	router := mux.NewRouter()
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	e := &env{
		store: newMemStore(), url: srv.URL, idps: map[string]*fakeIdP{},
		host: &fakeHost{paused: map[string]bool{}, redirects: map[string]bool{}},
	}
	logFile, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	e.logPath = logFile.Name()
	logger := slog.New(slog.NewTextHandler(logFile, nil))
	e.auth, err = publicauth.New(publicauth.Config{Secret: testSecret, BaseURL: srv.URL, InsecureCookies: true}, e.store,
		publicauth.WithLimiter(ratelimit.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.auth.Close)
	cfg := social.Config{Issuer: srv.URL, Secret: testSecret, InsecureCookies: true}
	for _, kind := range kinds {
		f := newFakeIdP(t, kind)
		e.idps[kind] = f
		cfg.Upstreams = append(cfg.Upstreams, f.upstream())
	}
	e.svc, err = social.New(cfg, e.auth, e.auth.Identities(e.store), e.host,
		append([]social.Option{social.WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.svc.Routes(router)
	return e
}

// browser is a cookie-keeping client that follows no redirect: each step is checked.
type browser struct{ client *http.Client }

func newBrowser(t *testing.T) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{client: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is one answer.
type page struct {
	status   int
	location string
	header   http.Header
	body     string
}

func (b *browser) get(t *testing.T, rawURL string) page {
	t.Helper()
	resp, err := b.client.Get(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), header: resp.Header, body: string(body)}
}

// login starts a login at Gatehouse's loginPath and returns the redirect to the upstream's
// authorization endpoint.
func (e *env) login(t *testing.T, b *browser, loginPath string) *url.URL {
	t.Helper()
	p := b.get(t, e.url+loginPath)
	if p.status != http.StatusFound {
		t.Fatalf("login %s: got %d %s, want a redirect to the provider", loginPath, p.status, p.body)
	}
	u, err := url.Parse(p.location)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// authorize visits the upstream's authorization URL and returns the callback URL it sends
// the browser back to.
func authorize(t *testing.T, b *browser, at *url.URL) string {
	t.Helper()
	p := b.get(t, at.String())
	if p.status != http.StatusFound {
		t.Fatalf("authorize: got %d %s", p.status, p.body)
	}
	return p.location
}

// signIn runs a whole login at kind's provider as profile and returns the callback's
// answer.
func (e *env) signIn(t *testing.T, b *browser, kind, query string, profile idpProfile) page {
	t.Helper()
	f := e.idps[kind]
	f.set(func(f *fakeIdP) { f.next = profile })
	path := "/api/auth/" + kind + "/login"
	if kind == social.KindOIDC {
		path = "/api/auth/oidc/corp/login"
	}
	if query != "" {
		path += "?" + query
	}
	return b.get(t, authorize(t, b, e.login(t, b, path)))
}

// addUser stores a user with email; options change it before it is stored.
func (e *env) addUser(t *testing.T, id, email string, change func(u *publicauth.User)) *publicauth.User {
	t.Helper()
	now := time.Now().UTC()
	u := &publicauth.User{ID: id, Email: email, EmailVerified: true, Name: id, PasswordHash: "$argon2id$v=19$m=65536,t=1,p=1$c2FsdA$aGFzaA",
		Role: publicauth.RoleUser, Status: publicauth.StatusActive, CreatedAt: now, UpdatedAt: now}
	if change != nil {
		change(u)
	}
	if err := e.store.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// signInWithPassword gives b a public session of u, as a password login would.
func (e *env) signInWithPassword(t *testing.T, b *browser, u *publicauth.User) {
	t.Helper()
	rec := httptest.NewRecorder()
	if _, err := e.auth.StartSession(context.Background(), rec, u, publicauth.SessionPublic, publicauth.MethodPassword); err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(e.url)
	b.client.Jar.SetCookies(base, rec.Result().Cookies())
}

// wantLoginPage checks a redirect back to the hosted login page with a social_error code
// (and the paused request, when there is one).
func wantLoginPage(t *testing.T, p page, code, request string) {
	t.Helper()
	want := url.Values{"social_error": {code}}
	if request != "" {
		want.Set("request", request)
	}
	if p.status != http.StatusSeeOther || p.location != "/login?"+want.Encode() {
		t.Fatalf("got %d to %q (%s), want 303 to /login?%s", p.status, p.location, p.body, want.Encode())
	}
}

// wantErrorPage checks that the host's error page answered with status. The page texts
// belong to the page package and are not pinned here.
func wantErrorPage(t *testing.T, p page, status int) {
	t.Helper()
	title, message, _ := strings.Cut(p.body, ": ")
	if p.status != status || title == "" || message == "" || p.location != "" {
		t.Fatalf("got %d %q (location %q), want the error page with %d", p.status, p.body, p.location, status)
	}
}

// logged is what the service has logged so far.
func (e *env) logged() string {
	b, _ := os.ReadFile(e.logPath)
	return string(b)
}
