package ratelimit

// BreakerState is the state of a limiter's circuit breaker (package ratelimit/redis's
// limiter has one), reported by its method Breaker() (BreakerState, uint64) for metrics.
type BreakerState int

// The states of a breaker: closed, calls reach the counter's server; open, they fail at once
// for a cool-down; probing, the cool-down is over and one call is reaching the server, whose
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
