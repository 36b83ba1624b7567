package publicauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
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

// LimiterLogLevel is the level to log a Limiter's error at: ERROR, or DEBUG when the
// limiter failed fast without trying, which its error says with a method FailingFast() bool
// reporting true (ratelimit/redis.Limiter while its circuit breaker is open). The limiter logged
// that failure once when it began: an outage of Redis is then one line, not one a request.
func LimiterLogLevel(err error) slog.Level {
	var ff interface{ FailingFast() bool }
	if errors.As(err, &ff) && ff.FailingFast() {
		return slog.LevelDebug
	}
	return slog.LevelError
}

// Rate is a number of attempts allowed per window. The zero Rate takes the default of the
// field it is in; a negative Limit turns that limit off.
type Rate struct {
	Limit  int
	Window time.Duration
}

// Endpoint names of the per-IP limits of the JSON API. The provider's hosted pages pass
// their own names to CheckRate.
const (
	EndpointRegister             = "register"
	EndpointLogin                = "login"
	EndpointVerifyPIN            = "verify-pin"
	EndpointRequestMagicLink     = "request-magic-link"
	EndpointResendVerification   = "resend-verification"
	EndpointRequestPasswordReset = "request-password-reset"
	EndpointResetPassword        = "reset-password"
	EndpointConfirmPassword      = "confirm-password"
	EndpointAdminLogin           = "admin-login"
)

// Mail kinds counted by the per-account mail limit (Config.Limits.PerAccount), one counter
// per kind.
const (
	mailLimitMagicLink    = "magic-link"
	mailLimitReset        = "password-reset"
	mailLimitVerification = "verification"
	mailLimitPIN          = "pin"
	mailLimitLinkPassword = "link-password"
)

// CheckRate counts one request of r's client to endpoint against the per-IP limit
// (Config.Limits.PerIP) under the key "ip:<endpoint>:<LimitKeyForIP(client IP)>", the client
// IP taken from the connection or, behind a trusted proxy, its forwarding header. Over the
// limit it returns a *RateLimitError (429). A failing Limiter lets the request through
// (fail open) and logs at ERROR (see LimiterLogLevel): an outage of Redis must not lock
// everyone out.
func (s *Service) CheckRate(r *http.Request, endpoint string) error {
	if s.limits.PerIP.Limit < 0 {
		return nil
	}
	key := "ip:" + endpoint + ":" + LimitKeyForIP(ClientIP(r, s.trustedProxies))
	return s.hit(r.Context(), key, s.limits.PerIP)
}

// hit records an attempt under key against rate and returns a *RateLimitError when it is
// over; a Limiter failure is logged and lets the attempt through.
func (s *Service) hit(ctx context.Context, key string, rate Rate) error {
	ok, retryAfter, err := s.limiter.Hit(ctx, key, rate.Limit, rate.Window)
	if err != nil {
		s.logger.Log(ctx, LimiterLogLevel(err), "publicauth: rate limiter failed, allowing the attempt", "key", key, "error", err)
		return nil
	}
	if !ok {
		return &RateLimitError{RetryAfter: max(retryAfter, time.Second)}
	}
	return nil
}

// lockoutKey is the limiter key of the failed logins of an email: the hex SHA-256 of its
// EmailKey, so the limiter (Redis) holds no addresses and the key is the same whether or
// not an account has that email. An address without a key (no account can have it) is
// limited by its trimmed bytes instead, exactly as an unknown address is: a key never
// equals such bytes, since a key's own key is itself.
func lockoutKey(email string) string {
	key, err := EmailKey(email)
	if err != nil {
		key = strings.TrimSpace(email)
	}
	sum := sha256.Sum256([]byte(key))
	return "login:" + hex.EncodeToString(sum[:])
}

// reserveLoginAttempt counts one login attempt of email against the lockout before its
// password is checked, and returns a *RateLimitError once the attempts of the window are
// over Config.Limits.Lockout. Counting first is what holds under concurrency: a burst of
// parallel guesses cannot all pass a check made before any of them was counted. A
// successful login clears the count (clearFailedLogins), so only failures add up.
func (s *Service) reserveLoginAttempt(ctx context.Context, email string) error {
	return s.reserveLockout(ctx, lockoutKey(email))
}

// reserveLockout counts one attempt under the lockout key against Config.Limits.Lockout and
// returns a *RateLimitError once the attempts of the window are over it. A failing Limiter
// lets the attempt through (fail open), logged.
func (s *Service) reserveLockout(ctx context.Context, key string) error {
	if s.limits.Lockout.Limit < 0 {
		return nil
	}
	ok, retryAfter, err := s.limiter.Hit(ctx, key, s.limits.Lockout.Limit, s.limits.Lockout.Window)
	if err != nil {
		s.logger.Log(ctx, LimiterLogLevel(err), "publicauth: rate limiter failed, allowing the login", "error", err)
		return nil
	}
	if !ok {
		return &RateLimitError{RetryAfter: max(retryAfter, time.Second)}
	}
	return nil
}

// clearFailedLogins forgets the failed logins of email (after a successful login or reset).
func (s *Service) clearFailedLogins(ctx context.Context, email string) {
	s.clearLockout(ctx, lockoutKey(email))
}

// clearLockout forgets the attempts counted under the lockout key.
func (s *Service) clearLockout(ctx context.Context, key string) {
	if s.limits.Lockout.Limit < 0 {
		return
	}
	if err := s.limiter.Reset(ctx, key); err != nil {
		s.logger.Log(ctx, LimiterLogLevel(err), "publicauth: rate limiter failed to clear failed logins", "error", err)
	}
}

// allowMail counts one mail of kind to the user against the per-account limit and returns
// a *RateLimitError when it is over.
func (s *Service) allowMail(ctx context.Context, kind, userID string) error {
	if s.limits.PerAccount.Limit < 0 {
		return nil
	}
	return s.hit(ctx, "mail:"+kind+":"+userID, s.limits.PerAccount)
}
