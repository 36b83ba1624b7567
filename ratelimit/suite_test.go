package ratelimit_test

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	redislimit "github.com/gatehouse-id/gatehouse/ratelimit/redis"
)

// Both limiters are the Limiter that publicauth needs. The Redis limiter lives in package
// ratelimit/redis, so that only programs using Redis link go-redis; its behaviour tests run
// here, in this suite beside Memory's, and in redis_test.go and breaker_test.go.
var (
	_ publicauth.Limiter = (*ratelimit.Memory)(nil)
	_ publicauth.Limiter = (*redislimit.Limiter)(nil)
)

// Environment variables that select the Redis server of the tests.
const (
	// envRedisURL overrides the server, redis://127.0.0.1:6379/0 by default.
	envRedisURL = "GATEHOUSE_TEST_REDIS_URL"
	// envRequireRedis set to "1" makes an unreachable server a test failure, not a skip.
	envRequireRedis = "GATEHOUSE_REQUIRE_REDIS"
)

// subject is one limiter under test and the way to let time pass for it.
type subject struct {
	limiter publicauth.Limiter
	// elapse lets d pass for the limiter: a Memory's clock moves on, Redis is waited for.
	elapse func(t *testing.T, d time.Duration)
	// shortWindow is a window that elapse can wait out in a test.
	shortWindow time.Duration
}

// backend opens fresh subjects of one kind of limiter.
type backend struct {
	name string
	open func(t *testing.T) subject
}

// backends are the limiters every behaviour test runs on.
var backends = []backend{
	{name: "memory", open: openMemory},
	{name: "redis", open: openRedis},
}

// forEachBackend runs test once per backend, as a subtest named after it.
func forEachBackend(t *testing.T, test func(t *testing.T, s subject)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b.open(t)) })
	}
}

// fakeClock is a settable clock for a Memory.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func openMemory(*testing.T) subject {
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return subject{
		limiter:     ratelimit.NewMemory(ratelimit.WithClock(clock.Now)),
		elapse:      func(_ *testing.T, d time.Duration) { clock.Advance(d) },
		shortWindow: time.Minute,
	}
}

func openRedis(t *testing.T) subject {
	client := redisClient(t)
	return subject{
		limiter: redislimit.NewFromClient(client, redislimit.WithPrefix(testPrefix(t, client)),
			redislimit.WithTimeout(5*time.Second)), // a loaded test machine, not a Redis outage
		elapse:      func(_ *testing.T, d time.Duration) { time.Sleep(d) },
		shortWindow: 1200 * time.Millisecond,
	}
}

// redisURL returns the URL of the test server. It skips t when the server does not answer,
// or fails it when envRequireRedis is "1".
func redisURL(t *testing.T) string {
	t.Helper()
	rawURL := os.Getenv(envRedisURL)
	if rawURL == "" {
		rawURL = "redis://127.0.0.1:6379/0"
	}
	options, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", envRedisURL, err)
	}
	options.DialerRetries = 1 // a refused connection is the answer, not worth 5 tries
	probe := redis.NewClient(options)
	defer probe.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := probe.Ping(ctx).Err(); err != nil {
		if os.Getenv(envRequireRedis) == "1" {
			t.Fatalf("Redis at %s does not answer (%v) and %s=1", options.Addr, err, envRequireRedis)
		}
		t.Skipf("Redis at %s does not answer (%v); set %s=1 to make this a failure", options.Addr, err, envRequireRedis)
	}
	return rawURL
}

// redisClient returns a client of the test server, closed when t ends; see redisURL.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	options, err := redis.ParseURL(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	options.ContextTimeoutEnabled = true
	client := redis.NewClient(options)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// testPrefix returns a key prefix of its own for t, whose keys are deleted when t ends.
func testPrefix(t *testing.T, client *redis.Client) string {
	t.Helper()
	prefix := "gatehouse:test:" + rand.Text() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, err := client.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = client.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("delete the keys under %s: %v", prefix, err)
		}
	})
	return prefix
}

// checkRetryAfter fails t unless retryAfter is whole seconds, at least one, and no more
// than window rounded up to seconds.
func checkRetryAfter(t *testing.T, retryAfter, window time.Duration) {
	t.Helper()
	ceiling := (window + time.Second - 1).Truncate(time.Second)
	if retryAfter < time.Second || retryAfter > ceiling || retryAfter%time.Second != 0 {
		t.Errorf("retryAfter = %v, want whole seconds in [1s, %v]", retryAfter, ceiling)
	}
}

// hit calls Hit and fails t on an error.
func hit(t *testing.T, l publicauth.Limiter, key string, limit int, window time.Duration) (bool, time.Duration) {
	t.Helper()
	ok, retryAfter, err := l.Hit(t.Context(), key, limit, window)
	if err != nil {
		t.Fatalf("Hit(%q): %v", key, err)
	}
	return ok, retryAfter
}

// exceeded calls Exceeded and fails t on an error.
func exceeded(t *testing.T, l publicauth.Limiter, key string, limit int, window time.Duration) (bool, time.Duration) {
	t.Helper()
	over, retryAfter, err := l.Exceeded(t.Context(), key, limit, window)
	if err != nil {
		t.Fatalf("Exceeded(%q): %v", key, err)
	}
	return over, retryAfter
}

