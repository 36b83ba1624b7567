package provider

import (
	"context"
	"database/sql"
	"github.com/gatehouse-id/gatehouse/internal/outbound"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
)

// Stats is a snapshot of the provider's operational state, for metrics (the server exports
// it at /metrics). Counters count from New; events (WithEvents) carry the rest: tokens
// issued, logins, revocations.
type Stats struct {
	// RateLimitRefusals counts the attempts a rate limit refused, by limit: "ip:<endpoint>"
	// for the per-IP limits of the public API and pages, "mail:<kind>" for the per-account
	// mail limits, "oauth-failures" for the token and revocation endpoints' limit on failed
	// client authentications. Login lockouts are not among them (see LockoutRefusals).
	RateLimitRefusals map[string]uint64
	// LockoutRefusals counts the login attempts refused because their email had too many
	// failed logins in the lockout window.
	LockoutRefusals uint64
	// MailFailures counts the attempts of this provider's mail worker that the mailer
	// failed (a failed mail is retried from the outbox, so one mail may count several
	// times).
	MailFailures uint64
	// MailQueued is the number of mails in the durable outbox still to deliver (by any
	// replica; in delivery now included), MailDue those of them due for an attempt now,
	// and MailGivenUp the mails given up on (their link or PIN expired undelivered) whose
	// rows the outbox still keeps. All three are -1 when the database could not be asked.
	MailQueued, MailDue, MailGivenUp int64
	// Pool is the database connection pool's statistics (open, in use, idle, waits).
	Pool sql.DBStats
	// RedisBreaker is the circuit breaker of the limiter given with WithLimiter, when it
	// has one (package ratelimit/redis's: the rate limits' Redis); nil otherwise, as when
	// the counters live in memory.
	RedisBreaker *RedisBreakerStats
	// ActiveKeyCreated is when the key each algorithm signs with now was created, by
	// algorithm ("RS256", "ES256", "EdDSA").
	ActiveKeyCreated map[string]time.Time
	// OutboundFailures counts this provider's failed requests to URLs clients supplied, by
	// purpose ("jwks_uri", "backchannel_logout_uri") and reason: refused_address (an
	// internal address a dynamically registered client named), invalid_url, timeout,
	// connection, status (an answer other than the success expected), too_large,
	// invalid_document (a key set that does not parse or holds a refused key).
	OutboundFailures map[OutboundFailure]uint64
}

// OutboundFailure is the key of Stats.OutboundFailures.
type OutboundFailure struct {
	Purpose, Reason string
}

// statsQueryTimeout bounds the one query Stats makes (the mail outbox's counts), so a
// metrics scrape never hangs on a stuck database.
const statsQueryTimeout = 2 * time.Second

// RedisBreakerStats is the state of the circuit breaker of the rate limits' Redis.
type RedisBreakerStats struct {
	// State is "closed" (calls reach Redis), "open" (they fail open at once, for
	// PublicAuthConfig.RedisCoolDown) or "probing" (one call is trying Redis).
	State string
	// Opened counts the times it opened since New.
	Opened uint64
}

// Stats returns a snapshot of the provider's counters, connection pool, mail outbox, Redis
// circuit breaker and signing keys.
func (p *Provider) Stats() Stats {
	s := p.stats.snapshot()
	s.Pool, _ = p.store.PoolStats() // a pool that cannot be read reports zeros
	ctx, cancel := context.WithTimeout(context.Background(), statsQueryTimeout)
	defer cancel()
	if q, err := p.auth.MailQueue(ctx); err == nil {
		s.MailQueued, s.MailDue, s.MailGivenUp = q.Queued, q.Due, q.GivenUp
	} else {
		s.MailQueued, s.MailDue, s.MailGivenUp = -1, -1, -1
	}
	if cl, ok := p.limiter.(countingLimiter); ok {
		if b, ok := cl.Limiter.(interface {
			Breaker() (ratelimit.BreakerState, uint64)
		}); ok {
			state, opened := b.Breaker()
			s.RedisBreaker = &RedisBreakerStats{State: state.String(), Opened: opened}
		}
	}
	s.ActiveKeyCreated = map[string]time.Time{}
	for _, alg := range supportedAlgs {
		if k, err := p.keys.activeKey(alg); err == nil {
			s.ActiveKeyCreated[alg] = k.createdAt
		}
	}
	return s
}

