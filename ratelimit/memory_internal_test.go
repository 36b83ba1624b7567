package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// settableClock is a clock the test moves by hand; these tests use one goroutine.
type settableClock struct{ now time.Time }

func (c *settableClock) Now() time.Time { return c.now }

func TestRetryAfterRounding(t *testing.T) {
	for _, c := range []struct{ left, want time.Duration }{
		{0, time.Second},
		{time.Nanosecond, time.Second},
		{999 * time.Millisecond, time.Second},
		{time.Second, time.Second},
		{time.Second + time.Nanosecond, 2 * time.Second},
		{49700 * time.Millisecond, 50 * time.Second},
		{time.Minute, time.Minute},
		{-time.Second, time.Second},
	} {
		if got := RetryAfter(c.left); got != c.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.left, got, c.want)
		}
	}
}

// The window runs from the first hit, to the nanosecond of the clock; retryAfter counts
// down in whole seconds.
func TestMemoryWindowBoundary(t *testing.T) {
	clock := &settableClock{now: t0}
	m := NewMemory(WithClock(clock.Now))
	ctx := t.Context()
	const limit, window = 1, time.Minute
	if ok, _, _ := m.Hit(ctx, "k", limit, window); !ok {
		t.Fatal("first hit refused")
	}
	clock.now = t0.Add(10300 * time.Millisecond)
	if ok, ra, _ := m.Hit(ctx, "k", limit, window); ok || ra != 50*time.Second {
		t.Errorf("hit at +10.3s = %v, %v; want refused, 50s", ok, ra)
	}
	clock.now = t0.Add(window - time.Nanosecond)
	if over, ra, _ := m.Exceeded(ctx, "k", limit, window); !over || ra != time.Second {
		t.Errorf("Exceeded 1ns before the end = %v, %v; want true, 1s", over, ra)
	}
	clock.now = t0.Add(window)
	if over, _, _ := m.Exceeded(ctx, "k", limit, window); over {
		t.Errorf("Exceeded at the end = true")
	}
	if ok, _, _ := m.Hit(ctx, "k", limit, window); !ok {
		t.Errorf("hit at the end refused")
	}
	// A later call with another window does not stretch the current one.
	clock.now = t0.Add(window + 30*time.Second)
	if ok, ra, _ := m.Hit(ctx, "k", limit, time.Hour); ok || ra != 30*time.Second {
		t.Errorf("hit with a longer window = %v, %v; want refused, 30s", ok, ra)
	}
}

// Expired windows are dropped by the sweeps that ordinary calls run, so the table does not
// grow with keys that are done.
func TestMemorySweepsExpiredWindows(t *testing.T) {
	clock := &settableClock{now: t0}
	m := NewMemory(WithClock(clock.Now))
	ctx := t.Context()
	const keys = 3000
	for i := range keys {
		m.Hit(ctx, fmt.Sprintf("old-%d", i), 5, time.Minute)
	}
	clock.now = t0.Add(2 * time.Minute)
	for i := range keys { // enough operations for at least one sweep
		m.Hit(ctx, fmt.Sprintf("new-%d", i%10), 5, time.Minute)
	}
	m.mu.Lock()
	held := len(m.windows)
	m.mu.Unlock()
	if held > 10 {
		t.Errorf("%d windows held after the sweeps, want the 10 live ones", held)
	}
	// Bounded through many generations of keys.
	for gen := range 20 {
		clock.now = clock.now.Add(2 * time.Minute)
		for i := range 2000 {
			m.Hit(ctx, fmt.Sprintf("gen-%d-%d", gen, i), 5, time.Minute)
		}
	}
	m.mu.Lock()
	held = len(m.windows)
	m.mu.Unlock()
	if held > 2*2000+minSweepOps {
		t.Errorf("%d windows held after 20 generations of 2000 keys", held)
	}
}

// A full table makes room for a new key: it is counted like any other, the table never
// grows past its cap, and keys it keeps go on being counted.
func TestMemoryMaxKeys(t *testing.T) {
	clock := &settableClock{now: t0}
	m := NewMemory(WithClock(clock.Now), WithMaxKeys(3))
	ctx := t.Context()
	for _, key := range []string{"a", "b", "c"} {
		m.Hit(ctx, key, 1, time.Minute)
	}
	for i, key := range []string{"d", "e", "f", "g"} {
		if ok, _, err := m.Hit(ctx, key, 1, time.Minute); err != nil || !ok {
			t.Errorf("new key %s in a full table = %v, %v; want counted and admitted", key, ok, err)
		}
		if ok, _, _ := m.Hit(ctx, key, 1, time.Minute); ok {
			t.Errorf("second hit of %s over a limit of 1 was admitted: the new key was not counted", key)
		}
		if n := len(m.windows); n != 3 {
			t.Fatalf("after new key %d the table holds %d windows, want its cap 3", i, n)
		}
	}
}

// A full table whose windows all end later is not swept again on every new key: the next
// sweep waits at least fullSweepInterval, and until then new keys evict.
func TestMemoryFullTableSweepsAtMostOncePerInterval(t *testing.T) {
	clock := &settableClock{now: t0}
	m := NewMemory(WithClock(clock.Now), WithMaxKeys(2))
	ctx := t.Context()
	m.Hit(ctx, "a", 5, 100*time.Millisecond)
	m.Hit(ctx, "b", 5, time.Minute)
	clock.now = t0.Add(50 * time.Millisecond)
	m.Hit(ctx, "c", 5, time.Minute) // sweeps (nothing ended), then evicts a or b
	next := m.nextFullSweep
	if want := clock.now.Add(fullSweepInterval); !next.Equal(want) {
		t.Fatalf("next full sweep at %v, want %v", next, want)
	}
	clock.now = t0.Add(200 * time.Millisecond)
	m.Hit(ctx, "d", 5, time.Minute) // no sweep due: evicts
	if !m.nextFullSweep.Equal(next) || len(m.windows) != 2 {
		t.Errorf("second new key: next sweep %v (want %v unchanged), %d windows (want 2)", m.nextFullSweep, next, len(m.windows))
	}
}
