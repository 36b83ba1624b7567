package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// The cache of verified access tokens (Config.VerifiedTokenCacheSize) saves the parse and
// the signature check of a token presented again, and nothing else: each test below warms
// the cache with a genuine token and then checks that what would have refused the token
// without the cache refuses it with the cache too.

// wantVerified asserts that p accepts token, and that it verified it in full (checked) or
// took it from the cache.
func wantVerified(t *testing.T, p *provider.Provider, token string, checked bool) *provider.AccessToken {
	t.Helper()
	before := p.TokenChecks()
	at, err := p.VerifyAccessToken(context.Background(), token)
	if err != nil {
		t.Fatalf("VerifyAccessToken: %v", err)
	}
	if got := p.TokenChecks() - before; got != map[bool]uint64{true: 1, false: 0}[checked] {
		t.Fatalf("full verifications: got %d, want %v", got, map[bool]int{true: 1, false: 0}[checked])
	}
	return at
}

// wantInvalid asserts that p refuses token as ErrInvalidToken.
func wantInvalid(t *testing.T, p *provider.Provider, token string) {
	t.Helper()
	if at, err := p.VerifyAccessToken(context.Background(), token); !errors.Is(err, provider.ErrInvalidToken) || at != nil {
		t.Fatalf("got %+v, %v; want ErrInvalidToken", at, err)
	}
}

// TestVerifiedTokenCache: a token verified once is served from the cache, but a token that
// differs in one byte, has expired, was revoked (at the revocation endpoint or by revoking
// the user's permission) or whose signing key was withdrawn is refused at once, as it is
// without the cache.
func TestVerifiedTokenCache(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		ctx := context.Background()
		cases := []struct {
			name string
			// refuse is done after the genuine token was verified twice (the second from the
			// cache); it returns the token that must then be refused.
			refuse func(t *testing.T, token string) string
		}{
			{"one byte of the signature flipped", func(t *testing.T, token string) string {
				// Not the last character: its low bits are padding that base64 ignores.
				i := len(token) - 10
				flipped := token[:i] + map[bool]string{true: "B", false: "A"}[token[i] == 'A'] + token[i+1:]
				t.Cleanup(func() {
					// The genuine token is still served from the cache.
					wantVerified(t, e.p, token, false)
				})
				return flipped
			}},
			{"one byte of the claims flipped", func(t *testing.T, token string) string {
				i := strings.IndexByte(token, '.') + 5
				return token[:i] + map[bool]string{true: "B", false: "A"}[token[i] == 'A'] + token[i+1:]
			}},
			{"expired by the provider's clock", func(t *testing.T, token string) string {
				e.clockOffset.Store(int64(2 * time.Hour))
				t.Cleanup(func() { e.clockOffset.Store(0) })
				return token
			}},
			{"revoked at the revocation endpoint", func(t *testing.T, token string) string {
				if r := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {token}}, basicAuth(e.app)); r.status != http.StatusOK {
					t.Fatalf("revoke: got %s, want 200", r)
				}
				return token
			}},
			{"client deleted", func(t *testing.T, token string) string {
				if err := e.p.DeleteClient(ctx, e.other.ClientID); err != nil {
					t.Fatal(err)
				}
				return token
			}},
			{"signing key withdrawn", func(t *testing.T, token string) string {
				// Rotate with the clock one retention period (2 reload intervals + the token
				// lifespan + 5 minutes) in the past, then reload at the real time: the key that
				// signed the token leaves the key set while the token is still unexpired.
				e.clockOffset.Store(int64(-2 * time.Hour))
				if _, err := e.p.RotateKeys(ctx); err != nil {
					t.Fatal(err)
				}
				e.clockOffset.Store(0)
				if err := e.p.ReloadKeys(ctx); err != nil {
					t.Fatal(err)
				}
				h, _ := decodeJWT(t, token)
				for _, k := range e.p.Keys() {
					if k.KID == h["kid"] {
						t.Fatalf("key %v still published after its retention", h["kid"])
					}
				}
				return token
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				client := e.app
				if c.name == "client deleted" {
					client = e.other
				}
				token := e.clientToken(t, client, "profile")
				wantVerified(t, e.p, token, true)
				wantVerified(t, e.p, token, false)
				wantInvalid(t, e.p, c.refuse(t, token))
			})
		}
	})
}

