package publicauth

import (
	"context"
	"time"
)

// Limiter counts attempts under keys in fixed windows; it backs the rate limits and the
// login lockout. The package ratelimit has an in-memory Limiter for one node and a Redis
// Limiter that several replicas share. Implementations must be safe for concurrent use.
type Limiter interface {
	// Hit records one attempt under key and reports whether the attempts in key's current
	// window, this one included, are at most limit. A window starts at the first attempt
	// after the previous one ended and lasts window (the window of later attempts does not
	// change it). When the answer is false, retryAfter is how long until the window ends,
	// rounded up to whole seconds and at least one second: it becomes a Retry-After header.
	// Attempts keep being recorded while refused. On an error ok is false, and whether to
	// admit the request anyway is the caller's choice. A window that is not positive is an
	// error.
	Hit(ctx context.Context, key string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error)
	// Exceeded reports, without recording anything, whether key's current window already
	// holds limit or more attempts, and if so how long until that window ends (rounded as
	// for Hit). It lets a caller refuse before doing costly work, then Hit only on failure.
	Exceeded(ctx context.Context, key string, limit int, window time.Duration) (exceeded bool, retryAfter time.Duration, err error)
	// Reset forgets every attempt recorded under key.
	Reset(ctx context.Context, key string) error
}

// Rate is a number of attempts allowed per window. The zero Rate takes the default of the
// field it is in; a negative Limit turns that limit off.
type Rate struct {
	Limit  int
	Window time.Duration
}
