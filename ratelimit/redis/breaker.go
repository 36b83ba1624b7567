package redis

import (
	"log/slog"
	"sync"
	"time"

	"github.com/gatehouse-id/gatehouse/ratelimit"
)

// ErrBreakerOpen is returned, wrapped, by a Limiter that did not contact Redis because its
// circuit breaker is open: the last call failed less than the cool-down ago (see
// WithCoolDown). The error also has a method FailingFast() bool that reports true, by which
// a caller that does not import this package knows the failure was already logged when the
// breaker opened.
var ErrBreakerOpen error = breakerOpenError{}

type breakerOpenError struct{}

func (breakerOpenError) Error() string {
	return "ratelimit/redis: Redis failed recently; not contacted (circuit breaker open)"
}
func (breakerOpenError) FailingFast() bool { return true }

// breaker stops a Redis limiter from waiting for a Redis that is down on every request:
// after a failure it fails fast for the cool-down, then lets one call through as a probe.
// It logs when it opens (ERROR) and when it closes (WARN), not per call.
type breaker struct {
	coolDown time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu     sync.Mutex
	state  ratelimit.BreakerState
	until  time.Time // while open: when the next call may probe
	opened uint64    // times the breaker opened from closed
}

// allow reports whether a call may contact Redis, or else returns ErrBreakerOpen.
func (b *breaker) allow() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == ratelimit.BreakerClosed:
		return nil
	case b.state == ratelimit.BreakerOpen && !b.now().Before(b.until):
		b.state = ratelimit.BreakerProbing // this call is the probe; the others keep failing fast
		return nil
	}
	return ErrBreakerOpen
}

// outcome is what a call allow admitted says about Redis.
type outcome int

const (
	answered  outcome = iota // Redis answered (a success, or an error reply)
	failed                   // Redis or the network failed (refused, reset, timed out)
	abandoned                // the caller gave up first: it says nothing about Redis
)

// done records the outcome of a call allow admitted; err is its error, for the log.
func (b *breaker) done(o outcome, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case o == failed:
		if b.state == ratelimit.BreakerClosed {
			b.opened++
			b.log.Error("ratelimit/redis: Redis failed; circuit breaker open: rate limits fail fast, as their caller decides, until Redis answers a probe",
				"cool_down", b.coolDown, "error", err)
		}
		b.state, b.until = ratelimit.BreakerOpen, b.now().Add(b.coolDown)
	case o == abandoned:
		if b.state == ratelimit.BreakerProbing {
			b.state = ratelimit.BreakerOpen // the probe is still owed: the next call makes it
		}
	case b.state != ratelimit.BreakerClosed:
		b.state = ratelimit.BreakerClosed
		// WARN, not INFO: a log filtered to warnings shows the end of the outage next to its start.
		b.log.Warn("ratelimit/redis: Redis answers again; circuit breaker closed")
	}
}

// snapshot returns the state and how many times the breaker opened.
func (b *breaker) snapshot() (ratelimit.BreakerState, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.opened
}
