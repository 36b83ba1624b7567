package redis

import (
	"io"
	"log/slog"
	"time"
)

// Defaults of the options.
const (
	// DefaultPrefix starts every Redis key a Limiter writes (see WithPrefix).
	DefaultPrefix = "gatehouse:ratelimit:"
	// DefaultTimeout bounds each call a Limiter makes (see WithTimeout).
	DefaultTimeout = 500 * time.Millisecond
	// DefaultCoolDown is how long a Limiter fails fast after Redis failed, before it lets
	// one call probe Redis again (see WithCoolDown).
	DefaultCoolDown = 5 * time.Second
)

// Option configures a Limiter.
type Option func(*config)

type config struct {
	clock    func() time.Time
	prefix   string
	timeout  time.Duration
	coolDown time.Duration
	logger   *slog.Logger
}

func newConfig(opts []Option) config {
	c := config{clock: time.Now, prefix: DefaultPrefix, timeout: DefaultTimeout,
		coolDown: DefaultCoolDown, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, opt := range opts {
		opt(&c)
	}
	return c
}

// WithClock makes the circuit breaker time its cool-down by clock (the windows run on the
// Redis server's clock). A nil clock means time.Now.
func WithClock(clock func() time.Time) Option {
	return func(c *config) {
		if clock != nil {
			c.clock = clock
		}
	}
}

// WithPrefix sets the string that starts every Redis key the Limiter reads and writes;
// limiters on the same server and prefix share their counts. An empty prefix means
// DefaultPrefix.
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if prefix != "" {
			c.prefix = prefix
		}
	}
}

// WithTimeout bounds each call the Limiter makes to the server (connecting, waiting for a
// pooled connection, the command itself), on top of the caller's context, so that a Redis
// outage turns into an error quickly rather than hanging the request; d <= 0 means
// DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithCoolDown sets how long the Limiter fails fast, with ErrBreakerOpen and without
// contacting Redis, after a call failed for a fault of Redis or the network (refused,
// reset, timed out); then one call probes Redis, and its answer closes the breaker or opens
// it for another cool-down. So an outage of Redis costs a request one timeout at most once
// per cool-down instead of on every request. d <= 0 means DefaultCoolDown.
func WithCoolDown(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.coolDown = d
		}
	}
}

// WithLogger sets where the Limiter logs its circuit breaker opening (at ERROR) and closing
// (at WARN), once each, not per call. A nil logger means no log.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) {
		if logger != nil {
			c.logger = logger
		}
	}
}
