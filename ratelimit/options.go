package ratelimit

import (
	"errors"
	"time"
)

// Defaults of the options.
const (
	// DefaultMaxKeys is how many keys a Memory holds at most (see WithMaxKeys). An entry
	// costs its key plus about 100 bytes, so the default bounds a Memory to a few hundred MB
	// even under a flood of distinct keys.
	DefaultMaxKeys = 1_000_000
)

// ErrInvalidWindow is returned by Hit and Exceeded for a window that is not positive.
var ErrInvalidWindow = errors.New("ratelimit: the window must be positive")

// Option configures a Memory.
type Option func(*config)

type config struct {
	clock   func() time.Time
	maxKeys int
}

func newConfig(opts []Option) config {
	c := config{clock: time.Now, maxKeys: DefaultMaxKeys}
	for _, opt := range opts {
		opt(&c)
	}
	return c
}

// WithClock makes a Memory read the time from clock. A nil clock means time.Now.
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
func WithMaxKeys(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxKeys = n
		}
	}
}

// RetryAfter rounds the time left in a window up to whole seconds, at least one: the unit
// and floor of the HTTP Retry-After header, which every limiter's Hit and Exceeded return.
func RetryAfter(left time.Duration) time.Duration {
	if left <= time.Second {
		return time.Second
	}
	return (left + time.Second - 1).Truncate(time.Second)
}
