package publicauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
)

// What package factors needs of this package: the login lockout for second-factor codes,
// and mail about second factors. They are methods of Service so that the provider hands
// the one Service to package factors, which declares them as its Lockout and Notifier.

// factorLockoutKey is the limiter key of the failed second-factor attempts of an account:
// the hex SHA-256 of its id, so the limiter (Redis) holds no account ids.
func factorLockoutKey(accountID string) string {
	sum := sha256.Sum256([]byte(accountID))
	return "factor:" + hex.EncodeToString(sum[:])
}

// ReserveFactorAttempt counts one attempt at a second-factor code of the account (TOTP, a
// recovery code) before the code is checked, against the login lockout's rate
// (Config.Limits.Lockout: default 10 in 15 minutes) under a counter of the account's own.
// Counting first is what holds under concurrency, as for passwords. ok is false, with how
// long until the window ends, once the attempts of the window are over the limit; the
// code must then not be checked. A failing Limiter lets the attempt through (fail open,
// logged), as it does for logins.
func (s *Service) ReserveFactorAttempt(ctx context.Context, accountID string) (ok bool, retryAfter time.Duration) {
	var limited *RateLimitError
	if err := s.reserveLockout(ctx, factorLockoutKey(accountID)); errors.As(err, &limited) {
		return false, limited.RetryAfter
	}
	return true, 0
}

// ClearFactorAttempts forgets the second-factor attempts of the account, after a right code.
func (s *Service) ClearFactorAttempts(ctx context.Context, accountID string) {
	s.clearLockout(ctx, factorLockoutKey(accountID))
}

// noticeLifespan is how long a security notice is retried while the mailer fails.
const noticeLifespan = 24 * time.Hour

// MailFactorNotice queues the mail that tells the account's owner about e: a FactorAdded
// (MailFactorAdded), a FactorRemoved (MailFactorRemoved) or a RecoveryCodeUsed
// (MailRecoveryCodeUsed); any other event mails nothing. The mail goes to the durable
// outbox inside the transaction ctx carries (when that transaction is this service's
// store's), so it is sent exactly when the change commits, and retried for a day while the
// mailer fails. An account that cannot be found, or has no address, gets no mail.
func (s *Service) MailFactorNotice(ctx context.Context, e events.Event) error {
	var kind, userID string
	d := MailData{At: e.When()}
	ip := e.Metadata().ClientIP
	if !ip.IsValid() {
		ip, _ = events.Request(ctx) // an event no emitter stamped
	}
	if ip.IsValid() {
		d.ClientIP = ip.String()
	}
	switch e := e.(type) {
	case *events.FactorAdded:
		kind, userID, d.Factor, d.FactorName = MailFactorAdded, e.UserID, e.Factor, e.Label
	case *events.FactorRemoved:
		kind, userID, d.Factor, d.FactorName = MailFactorRemoved, e.UserID, e.Factor, e.Label
	case *events.RecoveryCodeUsed:
		kind, userID, d.Remaining = MailRecoveryCodeUsed, e.UserID, e.Remaining
	default:
		return nil
	}
	if d.At.IsZero() {
		d.At = s.now()
	}
	u, err := s.users.userByID(ctx, userID)
	if errors.Is(err, ErrUserNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("publicauth: account of a %s mail: %w", kind, err)
	}
	if u.Email == "" {
		return nil
	}
	m, err := s.render(kind, u, d)
	if err != nil {
		return err
	}
	return s.queueMail(ctx, kind, u.ID, m, s.now().Add(noticeLifespan))
}
