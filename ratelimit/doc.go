// Package ratelimit counts attempts under keys in fixed windows: Memory keeps the counts in
// this process (one node), Redis keeps them in a Redis server that several replicas share.
// Both implement the Limiter interface that package publicauth declares; this package
// imports no other Gatehouse package.
//
// A window starts at the first attempt under a key after the previous window ended and
// lasts the window given to that attempt; when an attempt is refused, the time to wait is
// rounded up to whole seconds, at least one, because it becomes an HTTP Retry-After header.
//
// A Redis limiter has a circuit breaker (breaker.go): after Redis fails, calls fail at once
// with ErrBreakerOpen for a cool-down instead of each waiting for a timeout, then one call
// probes Redis. What a failed call means — admit or refuse — stays the caller's choice.
package ratelimit