// TestVerifiedTokenCachePermissionRevoked: a user's token that userinfo accepted (and
// cached) is refused at once when an admin revokes the user's permission for the client.
func TestVerifiedTokenCachePermissionRevoked(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		token := e.userToken(t, e.browser(t), e.app, e.alice.Email).AccessToken
		for range 2 {
			if r := e.userinfo(t, token); r.status != http.StatusOK {
				t.Fatalf("userinfo: got %s, want 200", r)
			}
		}
		checks := e.p.TokenChecks()
		if r := e.userinfo(t, token); r.status != http.StatusOK || e.p.TokenChecks() != checks {
			t.Fatalf("userinfo: got %s after %d full verifications, want 200 from the cache", r, e.p.TokenChecks()-checks)
		}
		admin := e.publicSession(t, e.admin.Email)
		if r := e.sendJSON(t, http.MethodPut, adminRecordPath(e.alice.ID, "app"), `{"status":"approved","role":"user"}`, admin); r.status != http.StatusCreated {
			t.Fatalf("admin PUT: got %s, want 201", r)
		}
		if r := e.sendJSON(t, http.MethodDelete, adminRecordPath(e.alice.ID, "app"), "", admin); r.status != http.StatusOK {
			t.Fatalf("admin DELETE: got %s, want 200", r)
		}
		wantRefused(t, e.env, e.app, token)
	})
}

// TestVerifiedTokenCacheAcrossReplicas: replica B has the token cached; replica A, with its
// own store on the same database, revokes it; B refuses it on the next request.
func TestVerifiedTokenCacheAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		dsn := b.DSN(t)
		secret := strings.Repeat("s", 32)
		replica := func() (*provider.Provider, *httptest.Server) {
			store, err := storage.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = store.Close() })
			p, err := provider.New(provider.Config{Issuer: "https://login.example", Secret: testSecret, JanitorInterval: -1},
				provider.WithStore(store), provider.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			t.Cleanup(func() { srv.Close(); _ = p.Close() })
			return p, srv
		}
		a, aSrv := replica()
		bp, _ := replica()
		if _, err := a.CreateClient(ctx, provider.ClientSpec{ID: "svc", Secret: secret,
			GrantTypes: []string{"client_credentials"}, AuthMethod: "client_secret_post"}); err != nil {
			t.Fatal(err)
		}
		post := func(path string, form url.Values) map[string]any {
			t.Helper()
			form.Set("client_id", "svc")
			form.Set("client_secret", secret)
			resp, err := http.PostForm(aSrv.URL+path, form)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST %s at A: status %d, %v", path, resp.StatusCode, body)
			}
			return body
		}
		token, _ := post("/api/oauth/token", url.Values{"grant_type": {"client_credentials"}})["access_token"].(string)
		wantVerified(t, bp, token, true)
		wantVerified(t, bp, token, false)
		post("/api/oauth/revoke", url.Values{"token": {token}})
		wantInvalid(t, bp, token)
	})
}

// TestVerifiedTokenCacheCopies: what VerifyAccessToken returns is the caller's own: changing
// its claims, scopes or audience changes nothing the next call returns.
func TestVerifiedTokenCacheCopies(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		token := e.clientToken(t, e.app, "profile", "email")
		first := wantVerified(t, e.p, token, true)
		want, _ := json.Marshal(first)
		for i, at := range []*provider.AccessToken{first, wantVerified(t, e.p, token, false)} {
			at.Scopes[0] = "admin"
			at.Audience[0] = "evil"
			at.Claims["sub"] = "mallory"
			at.Claims["extra"] = map[string]any{"x": 1}
			if aud, ok := at.Claims["aud"].([]any); ok {
				aud[0] = "evil"
			}
			again := wantVerified(t, e.p, token, false)
			if got, _ := json.Marshal(again); string(got) != string(want) {
				t.Errorf("after changing result %d: got %s, want %s", i, got, want)
			}
		}
	})
}

// TestVerifiedTokenCacheBounded: the cache never holds more tokens than its size, and with
// a negative size there is none: every token is verified in full and still accepted.
func TestVerifiedTokenCacheBounded(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, size := range []int{4, -1} {
			e := newPermEnv(t, b, provider.Config{VerifiedTokenCacheSize: size})
			var tokens []string
			for range 10 {
				tokens = append(tokens, e.clientToken(t, e.app, "profile"))
			}
			for _, tok := range tokens {
				wantVerified(t, e.p, tok, true)
				if got := e.p.VerifiedTokensCached(); got > max(size, 0) {
					t.Fatalf("size %d: %d tokens cached", size, got)
				}
			}
			last := tokens[len(tokens)-1]
			wantVerified(t, e.p, last, size < 0)
			if size < 0 {
				if r := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {last}}, basicAuth(e.app)); r.status != http.StatusOK {
					t.Fatalf("revoke: got %s, want 200", r)
				}
				wantInvalid(t, e.p, last)
			}
		}
	})
}
