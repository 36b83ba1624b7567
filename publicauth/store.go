package publicauth

import (
	"context"
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
)

// UserStore persists Gatehouse's own user accounts: the default Accounts store.
type UserStore interface {
	// CreateUser inserts u. It returns ErrEmailTaken when another user's email has the same
	// EmailKey.
	CreateUser(ctx context.Context, u *User) error
	// UserByID returns the user with that id, or ErrUserNotFound.
	UserByID(ctx context.Context, id string) (*User, error)
	// UserByEmail returns the user whose email has the same EmailKey as email, or
	// ErrUserNotFound (also when email has no key).
	UserByEmail(ctx context.Context, email string) (*User, error)
	// ChangeUser writes only the fields c sets on the user with that id, and its
	// UpdatedAt, and returns the user as stored afterwards; ErrUserNotFound when there is no
	// such user. Writing only those columns keeps concurrent changes of other fields (a PIN
	// switch during a password reset) from undoing each other.
	ChangeUser(ctx context.Context, id string, c UserChange) (*User, error)
	// DeleteUser deletes the user with that id and, in one transaction, everything of
	// theirs: tokens, refresh tokens and unused codes issued to them, consents, sessions,
	// PIN challenges, one-time tokens, linked identities, permission records, queued mail
	// and second factors (those refer to an account by id, so no foreign key deletes
	// them). It returns
	// ErrUserNotFound when there is no such user.
	DeleteUser(ctx context.Context, id string) error
}

// UserChange is the fields of a user that ChangeUser writes: each one that is not nil.
type UserChange struct {
	PasswordHash  *string
	EmailVerified *bool
	RequirePIN    *bool
	Status        *string
	Name          *string
	// Profile replaces the whole stored profile.
	Profile *Profile
}

// GrantStore revokes what a user has granted to client applications.
type GrantStore interface {
	// RevokeUserGrants revokes every access token, refresh token, unused authorization code
	// and consent of the user, at every client. Inside a transaction it is part of it:
	// nothing is revoked unless the transaction commits.
	RevokeUserGrants(ctx context.Context, userID string) error
}

// SessionStore persists login sessions.
type SessionStore interface {
	// CreateSession inserts s.
	CreateSession(ctx context.Context, s *Session) error
	// SessionByIDHash returns the session with that id hash whose ExpiresAt is after now,
	// together with its user of Gatehouse's own users table, in one round trip (it runs on
	// every request that carries a session cookie); the user is nil when that table has no
	// user of the session's UserID (an account of another Accounts store). It returns
	// ErrSessionNotFound for a missing, expired or deleted session.
	SessionByIDHash(ctx context.Context, idHash string, now time.Time) (*Session, *User, error)
	// AddSessionMethod records that the session with that id hash, unexpired at now,
	// completed m (acr.Append: an earlier completion of the same method is replaced) and
	// returns the session as stored afterwards. Concurrent calls on one session all land:
	// none overwrites another's method. It returns ErrSessionNotFound for a missing or
	// expired session.
	AddSessionMethod(ctx context.Context, idHash string, m acr.Method, now time.Time) (*Session, error)
	// DeleteSession removes the session; deleting a missing session is not an error.
	DeleteSession(ctx context.Context, idHash string) error
	// DeleteUserSessions removes every session of the user.
	DeleteUserSessions(ctx context.Context, userID string) error
}

// Store is everything a Service keeps in the database. Package storage implements it.
type Store interface {
	UserStore
	SessionStore
	GrantStore
	TokenStore
	PINStore
	RedirectURIs
	MailOutbox
	Transactional
}

