package publicauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
)

// PINChallenge is a login waiting for its PIN: the user proved the first factor (password
// or magic link) and was mailed a 6-digit PIN. The session starts only once VerifyPIN
// accepts the PIN.
type PINChallenge struct {
	// ID is the random 256-bit challenge id (base64url), the `challengeId` of the API.
	ID     string
	UserID string
	// PINHash is the hex HMAC-SHA-256 of the challenge id and PIN under a key derived from
	// Config.Secret; the PIN itself is never stored.
	PINHash string
	// Kind is the session kind the challenge starts (SessionPublic or SessionAdmin).
	Kind string
	// Method is how the first factor was proved (MethodPassword or MethodMagicLink).
	Method string
	// Destination is where the login goes once the PIN is accepted.
	Destination Destination
	// Attempts counts the PINs tried so far, the accepted one included.
	Attempts  int
	CreatedAt time.Time
	ExpiresAt time.Time
	// UsedAt is when the challenge was consumed; nil while it is open.
	UsedAt *time.Time
}

// pinKeyInfo is the HKDF info of the key PINs are hashed under.
const pinKeyInfo = "gatehouse publicauth pin v1"

// pinDigits is the length of a PIN; pinSpace the number of PINs.
const (
	pinDigits = 6
	pinSpace  = 1_000_000
)

// StartPINChallenge begins the PIN gate of a login: u proved the first factor by method
// (MethodPassword or MethodMagicLink) and will get a session of kind (SessionPublic or
// SessionAdmin) that goes to dest once the PIN is accepted. It draws a uniform 6-digit PIN,
// stores only its HMAC (under a key derived from Config.Secret, bound to the challenge id)
// and mails it (MailPIN), valid for Config.PINLifespan. The PIN mail counts against the
// per-account mail limit (*RateLimitError over it). The challenge and its mail are written
// in one transaction, the mail to the durable outbox: whether the mailer is up does not
// change the answer, and the mail is retried until the PIN expires.
func (s *Service) StartPINChallenge(ctx context.Context, u *User, kind, method string, dest Destination) (*PINChallenge, error) {
	if _, err := s.cookie(kind); err != nil {
		return nil, err
	}
	if method == "" {
		return nil, errors.New("publicauth: start PIN challenge: empty login method")
	}
	if dest.Resume != "" && !s.isInternalPath(dest.Resume) {
		return nil, &InputError{Field: "resume", Reason: "must be a path on this server"}
	}
	if u.Status != StatusActive {
		return nil, ErrAccountDisabled
	}
	if kind == SessionAdmin && u.Role != RoleAdmin {
		return nil, ErrNotAdmin
	}
	if err := s.allowMail(ctx, mailLimitPIN, u.ID); err != nil {
		return nil, err
	}
	id, err := s.newToken()
	if err != nil {
		return nil, err
	}
	pin, err := s.newPIN()
	if err != nil {
		return nil, err
	}
	now := s.now()
	c := &PINChallenge{
		ID:          id,
		UserID:      u.ID,
		PINHash:     s.hashPIN(id, pin),
		Kind:        kind,
		Method:      method,
		Destination: dest,
		CreatedAt:   now,
		ExpiresAt:   now.Add(s.pinLifespan),
	}
	m, err := s.render(MailPIN, u, MailData{PIN: pin, ExpiresIn: s.pinLifespan})
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.CreatePINChallenge(ctx, c); err != nil {
			return fmt.Errorf("publicauth: store PIN challenge: %w", err)
		}
		return s.queueMail(ctx, MailPIN, u.ID, m, c.ExpiresAt)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// VerifyPIN checks a PIN against the challenge. Every try is counted before the PIN is
// compared (so parallel guesses cannot exceed Config.Limits.PINAttempts); the comparison is
// constant-time. On the right PIN the challenge is consumed and VerifyPIN returns its user
// and the challenge: the caller then starts the session of challenge.Kind with
// challenge.Method and sends the browser to challenge.Destination. A wrong PIN with tries
// left yields ErrPINMismatch; the last wrong PIN, and any try at an unknown, used, expired
// or spent challenge, ErrChallengeInvalid (log in again). An inactive account yields
// ErrAccountDisabled.
func (s *Service) VerifyPIN(ctx context.Context, challengeID, pin string) (*User, *PINChallenge, error) {
	if challengeID == "" || len(challengeID) > 2*tokenBytes {
		return nil, nil, ErrChallengeInvalid
	}
	now := s.now()
	c, err := s.store.ReservePINAttempt(ctx, challengeID, s.limits.PINAttempts, now)
	if errors.Is(err, ErrChallengeInvalid) {
		return nil, nil, ErrChallengeInvalid
	}
	if err != nil {
		return nil, nil, fmt.Errorf("publicauth: count PIN attempt: %w", err)
	}
	want := []byte(c.PINHash)
	got := []byte(s.hashPIN(challengeID, strings.TrimSpace(pin)))
	if subtle.ConstantTimeCompare(got, want) != 1 {
		err := ErrPINMismatch
		if c.Attempts >= s.limits.PINAttempts {
			err = ErrChallengeInvalid
		}
		s.loginFailed(ctx, events.MethodPIN, &User{ID: c.UserID}, err)
		return nil, nil, err
	}
	if err := s.store.ConsumePINChallenge(ctx, challengeID, now); err != nil {
		if errors.Is(err, ErrChallengeInvalid) {
			return nil, nil, ErrChallengeInvalid
		}
		return nil, nil, fmt.Errorf("publicauth: consume PIN challenge: %w", err)
	}
	u, err := s.users.userByID(ctx, c.UserID)
	if errors.Is(err, ErrUserNotFound) {
		return nil, nil, ErrChallengeInvalid
	}
	if err != nil {
		return nil, nil, fmt.Errorf("publicauth: load user: %w", err)
	}
	if u.Status != StatusActive {
		s.loginFailed(ctx, events.MethodPIN, u, ErrAccountDisabled)
		return nil, nil, ErrAccountDisabled
	}
	return u, c, nil
}

// newPIN draws a uniform PIN of pinDigits digits from the service's randomness: 32-bit
// values at or above the largest multiple of pinSpace are redrawn, so no PIN is likelier
// than another.
func (s *Service) newPIN() (string, error) {
	const limit = (1 << 32) / pinSpace * pinSpace
	var b [4]byte
	// Each draw is rejected with probability < 0.03%; 16 rejections in a row mean the
	// randomness source is broken.
	for range 16 {
		if _, err := io.ReadFull(s.random, b[:]); err != nil {
			return "", fmt.Errorf("publicauth: read PIN: %w", err)
		}
		if v := binary.BigEndian.Uint32(b[:]); v < limit {
			return fmt.Sprintf("%0*d", pinDigits, v%pinSpace), nil
		}
	}
	return "", errors.New("publicauth: read PIN: randomness source keeps returning out-of-range values")
}

// hashPIN is the stored form of a PIN: hex HMAC-SHA-256 under the PIN key of the challenge id
// and the PIN, so a dump of the table cannot be searched offline without the secret and a
// hash is useless for any other challenge.
func (s *Service) hashPIN(challengeID, pin string) string {
	mac := hmac.New(sha256.New, s.pinKey)
	mac.Write([]byte(challengeID))
	mac.Write([]byte{0})
	mac.Write([]byte(pin))
	return hex.EncodeToString(mac.Sum(nil))
}