// hitUpTo makes limit hits on key, failing t unless every one is admitted.
func hitUpTo(t *testing.T, l publicauth.Limiter, key string, limit int, window time.Duration) {
	t.Helper()
	for i := range limit {
		if ok, retryAfter := hit(t, l, key, limit, window); !ok || retryAfter != 0 {
			t.Fatalf("hit %d of %d: ok=%v retryAfter=%v, want admitted", i+1, limit, ok, retryAfter)
		}
	}
}

func TestLimitAdmitsExactlyLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s subject) {
		const limit, window = 5, time.Minute
		hitUpTo(t, s.limiter, "k", limit, window)
		for range 3 { // refusals keep being refused
			ok, retryAfter := hit(t, s.limiter, "k", limit, window)
			if ok {
				t.Fatalf("hit past the limit admitted")
			}
			checkRetryAfter(t, retryAfter, window)
		}
	})
}

func TestWindowEndReopens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s subject) {
		const limit = 2
		window := s.shortWindow
		hitUpTo(t, s.limiter, "k", limit, window)
		ok, retryAfter := hit(t, s.limiter, "k", limit, window)
		if ok {
			t.Fatalf("hit past the limit admitted")
		}
		checkRetryAfter(t, retryAfter, window)
		// Waiting as long as the refusal said is enough.
		s.elapse(t, retryAfter)
		if over, _ := exceeded(t, s.limiter, "k", limit, window); over {
			t.Errorf("Exceeded after the window ended = true")
		}
		hitUpTo(t, s.limiter, "k", limit, window)
		if ok, _ := hit(t, s.limiter, "k", limit, window); ok {
			t.Errorf("the new window admitted more than the limit")
		}
	})
}

func TestExceededRecordsNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s subject) {
		const limit, window = 3, time.Minute
		for range 10 {
			if over, retryAfter := exceeded(t, s.limiter, "k", limit, window); over || retryAfter != 0 {
				t.Fatalf("Exceeded on an unused key = %v, %v", over, retryAfter)
			}
		}
		hitUpTo(t, s.limiter, "k", limit-1, window)
		if over, _ := exceeded(t, s.limiter, "k", limit, window); over {
			t.Errorf("Exceeded with limit-1 attempts = true")
		}
		hit(t, s.limiter, "k", limit, window) // the limit-th, admitted
		over, retryAfter := exceeded(t, s.limiter, "k", limit, window)
		if !over {
			t.Fatalf("Exceeded with limit attempts = false")
		}
		checkRetryAfter(t, retryAfter, window)
		if ok, _ := hit(t, s.limiter, "k", limit, window); ok {
			t.Errorf("hit past the limit admitted")
		}
	})
}

func TestResetClears(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s subject) {
		const limit, window = 2, time.Minute
		if err := s.limiter.Reset(t.Context(), "never-used"); err != nil {
			t.Fatalf("Reset of an unused key: %v", err)
		}
		hitUpTo(t, s.limiter, "k", limit, window)
		if err := s.limiter.Reset(t.Context(), "k"); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		if over, _ := exceeded(t, s.limiter, "k", limit, window); over {
			t.Errorf("Exceeded after Reset = true")
		}
		hitUpTo(t, s.limiter, "k", limit, window)
	})
}

func TestKeysAreIndependent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s subject) {
		const limit, window = 2, time.Minute
		hitUpTo(t, s.limiter, "login:ip:192.0.2.1", limit, window)
		if ok, _ := hit(t, s.limiter, "login:ip:192.0.2.1", limit, window); ok {
			t.Fatalf("hit past the limit admitted")
		}
		hitUpTo(t, s.limiter, "login:ip:192.0.2.2", limit, window)
		hitUpTo(t, s.limiter, "login:account:ann@example.com", limit, window)
		if err := s.limiter.Reset(t.Context(), "login:ip:192.0.2.2"); err != nil {
			t.Fatal(err)
		}
		if over, _ := exceeded(t, s.limiter, "login:ip:192.0.2.1", limit, window); !over {
			t.Errorf("Reset of one key cleared another")
		}
	})
}

func TestConcurrentHitsAdmitExactlyLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s subject) {
		const goroutines, limit, window = 50, 10, time.Minute
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			admitted int
			errs     []error
		)
		start := make(chan struct{})
		for range goroutines {
			wg.Go(func() {
				<-start
				ok, _, err := s.limiter.Hit(t.Context(), "k", limit, window)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if ok {
					admitted++
				}
			})
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("Hit: %v", err)
		}
		if admitted != limit {
			t.Errorf("%d concurrent hits admitted %d, want %d", goroutines, admitted, limit)
		}
	})
}

func TestInvalidWindowIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s subject) {
		for _, window := range []time.Duration{0, -time.Second} {
			if _, _, err := s.limiter.Hit(t.Context(), "k", 1, window); !errors.Is(err, ratelimit.ErrInvalidWindow) {
				t.Errorf("Hit with window %v: err = %v, want ErrInvalidWindow", window, err)
			}
			if _, _, err := s.limiter.Exceeded(t.Context(), "k", 1, window); !errors.Is(err, ratelimit.ErrInvalidWindow) {
				t.Errorf("Exceeded with window %v: err = %v, want ErrInvalidWindow", window, err)
			}
		}
	})
}
