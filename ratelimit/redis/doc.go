// Package redis is a rate limiter that keeps its counts in a Redis server, so that every
// replica using the same server and prefix shares them: the Limiter interface of package
// publicauth, given to the provider with provider.WithLimiter. It is a package of its own so
// that only the programs that use Redis link go-redis:
//
//	limiter, err := redis.New("redis://127.0.0.1:6379/0", redis.WithLogger(logger))
//	if err != nil { … }
//	defer limiter.Close()
//	p, err := provider.New(cfg, provider.WithLimiter(limiter))
//
// Windows are counted as package ratelimit counts them, on the Redis server's clock. A
// Limiter has a circuit breaker (breaker.go): after Redis fails, calls fail at once with
// ErrBreakerOpen for a cool-down instead of each waiting for a timeout, then one call probes
// Redis. What a failed call means — admit or refuse — stays the caller's choice.
package redis