// opsCounters holds the counters of Stats that no event reports. One per provider.
type opsCounters struct {
	mu         sync.Mutex
	refusals   map[string]uint64
	outbound   map[OutboundFailure]uint64
	lockouts   atomic.Uint64
	mailFailed atomic.Uint64
}

func newOpsCounters() *opsCounters {
	// Every outbound series exists from the start, at zero, so that a dashboard's rate()
	// sees the first failure and /metrics always names the family.
	failures := map[OutboundFailure]uint64{}
	for _, purpose := range []string{purposeJWKS, purposeBackchannelLogout} {
		for _, reason := range outbound.Reasons() {
			failures[OutboundFailure{Purpose: purpose, Reason: reason}] = 0
		}
	}
	return &opsCounters{refusals: map[string]uint64{}, outbound: failures}
}

func (c *opsCounters) snapshot() Stats {
	c.mu.Lock()
	refusals := maps.Clone(c.refusals)
	outbound := maps.Clone(c.outbound)
	c.mu.Unlock()
	return Stats{RateLimitRefusals: refusals, OutboundFailures: outbound, LockoutRefusals: c.lockouts.Load(),
		MailFailures: c.mailFailed.Load()}
}

// outboundFailed counts one failed request to a client's URL. Both labels come from small
// fixed sets (the purposes here, outbound's reasons), never from the URL.
func (c *opsCounters) outboundFailed(purpose, reason string) {
	c.mu.Lock()
	c.outbound[OutboundFailure{Purpose: purpose, Reason: reason}]++
	c.mu.Unlock()
}

// refused counts one refusal of the limit whose limiter key is key.
func (c *opsCounters) refused(key string) {
	if strings.HasPrefix(key, "login:") {
		c.lockouts.Add(1)
		return
	}
	name := limitName(key)
	c.mu.Lock()
	c.refusals[name]++
	c.mu.Unlock()
}

// limitName is the name of the limit of a limiter key, without the part that names the
// client or account (an address or user id would make the label unbounded): "ip:login"
// from "ip:login:203.0.113.0", "mail:pin" from "mail:pin:<user id>", "oauth-failures"
// from "oauth-failures:<address>".
func limitName(key string) string {
	parts := strings.SplitN(key, ":", 3)
	switch parts[0] {
	case "ip", "mail":
		if len(parts) >= 2 {
			return parts[0] + ":" + parts[1]
		}
	}
	return parts[0]
}

// countingLimiter counts the refusals of the limiter it wraps.
type countingLimiter struct {
	publicauth.Limiter
	counts *opsCounters
}

// Hit implements publicauth.Limiter; a refusal (not an error) is counted.
func (l countingLimiter) Hit(ctx context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	ok, retryAfter, err := l.Limiter.Hit(ctx, key, limit, window)
	if !ok && err == nil {
		l.counts.refused(key)
	}
	return ok, retryAfter, err
}

// Exceeded implements publicauth.Limiter: the token endpoints refuse when it says so.
func (l countingLimiter) Exceeded(ctx context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	exceeded, retryAfter, err := l.Limiter.Exceeded(ctx, key, limit, window)
	if exceeded && err == nil {
		l.counts.refused(key)
	}
	return exceeded, retryAfter, err
}

// countingMailer counts the failures of the mailer it wraps.
type countingMailer struct {
	next   publicauth.Mailer
	counts *opsCounters
}

// Send implements publicauth.Mailer.
func (m countingMailer) Send(ctx context.Context, msg publicauth.Message) error {
	err := m.next.Send(ctx, msg)
	if err != nil {
		m.counts.mailFailed.Add(1)
	}
	return err
}
