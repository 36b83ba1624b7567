package publicauth_test

import (
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/cutproxy"
	"github.com/gatehouse-id/gatehouse/internal/testlog"
	"github.com/gatehouse-id/gatehouse/publicauth"
	redislimit "github.com/gatehouse-id/gatehouse/ratelimit/redis"
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
		r, err := redislimit.New(testRedisURL, redislimit.WithPrefix(prefix))
		if err != nil {
			t.Fatalf("redis.New: %v", err)
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

// While Redis is down, logins fail open and the service logs the limiter's failure at
// ERROR once, when the limiter's circuit breaker opens; the calls the open breaker fails
// fast are logged at DEBUG, not a line per request at ERROR.
func TestRedisOutageLoggedOnce(t *testing.T) {
	u, err := url.Parse(testRedisURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := cutproxy.Start(t, u.Host)
	u.Host = proxy.Addr()
	r, err := redislimit.New(u.String(), redislimit.WithPrefix("gatehouse-test:"+rand.Text()+":"), redislimit.WithCoolDown(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	var logs testlog.Buffer
	e := newEnv(t, storagetest.Backends(t)[0], publicauth.Config{}, publicauth.WithLimiter(r),
		publicauth.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))))
	const email = "outage@example.com"
	verified(t, e, email, "correct horse battery")

	proxy.SetDown(true)
	for i := range 5 {
		res := e.postJSON(t, "/api/public/login", map[string]string{"email": email, "password": "correct horse battery"})
		if res.status != http.StatusOK {
			t.Fatalf("login %d with Redis down: %d, want 200 (the limits fail open)", i+1, res.status)
		}
	}
	if n := strings.Count(logs.String(), "rate limiter failed"); n != 1 {
		t.Errorf("%d ERROR lines of the limiter failing over 5 logins, want 1 (then the breaker fails fast):\n%s", n, logs.String())
	}
}
