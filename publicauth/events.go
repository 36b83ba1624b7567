package publicauth

import (
	"context"
	"errors"

	"github.com/gatehouse-id/gatehouse/events"
)

// WithEvents makes the service emit its events (logins, registrations, verifications,
// password changes, and the revocations a credential change brings) through em. A nil
// em, or no WithEvents, emits nothing.
func WithEvents(em *events.Emitter) Option {
	return func(o *options) { o.events = em }
}

// loginFailed emits the LoginFailed of a login by method that ended in err, for u when the
// account is known (u may be nil). An err that is no refusal (a store failure, a busy
// hashing pool) emits nothing.
func (s *Service) loginFailed(ctx context.Context, method string, u *User, err error) {
	var reason string
	var limited *RateLimitError
	switch {
	case errors.Is(err, ErrInvalidCredentials):
		reason = events.ReasonBadCredentials
	case errors.As(err, &limited):
		reason = events.ReasonLocked
	case errors.Is(err, ErrAccountDisabled):
		reason = events.ReasonDisabled
	case errors.Is(err, ErrPINMismatch):
		reason = events.ReasonPINWrong
	case errors.Is(err, ErrChallengeInvalid):
		reason = events.ReasonPINExhausted
	case errors.Is(err, ErrInvalidToken):
		reason = events.ReasonLinkInvalid
	default:
		return
	}
	e := &events.LoginFailed{Method: method, Reason: reason}
	if u != nil {
		e.UserID = u.ID
	}
	// No change to attach it to: it is its own statement. The login is refused either way,
	// so a failure to record it is logged, not answered.
	if err := s.events.Emit(ctx, e); err != nil {
		s.logger.ErrorContext(ctx, "publicauth: recording a failed login failed", "error", err)
	}
}

// grantsRevoked emits what revoking every grant of the user (revokeAccess, DeleteUser)
// did, for reason: the token families and the consents went. Run inside the change's
// transaction: the events are recorded in it and delivered once it commits; an error
// (of recording) must roll it back.
func (s *Service) grantsRevoked(ctx context.Context, userID, reason string) error {
	if err := s.events.Emit(ctx, &events.FamilyRevoked{Reason: reason, Subject: userID}); err != nil {
		return err
	}
	return s.events.Emit(ctx, &events.ConsentWithdrawn{UserID: userID, Reason: reason})
}
