package factors

import (
	"errors"
	"time"
)

// Errors of the service and its store. The pages map them to what the user sees; none
// reveals whether a code was close, or which part of a WebAuthn response failed.
var (
	// ErrNotEnrolled: the account has no such factor (no TOTP, no pending TOTP
	// enrolment, no passkey with that id, no passkey usable here).
	ErrNotEnrolled = errors.New("factor not enrolled")
	// ErrAlreadyEnrolled: the account has a TOTP already; remove it first.
	ErrAlreadyEnrolled = errors.New("factor already enrolled")
	// ErrCodeInvalid: a wrong TOTP or recovery code, or one that cannot be a code.
	ErrCodeInvalid = errors.New("invalid code")
	// ErrCodeReplayed: a right TOTP code of a time step already accepted (RFC 6238 §5.2).
	ErrCodeReplayed = errors.New("code already used")
	// ErrCeremonyInvalid: a passkey ceremony that is unknown, finished, expired, of
	// another kind, or begun for another account.
	ErrCeremonyInvalid = errors.New("passkey ceremony invalid or expired")
	// ErrPasskeyInvalid: a WebAuthn response that does not verify (a bad signature,
	// another origin or relying party, a credential the account does not own, …). The
	// wrapped error says why, for the log.
	ErrPasskeyInvalid = errors.New("passkey response invalid")
	// ErrPasskeyCloned: the passkey's signature counter went backwards, now or before;
	// it is refused until the user removes it.
	ErrPasskeyCloned = errors.New("passkey may have been cloned")
	// ErrPasskeyExists: the credential is registered already.
	ErrPasskeyExists = errors.New("passkey already registered")
	// ErrPasskeysUnavailable: passkeys cannot work with this issuer (see
	// Service.PasskeysAvailable).
	ErrPasskeysUnavailable = errors.New("passkeys are not available")
	// ErrCounterNotIncreased is what a PasskeyStore answers when a use would not raise
	// the stored signature counter (a clone, or a race of two uses).
	ErrCounterNotIncreased = errors.New("passkey signature counter did not increase")
)

// LockedError refuses a code because the account's wrong codes are over the lockout: the
// code was not checked. RetryAfter is how long until it may be.
type LockedError struct {
	RetryAfter time.Duration
}

func (e *LockedError) Error() string {
	return "too many wrong codes, retry after " + e.RetryAfter.String()
}

// InputError is a value the service refuses, such as a passkey name that is too long.
// Field names it; Reason says why and is safe to show.
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string { return e.Field + " " + e.Reason }
