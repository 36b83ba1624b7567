package publicauth

import (
	"errors"
	"time"
)

// Errors the stores and the service return. The HTTP mapping lives in one table (http.go).
var (
	ErrUserNotFound       = errors.New("user not found")
	ErrEmailTaken         = errors.New("email already registered")
	ErrSessionNotFound    = errors.New("session not found")
	ErrInvalidCredentials = errors.New("invalid email or password")
	ErrAccountDisabled    = errors.New("account disabled")
	ErrNotAdmin           = errors.New("user is not an admin")
	// ErrInvalidToken: a one-time link token that is unknown, used, expired, of another
	// purpose, or sent to an address the account no longer has.
	ErrInvalidToken = errors.New("invalid or expired token")
	// ErrPasswordMismatch: the password typed to confirm a password link, or to verify an
	// address, is not the one the registration chose.
	ErrPasswordMismatch = errors.New("password does not match")
	// ErrPINMismatch: a wrong PIN for a challenge that still has attempts left.
	ErrPINMismatch = errors.New("wrong PIN")
	// ErrChallengeInvalid: a PIN challenge that is unknown, used, expired or out of
	// attempts; the user has to log in again.
	ErrChallengeInvalid = errors.New("PIN challenge invalid or expired")
	// ErrBusy: every password hashing slot is in use and the queue for them is full
	// (Config.PasswordHashConcurrency, Config.PasswordHashQueue); the request did no
	// work and may be retried after BusyRetryAfter.
	ErrBusy = errors.New("too many password checks at once")
	// ErrRequestExpired: a reference to a paused authorization request (the token of the
	// hosted pages, a Destination's PausedRequest) that names none: unknown, completed or
	// expired.
	ErrRequestExpired = errors.New("authorization request expired")
)

// BusyRetryAfter is how long a caller refused with ErrBusy is told to wait (Retry-After):
// a queue's worth of hashes takes well under that.
const BusyRetryAfter = time.Second

// RateLimitError answers an attempt over a rate limit or at a locked account. RetryAfter is
// how long until the attempt may succeed (at least one second); the JSON API sends it as
// the Retry-After header in whole seconds, rounded up.
type RateLimitError struct {
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return "too many attempts, retry after " + e.RetryAfter.String()
}

// InputError reports a request value the service refuses (an email that is not a bare
// address, a password that breaks the password rule, a missing name, …). Field names the
// JSON field; Reason says why, and is safe to show to the user. The JSON API answers it with
// 400 Bad Request and the message "<field> <reason>".
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string { return e.Field + " " + e.Reason }
