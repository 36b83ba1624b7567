// Package ratelimit counts attempts under keys in fixed windows. Memory keeps the counts in
// this process (one node); package ratelimit/redis keeps them in a Redis server that
// several replicas share, and links go-redis only into the programs that import it. Both
// implement the Limiter interface that package publicauth declares (provider.WithLimiter
// takes either); this package imports no other Gatehouse package.
//
// A window starts at the first attempt under a key after the previous window ended and
// lasts the window given to that attempt; when an attempt is refused, the time to wait is
// rounded up to whole seconds, at least one (RetryAfter), because it becomes an HTTP
// Retry-After header.
package ratelimit