// Transactional runs several store calls as one unit.
type Transactional interface {
	// InTx runs fn in one transaction carried by the context fn receives; every store call
	// made with that context joins it, and an InTx inside it nests. fn's error rolls it back
	// and is returned unchanged; a failed commit returns the commit's error.
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// Purposes of one-time tokens. Each purpose is a separate namespace: a token is only ever
// consumed for the purpose it was issued for.
const (
	PurposeVerifyEmail   = "verify_email"
	PurposeMagicLink     = "magic_link"
	PurposePasswordReset = "password_reset"
	// PurposeLinkPassword confirms adding a password to a social-only account: a
	// registration with that account's email mails it, and its Payload holds the argon2id
	// hash of the new password (never the password itself).
	PurposeLinkPassword = "link_password"
)

// OneTimeToken is a single-use secret sent by mail (an email verification, magic link,
// password reset or password linking link). The mail carries a random 256-bit token; the store keeps only its
// SHA-256, so a database dump reveals no usable link.
type OneTimeToken struct {
	// IDHash is the hex SHA-256 of the token text.
	IDHash string
	// Purpose is one of the Purpose* constants (other packages may add their own).
	Purpose string
	UserID  string
	// Email is the address the token was sent to; a token stops working once the user's
	// address differs from it.
	Email string
	// RedirectURI is where a magic-link login goes after the session starts (may be empty).
	RedirectURI string
	// Resume is an internal path the login goes to (set only by the provider; may be empty).
	Resume string
	// PausedRequest refers to the paused OAuth request the login continues
	// (Destination.PausedRequest: a hash, never the request's token; may be empty).
	PausedRequest string
	// Payload is purpose-specific data (may be empty): for PurposeLinkPassword the argon2id
	// hash of the password to add.
	Payload   string
	CreatedAt time.Time
	ExpiresAt time.Time
	// UsedAt is when the token was consumed or superseded; nil while it is usable.
	UsedAt *time.Time
}

// TokenStore persists one-time tokens.
type TokenStore interface {
	// CreateOneTimeToken inserts t. With supersede true it first marks every unused token
	// of t's user and purpose as used, in the same transaction, so only the newest link
	// works.
	CreateOneTimeToken(ctx context.Context, t *OneTimeToken, supersede bool) error
	// ConsumeOneTimeToken marks the token with that hash and purpose used at now, in one
	// conditional update that succeeds only while the token is unused and unexpired (so of
	// concurrent consumers exactly one wins), and returns it. Any other token yields
	// ErrInvalidToken.
	ConsumeOneTimeToken(ctx context.Context, idHash, purpose string, now time.Time) (*OneTimeToken, error)
	// UsableOneTimeToken returns the token with that hash and purpose while it is unused
	// and unexpired at now, without consuming it; any other token yields ErrInvalidToken.
	UsableOneTimeToken(ctx context.Context, idHash, purpose string, now time.Time) (*OneTimeToken, error)
}

// PINStore persists PIN challenges.
type PINStore interface {
	// CreatePINChallenge inserts c.
	CreatePINChallenge(ctx context.Context, c *PINChallenge) error
	// ReservePINAttempt counts one attempt at the challenge before its PIN is compared: one
	// conditional update adds 1 to Attempts while the challenge is unused, unexpired at now
	// and has fewer than maxAttempts attempts. It returns the challenge as updated, or
	// ErrChallengeInvalid when no attempt is left (unknown, used, expired or spent).
	ReservePINAttempt(ctx context.Context, id string, maxAttempts int, now time.Time) (*PINChallenge, error)
	// ConsumePINChallenge marks the challenge used at now in one conditional update that
	// succeeds only while it is unused and unexpired, so of concurrent consumers exactly one
	// wins; the others get ErrChallengeInvalid.
	ConsumePINChallenge(ctx context.Context, id string, now time.Time) error
}

// RedirectURIs answers whether a URI is registered as a redirect URI of some client.
type RedirectURIs interface {
	// IsRegisteredRedirectURI reports whether uri equals, as a string, a redirect URI of
	// some registered client.
	IsRegisteredRedirectURI(ctx context.Context, uri string) (bool, error)
}

// QueuedMail is one mail in the durable mail outbox (MailOutbox): written with the link
// token or PIN challenge it carries, deleted once the mail server took it.
type QueuedMail struct {
	// ID names the mail; random, opaque.
	ID string
	// Kind is the mail's kind (MailMagicLink, MailPIN, …) and UserID its account's id,
	// kept in clear for operators; nothing else of the mail is.
	Kind   string
	UserID string
	// Sealed is the Message sealed by the service (AES-256-GCM under a key derived from
	// Config.Secret, bound to ID): it carries a live link or PIN. Empty once given up on.
	Sealed []byte
	// CreatedAt is when the mail was queued.
	CreatedAt time.Time
	// MailExpiresAt is when the link or PIN in the mail stops working: the mail is not
	// tried after it. PurgeAt is when the store may delete the row, delivered or not.
	MailExpiresAt time.Time
	PurgeAt       time.Time
	// Attempts counts the deliveries begun, the one a claim returns it for included.
	Attempts int
	// LastError is why the last delivery failed ("" before any failure); FailedAt is when
	// the mail was given up on, nil while it is still tried.
	LastError string
	FailedAt  *time.Time
}

// MailQueue is the state of the mail outbox, for metrics.
type MailQueue struct {
	// Queued counts the mails still to deliver (in delivery now included); Due those of
	// them whose next attempt is due.
	Queued, Due int64
	// GivenUp counts the mails given up on (their link or PIN expired undelivered) whose
	// rows are still kept.
	GivenUp int64
}

// MailOutbox is the durable mail outbox. Package storage implements it on Gatehouse's
// database, so a mail is written in the transaction of the token or challenge it carries.
type MailOutbox interface {
	// EnqueueMail inserts m, due at once. Inside a transaction it is part of it.
	EnqueueMail(ctx context.Context, m *QueuedMail) error
	// ClaimMail claims up to limit mails due at now that are not given up on and returns
	// them: each one's next attempt moves to now+lease and its attempt count goes up by one,
	// so no other worker (on any replica) claims it again until the lease has passed; two
	// concurrent claims never return the same mail. The lease must outlast a delivery.
	ClaimMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]QueuedMail, error)
	// MailDelivered deletes the mail with that id; a missing one is not an error.
	MailDelivered(ctx context.Context, id string) error
	// MailFailed records a failed delivery with reason: the mail is tried again at next,
	// or, with giveUp, never again: FailedAt is set to now and Sealed emptied, and the row
	// stays until its PurgeAt.
	MailFailed(ctx context.Context, id, reason string, next time.Time, giveUp bool, now time.Time) error
	// MailQueueState counts the outbox's mails at now.
	MailQueueState(ctx context.Context, now time.Time) (MailQueue, error)
}
