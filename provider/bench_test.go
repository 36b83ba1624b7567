package provider_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
)

// benchProvider starts a provider on a fresh SQLite file behind a loopback HTTP server.
func benchProvider(b *testing.B, cfg provider.Config) (*provider.Provider, string) {
	b.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, "sqlite:"+benchDir(b)+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	cfg.Issuer, cfg.Secret, cfg.JanitorInterval = issuer, []byte(strings.Repeat("k", 32)), -1
	p, err := provider.New(cfg, provider.WithStore(st), provider.WithLogger(discardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	srv.Config.Handler = p
	srv.Start()
	b.Cleanup(func() { srv.Close(); _ = p.Close() })
	return p, issuer
}

func postForm(b *testing.B, c *http.Client, target string, form url.Values) []byte {
	resp, err := c.PostForm(target, form)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("POST %s: %d %s", target, resp.StatusCode, body)
	}
	return body
}

// BenchmarkClientCredentials measures the token endpoint: client authentication (HMAC),
// one transaction storing the token, and a signed JWT access token, for each signing
// algorithm.
func BenchmarkClientCredentials(b *testing.B) {
	for _, alg := range []string{provider.AlgRS256, provider.AlgES256} {
		b.Run(alg, func(b *testing.B) {
			p, issuer := benchProvider(b, provider.Config{AccessTokenAlg: alg})
			c, err := p.CreateClient(context.Background(), provider.ClientSpec{
				ID: "svc", Name: "Service", GrantTypes: []string{"client_credentials"}, Scopes: []string{"manage_permissions"},
				AuthMethod: "client_secret_post",
			})
			if err != nil {
				b.Fatal(err)
			}
			form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"svc"}, "client_secret": {c.ClientSecret},
				"scope": {"manage_permissions"}}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				hc := &http.Client{}
				for pb.Next() {
					postForm(b, hc, issuer+"/api/oauth/token", form)
				}
			})
		})
	}
}

// BenchmarkAuthorizationCode measures a whole silent login: /api/oauth/authorize with a
// live session and remembered consent, then the code + PKCE exchange for access, refresh and
// ID tokens.
func BenchmarkAuthorizationCode(b *testing.B) {
	p, issuer := benchProvider(b, provider.Config{})
	ctx := context.Background()
	const redirect = "http://127.0.0.1:1/callback"
	c, err := p.CreateClient(ctx, provider.ClientSpec{ID: "web", Name: "Web", RedirectURIs: []string{redirect}, FirstParty: true, AuthMethod: "client_secret_post"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.CreateUser(ctx, provider.UserSpec{Email: "bench@example.com", Password: "bench password 1", Name: "Bench"}); err != nil {
		b.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	login, _ := url.Parse(issuer + "/api/public/login")
	resp, err := browser.Post(login.String(), "application/json", strings.NewReader(`{"email":"bench@example.com","password":"bench password 1"}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("login: %v %v", err, resp)
	}
	resp.Body.Close()

	verifier := strings.Repeat("v", 64)
	sum := sha256.Sum256([]byte(verifier))
	authorize := issuer + "/api/oauth/authorize?" + url.Values{
		"client_id": {"web"}, "redirect_uri": {redirect}, "response_type": {"code"},
		"scope": {"openid profile email offline_access"}, "state": {"bench-state"}, "nonce": {"bench-nonce"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
	}.Encode()
	codeParam := regexp.MustCompile(`[?&]code=([^&]+)`)
	hc := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := browser.Get(authorize)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		m := codeParam.FindStringSubmatch(resp.Header.Get("Location"))
		if m == nil {
			b.Fatalf("no code in %q", resp.Header.Get("Location"))
		}
		code, _ := url.QueryUnescape(m[1])
		postForm(b, hc, issuer+"/api/oauth/token", url.Values{
			"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
			"client_id": {"web"}, "client_secret": {c.ClientSecret}, "code_verifier": {verifier},
		})
	}
}

func benchDir(b *testing.B) string {
	// BENCH_DIR puts the database elsewhere, e.g. on tmpfs to take the disk out.
	if d := os.Getenv("BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// benchClientToken creates a client_credentials client on p and returns its credentials
// and one access token issued to it.
func benchClientToken(b *testing.B, p *provider.Provider, issuer string) (form url.Values, token string) {
	b.Helper()
	c, err := p.CreateClient(context.Background(), provider.ClientSpec{
		ID: "svc", Name: "Service", GrantTypes: []string{"client_credentials"}, Scopes: []string{"manage_permissions"},
		AuthMethod: "client_secret_post",
	})
	if err != nil {
		b.Fatal(err)
	}
	form = url.Values{"client_id": {"svc"}, "client_secret": {c.ClientSecret}}
	body := postForm(b, &http.Client{}, issuer+"/api/oauth/token", url.Values{"grant_type": {"client_credentials"},
		"client_id": {"svc"}, "client_secret": {c.ClientSecret}, "scope": {"manage_permissions"}})
	token = regexp.MustCompile(`"access_token":"([^"]+)"`).FindStringSubmatch(string(body))[1]
	return form, token
}

// benchTokenCache runs bench with the cache of verified tokens on (the default) and off.
func benchTokenCache(b *testing.B, bench func(b *testing.B, cfg provider.Config)) {
	b.Run("cached", func(b *testing.B) { bench(b, provider.Config{}) })
	b.Run("uncached", func(b *testing.B) { bench(b, provider.Config{VerifiedTokenCacheSize: -1}) })
}

// BenchmarkVerifyAccessToken measures Provider.VerifyAccessToken of one ES256 token
// presented again and again, as an API beside the provider sees it: the signature and the
// claims (uncached) and the revocation query on SQLite.
func BenchmarkVerifyAccessToken(b *testing.B) {
	benchTokenCache(b, func(b *testing.B, cfg provider.Config) {
		p, issuer := benchProvider(b, cfg)
		_, token := benchClientToken(b, p, issuer)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.VerifyAccessToken(ctx, token); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkIntrospectAccessToken measures the introspection endpoint over loopback HTTP
// for one ES256 access token introspected again and again.
func BenchmarkIntrospectAccessToken(b *testing.B) {
	benchTokenCache(b, func(b *testing.B, cfg provider.Config) {
		p, issuer := benchProvider(b, cfg)
		form, token := benchClientToken(b, p, issuer)
		form.Set("token", token)
		hc := &http.Client{}
		b.ReportAllocs()
		for b.Loop() {
			if body := postForm(b, hc, issuer+"/api/oauth/introspect", form); !strings.Contains(string(body), `"active":true`) {
				b.Fatalf("introspection: %s", body)
			}
		}
	})
}
