package ratelimit

import (
	"log/slog"
	"sync"
	"time"
)

// ErrBreakerOpen is returned, wrapped, by a Redis limiter that did not contact Redis because
// its circuit breaker is open: the last call failed less than the cool-down ago (see
// WithCoolDown). The error also has a method FailingFast() bool that reports true, by which
// a caller that does not import this package knows the failure was already logged when the
// breaker opened.
var ErrBreakerOpen error = breakerOpenError{}

type breakerOpenError struct{}

func (breakerOpenError) Error() string {
	return "ratelimit: Redis failed recently; not contacted (circuit breaker open)"
}
func (breakerOpenError) FailingFast() bool { return true }

// BreakerState is the state of a Redis limiter's circuit breaker.
type BreakerState int

// The states of the breaker: closed, calls reach Redis; open, they fail at once with
// ErrBreakerOpen; probing, the cool-down is over and one call is reaching Redis, whose
// answer closes the breaker or opens it for another cool-down.
const (
	BreakerClosed BreakerState = iota
	BreakerOpen
	BreakerProbing
)

func (s BreakerState) String() string {
	switch s {
	case BreakerOpen:
		return "open"
	case BreakerProbing:
		return "probing"
	}
	return "closed"
}

// breaker stops a Redis limiter from waiting for a Redis that is down on every request:
// after a failure it fails fast for the cool-down, then lets one call through as a probe.
// It logs when it opens (ERROR) and when it closes (WARN), not per call.
type breaker struct {
	coolDown time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu     sync.Mutex
	state  BreakerState
	until  time.Time // while open: when the next call may probe
	opened uint64    // times the breaker opened from closed
}

// allow reports whether a call may contact Redis, or else returns ErrBreakerOpen.
func (b *breaker) allow() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == BreakerClosed:
		return nil
	case b.state == BreakerOpen && !b.now().Before(b.until):
		b.state = BreakerProbing // this call is the probe; the others keep failing fast
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
		if b.state == BreakerClosed {
			b.opened++
			b.log.Error("ratelimit: Redis failed; circuit breaker open: rate limits fail fast, as their caller decides, until Redis answers a probe",
				"cool_down", b.coolDown, "error", err)
		}
		b.state, b.until = BreakerOpen, b.now().Add(b.coolDown)
	case o == abandoned:
		if b.state == BreakerProbing {
			b.state = BreakerOpen // the probe is still owed: the next call makes it
		}
	case b.state != BreakerClosed:
		b.state = BreakerClosed
		// WARN, not INFO: a log filtered to warnings shows the end of the outage next to its start.
		b.log.Warn("ratelimit: Redis answers again; circuit breaker closed")
	}
}

// snapshot returns the state and how many times the breaker opened.
func (b *breaker) snapshot() (BreakerState, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.opened
}
