package ratelimit

import (
	"errors"
	"io"
	"log/slog"
	"time"
)

// Defaults of the options.
const (
	// DefaultMaxKeys is how many keys a Memory holds at most (see WithMaxKeys). An entry
	// costs its key plus about 100 bytes, so the default bounds a Memory to a few hundred MB
	// even under a flood of distinct keys.
	DefaultMaxKeys = 1_000_000
	// DefaultPrefix starts every Redis key a Redis limiter writes (see WithPrefix).
	DefaultPrefix = "gatehouse:ratelimit:"
	// DefaultTimeout bounds each call a Redis limiter makes (see WithTimeout).
	DefaultTimeout = 500 * time.Millisecond
	// DefaultCoolDown is how long a Redis limiter fails fast after Redis failed, before it
	// lets one call probe Redis again (see WithCoolDown).
	DefaultCoolDown = 5 * time.Second
)

// ErrInvalidWindow is returned by Hit and Exceeded for a window that is not positive.
var ErrInvalidWindow = errors.New("ratelimit: the window must be positive")

// Option configures a Memory or a Redis limiter; each option says which it applies to, and
// the other one ignores it.
type Option func(*config)

type config struct {
	clock    func() time.Time
	maxKeys  int
	prefix   string
	timeout  time.Duration
	coolDown time.Duration
	logger   *slog.Logger
}

func newConfig(opts []Option) config {
	c := config{clock: time.Now, maxKeys: DefaultMaxKeys, prefix: DefaultPrefix, timeout: DefaultTimeout,
		coolDown: DefaultCoolDown, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, opt := range opts {
		opt(&c)
	}
	return c
}

// WithClock makes a Memory read the time from clock, and a Redis limiter's circuit breaker
// time its cool-down by it (a Redis limiter's windows run on the Redis server's clock). A
// nil clock means time.Now.
func WithClock(clock func() time.Time) Option {
	return func(c *config) {
		if clock != nil {
			c.clock = clock
		}
	}
}

// WithMaxKeys caps how many keys a Memory holds; n < 1 means DefaultMaxKeys. When the cap is
// reached, a Hit on a new key first drops the expired windows (at most once a second); if
// none has expired, one window chosen at random makes room. A flood of distinct keys thus
// mostly evicts its own windows and cannot exhaust memory, while every newcomer is still
// counted (refusing new keys instead would lock out every client the flood did not own).
// Redis ignores it.
func WithMaxKeys(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxKeys = n
		}
	}
}

// WithPrefix sets the string that starts every Redis key a Redis limiter reads and writes;
// limiters on the same server and prefix share their counts. An empty prefix means
// DefaultPrefix. Memory ignores it.
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if prefix != "" {
			c.prefix = prefix
		}
	}
}

// WithTimeout bounds each call a Redis limiter makes to the server (connecting, waiting for
// a pooled connection, the command itself), on top of the caller's context, so that a Redis
// outage turns into an error quickly rather than hanging the request; d <= 0 means
// DefaultTimeout. Memory ignores it.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithCoolDown sets how long a Redis limiter fails fast, with ErrBreakerOpen and without
// contacting Redis, after a call failed for a fault of Redis or the network (refused,
// reset, timed out); then one call probes Redis, and its answer closes the breaker or opens
// it for another cool-down. So an outage of Redis costs a request one timeout at most once
// per cool-down instead of on every request. d <= 0 means DefaultCoolDown. Memory ignores it.
func WithCoolDown(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.coolDown = d
		}
	}
}

// WithLogger sets where a Redis limiter logs its circuit breaker opening (at ERROR) and
// closing (at WARN), once each, not per call. A nil logger means no log. Memory ignores it.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) {
		if logger != nil {
			c.logger = logger
		}
	}
}

// retryAfter rounds the time left in a window up to whole seconds, at least one: the unit
// and floor of the HTTP Retry-After header.
func retryAfter(left time.Duration) time.Duration {
	if left <= time.Second {
		return time.Second
	}
	return (left + time.Second - 1).Truncate(time.Second)
}
