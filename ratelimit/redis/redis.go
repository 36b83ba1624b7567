package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gatehouse-id/gatehouse/ratelimit"
)

// hitScript counts one attempt atomically. KEYS[1] is the counter, ARGV[1] the window in
// milliseconds. A counter without a TTL is new (count 1) or lost its TTL (set by hand, or
// written by something else): either way it gets the window, so that no key is kept for ever.
// It returns the count and the milliseconds left in the window.
var hitScript = goredis.NewScript(`
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[1])
	ttl = tonumber(ARGV[1])
end
return {count, ttl}
`)

// exceededScript reads a counter and the milliseconds left in its window, {0, 0} when there
// is none. It records no attempt, but it gives a counter that lost its TTL the window, as
// hitScript does: a caller that stops calling Hit once Exceeded says yes would otherwise be
// locked out for ever.
var exceededScript = goredis.NewScript(`
local value = redis.call('GET', KEYS[1])
if not value then
	return {0, 0}
end
local count = tonumber(value)
if not count then
	return redis.error_reply('ERR the counter is not an integer')
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[1])
	ttl = tonumber(ARGV[1])
end
return {count, ttl}
`)

// Limiter is a rate limiter that keeps its counts in a Redis server, so that every replica using the
// same server and prefix shares them. Each operation is one atomic round trip, bounded by the
// timeout (WithTimeout). Errors of the server or the network are returned wrapped, with ok
// and exceeded false; whether to admit or refuse the request then is the caller's choice.
// After such a failure a circuit breaker makes every call fail at once with ErrBreakerOpen
// for a cool-down (WithCoolDown), then probes Redis with one call. It is safe for concurrent
// use.
type Limiter struct {
	client  *goredis.Client
	owned   bool // Close closes client
	prefix  string
	timeout time.Duration
	breaker *breaker
}

// New returns a Limiter on the server at rawURL:
// redis://[user:password@]host[:port][/db], rediss://… for TLS, or unix:///path/to/socket
// (query options as github.com/redis/go-redis/v9 ParseURL reads them). It does not connect:
// the first call does; use Ping to check the server at start-up. Unless the URL sets them
// (dial_timeout, read_timeout, write_timeout, max_retries), connecting,
// reading and writing are each bounded by the timeout (WithTimeout), a failed dial is not
// retried, and a failed command is retried once, on a fresh connection (a restarted Redis
// leaves the pool's connections dead). It takes
// WithPrefix, WithTimeout, WithCoolDown, WithClock and WithLogger; Close releases its
// connections.
func New(rawURL string, opts ...Option) (*Limiter, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// The parse error would echo the URL, password included.
		return nil, errors.New("ratelimit/redis: the Redis URL is not a valid URL")
	}
	options, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("ratelimit/redis: Redis URL %s: %w", u.Redacted(), err)
	}
	// Deadlines of the context must reach the socket reads, or a stalled server would hold
	// a call past its timeout.
	options.ContextTimeoutEnabled = true
	timeout := newConfig(opts).timeout
	q := u.Query()
	for key, set := range map[string]func(){
		"dial_timeout":  func() { options.DialTimeout = timeout },
		"read_timeout":  func() { options.ReadTimeout = timeout },
		"write_timeout": func() { options.WriteTimeout = timeout },
		"max_retries":   func() { options.MaxRetries = 1 },
	} {
		if !q.Has(key) {
			set()
		}
	}
	// go-redis tries a failing dial 5 times, 100ms apart: a down Redis would cost each probe
	// half a second. (The URL has no option for it.)
	options.DialerRetries = 1
	r := NewFromClient(goredis.NewClient(options), opts...)
	r.owned = true
	return r, nil
}

