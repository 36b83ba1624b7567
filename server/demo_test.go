package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
)

func newTestDemo() *demo {
	return newDemo("http://localhost:8080", "http://127.0.0.1:1", slog.New(slog.DiscardHandler))
}

func TestDemoLoginStartsPKCEFlow(t *testing.T) {
	d := newTestDemo()
	mux := http.NewServeMux()
	d.register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/demo/login", nil))

	if rec.Code != http.StatusFound {
		t.Fatalf("status: got %d, want 302", rec.Code)
	}
	loc, err := url.Parse(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != "http://localhost:8080/api/oauth/authorize" {
		t.Errorf("redirect: got %q, want the issuer's authorize endpoint", got)
	}
	q := loc.Query()
	want := map[string]string{
		"client_id": "gatehouse-demo", "response_type": "code", "code_challenge_method": "S256",
		"redirect_uri": "http://localhost:8080/demo/callback", "scope": "openid profile email offline_access",
	}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s: got %q, want %q", k, q.Get(k), v)
		}
	}
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if q.Get(k) == "" {
			t.Errorf("%s: missing", k)
		}
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies: got %d, want 1", len(cookies))
	}
	c := cookies[0]
	if c.Name != demoCookie || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.MaxAge <= 0 || c.MaxAge > 600 {
		t.Errorf("cookie: got %+v, want a short-lived HttpOnly SameSite=Lax cookie", c)
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 || parts[0] != q.Get("state") || parts[1] != q.Get("nonce") {
		t.Errorf("cookie value: got %q, want state.nonce.verifier", c.Value)
	}
}

func TestDemoCallbackRejects(t *testing.T) {
	d := newTestDemo()
	mux := http.NewServeMux()
	d.register(mux)
	tests := []struct {
		name       string
		query      string
		cookie     string
		wantStatus int
		wantText   string
	}{
		{"no flow cookie", "?code=c&state=s", "", 400, "expired"},
		{"state mismatch", "?code=c&state=other", "s.n.v", 400, "state"},
		{"error from the provider", "?error=access_denied&error_description=no&state=s", "s.n.v", 400, "access_denied"},
		{"forged error without the state is not shown", "?error=access_denied&error_description=call+0800-SCAM", "s.n.v", 400, "state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/demo/callback"+tt.query, nil)
			if tt.cookie != "" {
				req.AddCookie(&http.Cookie{Name: demoCookie, Value: tt.cookie})
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
			if !strings.Contains(rec.Body.String(), tt.wantText) {
				t.Errorf("body lacks %q:\n%s", tt.wantText, rec.Body.String())
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("CSP: got %q", csp)
			}
		})
	}
}

func TestDemoIndexLinksToLogin(t *testing.T) {
	d := newTestDemo()
	mux := http.NewServeMux()
	d.register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/demo", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `href="/demo/login"`) {
		t.Errorf("got %d:\n%s", rec.Code, rec.Body.String())
	}
}

func TestInternalURL(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 9000}, "http://10.0.0.5:9000"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 80}, "http://[::1]:80"},
	}
	for _, tt := range tests {
		if got := internalURL(tt.addr); got != tt.want {
			t.Errorf("internalURL(%v): got %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestEnsureDemoClientFollowsIssuer(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	p, err := provider.New(provider.Config{
		DSN:             "sqlite:" + filepath.Join(t.TempDir(), "gatehouse.db"),
		Secret:          []byte(strings.Repeat("k", 32)),
		JanitorInterval: -1,
	}, provider.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	for i, issuer := range []string{"http://a.example.com", "http://a.example.com", "https://b.example.com"} {
		if err := ensureDemoClient(ctx, p, issuer, logger); err != nil {
			t.Fatalf("ensure #%d: %v", i, err)
		}
		c, err := p.ClientByID(ctx, demoClientID)
		if err != nil {
			t.Fatalf("ensure #%d: %v", i, err)
		}
		if !c.Public || !c.FirstParty ||
			!slices.Equal(c.RedirectURIs, []string{issuer + "/demo/callback"}) ||
			!slices.Equal(c.PostLogoutRedirectURIs, []string{issuer + "/demo"}) {
			t.Errorf("ensure #%d for %s: got %+v", i, issuer, c)
		}
	}
}
