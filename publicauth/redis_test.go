package publicauth_test

import (
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// testRedisURL is the Redis server of the tests (as on the CI machine).
const testRedisURL = "redis://127.0.0.1:6379"

// Two services (two replicas) over one database, each with its own Redis limiter on the same
// server and prefix, share the login lockout: failures on either count for both.
func TestRedisSharedLockout(t *testing.T) {
	b := storagetest.Backends(t)[0]
	store := b.Open(t)
	prefix := "gatehouse-test:" + rand.Text() + ":"
	limiter := func() publicauth.Option {
		r, err := ratelimit.NewRedis(testRedisURL, ratelimit.WithPrefix(prefix))
		if err != nil {
			t.Fatalf("NewRedis: %v", err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return publicauth.WithLimiter(r)
	}
	cfg := publicauth.Config{Limits: publicauth.RateLimits{Lockout: publicauth.Rate{Limit: 3, Window: 15 * time.Minute}}}
	a := newEnvOn(t, store, cfg, limiter())
	c := newEnvOn(t, store, cfg, limiter())
	const email = "shared@example.com"
	verified(t, a, email, "correct horse battery")

	for i, e := range []*env{a, c, a} {
		res := e.postJSON(t, "/api/public/login", map[string]string{"email": email, "password": "wrong password"})
		if res.status != http.StatusUnauthorized {
			t.Fatalf("failure #%d: status %d, want 401", i+1, res.status)
		}
	}
	for name, e := range map[string]*env{"first replica": a, "second replica": c} {
		res := e.postJSON(t, "/api/public/login", map[string]string{"email": email, "password": "correct horse battery"})
		if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") == "" {
			t.Errorf("%s: status %d, Retry-After %q; want 429 with Retry-After", name, res.status, res.header.Get("Retry-After"))
		}
	}
}
