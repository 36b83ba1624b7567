package dpop

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// DefaultNonceLifetime is the step of HMACNonces when NewHMACNonces is given none.
const DefaultNonceLifetime = 5 * time.Minute

// HMACNonces is a NonceSource without state: a nonce is the number of the current time
// step and its HMAC under a key, so every replica holding the key issues and accepts the
// same nonces with nothing shared but the key. A nonce is accepted during the step it was
// issued in and the next one: for between one and two lifetimes.
type HMACNonces struct {
	key      []byte
	lifetime time.Duration
	now      func() time.Time
}

var _ NonceSource = (*HMACNonces)(nil)

// NewHMACNonces returns nonces keyed by key (at least 32 random bytes, kept secret), with
// steps of lifetime (zero: DefaultNonceLifetime), read from now (nil: time.Now).
func NewHMACNonces(key []byte, lifetime time.Duration, now func() time.Time) *HMACNonces {
	if lifetime <= 0 {
		lifetime = DefaultNonceLifetime
	}
	if now == nil {
		now = time.Now
	}
	return &HMACNonces{key: append([]byte(nil), key...), lifetime: lifetime, now: now}
}

func (n *HMACNonces) step() uint64 { return uint64(n.now().UnixNano() / int64(n.lifetime)) }

// nonceFor is the nonce of step s: base64url(s as 8 bytes ‖ HMAC-SHA-256(key, s)[:16]).
func (n *HMACNonces) nonceFor(s uint64) string {
	b := binary.BigEndian.AppendUint64(nil, s)
	mac := hmac.New(sha256.New, n.key)
	mac.Write(b)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(b)[:8+16])
}

// Nonce returns the nonce of the current step.
func (n *HMACNonces) Nonce() string { return n.nonceFor(n.step()) }

// Valid reports whether nonce is the nonce of the current or the previous step.
func (n *HMACNonces) Valid(nonce string) bool {
	b, err := base64.RawURLEncoding.DecodeString(nonce)
	if err != nil || len(b) != 24 {
		return false
	}
	s, now := binary.BigEndian.Uint64(b[:8]), n.step()
	if s != now && s+1 != now {
		return false
	}
	return hmac.Equal([]byte(n.nonceFor(s)), []byte(nonce))
}