// NewFromClient returns a Limiter over an existing client, which stays the
// caller's: Close leaves it open. The client should have ContextTimeoutEnabled, so that the
// timeout (WithTimeout) bounds its socket reads too. It takes the options NewRedis takes.
func NewFromClient(client *goredis.Client, opts ...Option) *Limiter {
	c := newConfig(opts)
	return &Limiter{client: client, prefix: c.prefix, timeout: c.timeout,
		breaker: &breaker{coolDown: c.coolDown, now: c.clock, log: c.logger}}
}

// Breaker returns the state of the circuit breaker and how many times it opened, for
// metrics.
func (r *Limiter) Breaker() (state ratelimit.BreakerState, opened uint64) {
	return r.breaker.snapshot()
}

// do runs call under the timeout and the circuit breaker: not at all while it is open.
func (r *Limiter) do(ctx context.Context, call func(ctx context.Context) error) error {
	if err := r.breaker.allow(); err != nil {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := call(callCtx)
	var reply goredis.Error
	switch {
	case err == nil, errors.As(err, &reply): // an error reply is Redis answering
		r.breaker.done(answered, err)
	case ctx.Err() != nil:
		r.breaker.done(abandoned, err)
	default:
		r.breaker.done(failed, err)
	}
	return err
}

// Hit records one attempt under key and reports whether key's current window, this attempt
// included, holds at most limit attempts; when it does not, retryAfter is the time until the
// window ends, in whole seconds and at least one. The window is kept to the millisecond.
func (r *Limiter) Hit(ctx context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	count, left, err := r.run(ctx, hitScript, "hit", key, window)
	if err != nil {
		return false, 0, err
	}
	if count <= int64(limit) {
		return true, 0, nil
	}
	return false, ratelimit.RetryAfter(left), nil
}

// Exceeded reports, without recording anything, whether key's current window already holds
// limit or more attempts, and if so the time until it ends (whole seconds, at least one).
func (r *Limiter) Exceeded(ctx context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	count, left, err := r.run(ctx, exceededScript, "exceeded", key, window)
	if err != nil {
		return false, 0, err
	}
	if count == 0 || count < int64(limit) {
		return false, 0, nil
	}
	return true, ratelimit.RetryAfter(left), nil
}

// Reset forgets every attempt recorded under key.
func (r *Limiter) Reset(ctx context.Context, key string) error {
	if err := r.do(ctx, func(ctx context.Context) error { return r.client.Del(ctx, r.prefix+key).Err() }); err != nil {
		return fmt.Errorf("ratelimit/redis: Redis reset: %w", err)
	}
	return nil
}

// Ping checks that the server answers within the timeout, whatever the circuit breaker's
// state, which it leaves alone.
func (r *Limiter) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ratelimit/redis: Redis ping: %w", err)
	}
	return nil
}

// Close releases the connections of a Limiter made by New; for one made by
// NewFromClient it does nothing, since the client is the caller's.
func (r *Limiter) Close() error {
	if !r.owned {
		return nil
	}
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("ratelimit/redis: Redis close: %w", err)
	}
	return nil
}

// run runs script on key's counter with the window in milliseconds (rounded up) and returns
// the count and the time left in the window. A window that is not positive is
// ErrInvalidWindow; what names the operation in every other error.
func (r *Limiter) run(ctx context.Context, script *goredis.Script, what, key string, window time.Duration) (int64, time.Duration, error) {
	if window <= 0 {
		return 0, 0, ratelimit.ErrInvalidWindow
	}
	windowMS := int64((window + time.Millisecond - 1) / time.Millisecond)
	var values []int64
	err := r.do(ctx, func(ctx context.Context) (err error) {
		values, err = script.Run(ctx, r.client, []string{r.prefix + key}, windowMS).Int64Slice()
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("ratelimit/redis: Redis %s: %w", what, err)
	}
	if len(values) != 2 {
		return 0, 0, fmt.Errorf("ratelimit/redis: Redis %s: script answered %d values, want 2", what, len(values))
	}
	return values[0], time.Duration(values[1]) * time.Millisecond, nil
}
