package provider_test

import (
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestFailedTokenRequestsLimited: failed client authentications at the token, revocation
// and introspection endpoints count against the caller's IP; over the limit even a right
// request waits for the window to end. Successes and other failures are never counted.
func TestFailedTokenRequestsLimited(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		var offset atomic.Int64
		e := newEnv(t, b, provider.Config{PublicAuth: provider.PublicAuthConfig{
			TokenErrorLimit: provider.RateLimit{Limit: 3, Window: time.Minute},
		}}, provider.WithClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }))
		svc := e.client(t, provider.ClientSpec{ID: "svc", GrantTypes: []string{"client_credentials"}, Scopes: []string{"profile"}})
		grant := url.Values{"grant_type": {"client_credentials"}, "scope": {"profile"}}
		wrong := svc
		wrong.ClientSecret = "not-the-secret"

		// Successes and other failures are free: more of them than the limit.
		for range 5 {
			if r := e.call(t, http.MethodPost, "/api/oauth/token", grant, basicAuth(svc)); r.status != http.StatusOK {
				t.Fatalf("token with the right secret: got %s, want 200", r)
			}
			refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"expired-or-unknown"}}
			if r := e.call(t, http.MethodPost, "/api/oauth/token", refresh, basicAuth(svc)); r.status != http.StatusBadRequest {
				t.Fatalf("refresh with an unknown token: got %s, want 400", r)
			}
			if r := e.call(t, http.MethodGet, "/api/oauth/userinfo", nil, bearer("not-a-token")); r.status != http.StatusUnauthorized {
				t.Fatalf("userinfo with a bad token: got %s, want 401", r)
			}
		}
		failures := []struct {
			path string
			form url.Values
			auth func(*http.Request)
		}{
			{"/api/oauth/token", grant, basicAuth(wrong)},
			{"/api/oauth/revoke", url.Values{"token": {"x"}}, basicAuth(wrong)},
			{"/api/oauth/introspect", url.Values{"token": {"x"}}, basicAuth(wrong)},
		}
		for _, f := range failures {
			if r := e.call(t, http.MethodPost, f.path, f.form, f.auth); r.status != http.StatusUnauthorized {
				t.Fatalf("%s with a wrong client secret: got %s, want 401", f.path, r)
			}
		}
		r := e.call(t, http.MethodPost, "/api/oauth/token", grant, basicAuth(svc))
		if r.status != http.StatusTooManyRequests || r.body["error"] != "slow_down" {
			t.Fatalf("token after 3 failures: got %s, want 429 slow_down", r)
		}
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Errorf("Retry-After = %q, want 1..60 seconds", r.header.Get("Retry-After"))
		}
		offset.Store(int64(time.Minute + time.Second))
		if r := e.call(t, http.MethodPost, "/api/oauth/token", grant, basicAuth(svc)); r.status != http.StatusOK {
			t.Errorf("token once the window ended: got %s, want 200", r)
		}
	})
}
