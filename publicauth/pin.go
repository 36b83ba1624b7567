package publicauth

import "time"

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
