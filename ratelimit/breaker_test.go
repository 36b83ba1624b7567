package ratelimit_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/cutproxy"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	redislimit "github.com/gatehouse-id/gatehouse/ratelimit/redis"
)

// After Redis fails, the limiter's circuit breaker fails every call at once, without
// contacting Redis, for the cool-down; then one call probes Redis: a failed probe opens the
// breaker for another cool-down, an answered one closes it. It logs the opening and the
// closing once each. Contact with Redis is counted by the connections a proxy in front of
// it accepts; the cool-down runs on a test clock.
func TestRedisBreaker(t *testing.T) {
	u, err := url.Parse(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := cutproxy.Start(t, u.Host)
	via := *u
	via.Host = proxy.Addr()
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var logs bytes.Buffer
	const coolDown = time.Minute
	limiter, err := redislimit.New(via.String(), redislimit.WithPrefix(testPrefix(t, redisClient(t))),
		redislimit.WithTimeout(5*time.Second), redislimit.WithCoolDown(coolDown), redislimit.WithClock(clock.Now),
		redislimit.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer limiter.Close()
	ctx := t.Context()
	wantState := func(when string, want ratelimit.BreakerState) {
		t.Helper()
		if got, _ := limiter.Breaker(); got != want {
			t.Fatalf("%s: breaker %v, want %v", when, got, want)
		}
	}
	// failsFast checks that every kind of call fails with ErrBreakerOpen, marked FailingFast,
	// and that none of them contacted Redis.
	failsFast := func(when string) {
		t.Helper()
		contacts := proxy.Accepted()
		for range 10 {
			_, _, hitErr := limiter.Hit(ctx, "k", 5, time.Minute)
			_, _, exceededErr := limiter.Exceeded(ctx, "k", 5, time.Minute)
			for _, err := range []error{hitErr, exceededErr, limiter.Reset(ctx, "k")} {
				var ff interface{ FailingFast() bool }
				if !errors.Is(err, redislimit.ErrBreakerOpen) || !errors.As(err, &ff) || !ff.FailingFast() {
					t.Fatalf("%s: got %v, want ErrBreakerOpen", when, err)
				}
			}
		}
		if n := proxy.Accepted() - contacts; n != 0 {
			t.Errorf("%s: %d connections to Redis while the breaker is open, want none", when, n)
		}
	}
	// failsOnRedis checks that a call tried Redis and failed with Redis's error.
	failsOnRedis := func(when string) {
		t.Helper()
		contacts := proxy.Accepted()
		if ok, _, err := limiter.Hit(ctx, "k", 5, time.Minute); err == nil || ok || errors.Is(err, redislimit.ErrBreakerOpen) {
			t.Fatalf("%s: Hit = %v, %v; want Redis's error", when, ok, err)
		}
		if proxy.Accepted() == contacts {
			t.Errorf("%s: the call did not try Redis", when)
		}
	}

	if ok, _, err := limiter.Hit(ctx, "k", 5, time.Minute); err != nil || !ok {
		t.Fatalf("Hit with Redis up = %v, %v", ok, err)
	}
	wantState("Redis up", ratelimit.BreakerClosed)

	proxy.SetDown(true)
	failsOnRedis("the first call after Redis went down")
	wantState("after a failure", ratelimit.BreakerOpen)
	failsFast("within the cool-down")

	clock.Advance(coolDown)
	failsOnRedis("the probe after the cool-down, Redis still down")
	wantState("after a failed probe", ratelimit.BreakerOpen)
	failsFast("within the next cool-down")

	proxy.SetDown(false)
	failsFast("Redis back, within the cool-down")
	clock.Advance(coolDown)
	contacts := proxy.Accepted()
	if ok, _, err := limiter.Hit(ctx, "k", 5, time.Minute); err != nil || !ok {
		t.Fatalf("the probe with Redis back: Hit = %v, %v; want admitted", ok, err)
	}
	if proxy.Accepted() == contacts {
		t.Errorf("the probe did not contact Redis")
	}
	wantState("after an answered probe", ratelimit.BreakerClosed)
	for i := range 3 {
		if _, _, err := limiter.Hit(ctx, "k", 5, time.Minute); err != nil {
			t.Fatalf("Hit %d after the breaker closed: %v", i, err)
		}
	}

	if _, opened := limiter.Breaker(); opened != 1 {
		t.Errorf("the breaker opened %d times, want 1 (a failed probe reopens it without counting)", opened)
	}
	if n := strings.Count(logs.String(), "circuit breaker open"); n != 1 {
		t.Errorf("%d log lines of the breaker opening, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "circuit breaker closed"); n != 1 {
		t.Errorf("%d log lines of the breaker closing, want 1:\n%s", n, logs.String())
	}
}
