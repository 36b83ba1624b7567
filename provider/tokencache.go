package provider

import (
	"crypto/sha256"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
)

// verifiedToken is what verifying an access token established once for good: who it names
// and for what (at), the reference the revocation rules match (ref) and the key that signed
// it (kid). It never changes once built; callers get copies (accessToken).
type verifiedToken struct {
	at  AccessToken
	ref storage.AccessTokenRef
	kid string
}

// accessToken is a copy of t's access token that its caller may change at will: its slices
// and claims (nested maps and arrays included) are its own, so nothing a caller does to one
// result reaches the cache or the next result.
func (t *verifiedToken) accessToken() *AccessToken {
	at := t.at
	at.Scopes = slices.Clone(t.at.Scopes)
	at.Audience = slices.Clone(t.at.Audience)
	at.Claims = copyClaims(t.at.Claims)
	return &at
}

// copyClaims copies a JWT claims map as JSON decoding builds it: maps and arrays are copied
// all the way down; strings, numbers and booleans are values already.
func copyClaims(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyClaim(v)
	}
	return out
}

func copyClaim(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyClaims(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyClaim(e)
		}
		return out
	case []string:
		return slices.Clone(v)
	case map[string]string:
		return maps.Clone(v)
	}
	return v
}

// tokenDigest keys the cache: the SHA-256 of a token's exact bytes, so a token that differs
// in any byte (a forged signature among them) is another key.
type tokenDigest = [sha256.Size]byte

// verifiedTokens is a bounded cache of the access tokens the verifier accepted, so a token
// presented again skips the JWT parse and the signature check (most of the CPU of
// introspection and userinfo). It holds only tokens that passed full verification: a forged
// or refused token is never stored and pays full verification every time, so it cannot
// fill the cache. What can change about an accepted token is checked again on every hit by
// the verifier (expiry, its key still published, revocation), never cached.
//
// It keeps two generations: new entries go to the current one; when that reaches half the
// bound it becomes the old one (the previous old one is dropped) and a fresh one starts. A
// hit in the old generation moves the entry to the current one, so tokens in use stay and
// the others age out, without per-entry bookkeeping. It never holds more than size entries.
type verifiedTokens struct {
	// genCap is the most entries one generation holds; keepOld is false only for a cache of
	// one entry, which has no old generation.
	genCap  int
	keepOld bool
	mu      sync.RWMutex
	cur     map[tokenDigest]*verifiedToken
	old     map[tokenDigest]*verifiedToken
}

// newVerifiedTokens returns a cache of at most size tokens, or nil (no cache) when size is
// not positive.
func newVerifiedTokens(size int) *verifiedTokens {
	if size <= 0 {
		return nil
	}
	c := &verifiedTokens{genCap: size / 2, keepOld: true}
	if c.genCap == 0 {
		c.genCap, c.keepOld = 1, false
	}
	c.cur = map[tokenDigest]*verifiedToken{}
	return c
}

// get returns the token cached under d, unless it has expired by now (then it is dropped).
func (c *verifiedTokens) get(d tokenDigest, now time.Time) (*verifiedToken, bool) {
	c.mu.RLock()
	t, ok := c.cur[d]
	c.mu.RUnlock()
	if ok && now.Before(t.at.ExpiresAt) {
		return t, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok = c.cur[d]; !ok {
		if t, ok = c.old[d]; !ok {
			return nil, false
		}
		delete(c.old, d)
		if now.Before(t.at.ExpiresAt) {
			c.insert(d, t) // in use: keep it past the next generation change
		}
	}
	if !now.Before(t.at.ExpiresAt) {
		delete(c.cur, d)
		return nil, false
	}
	return t, true
}

// put caches t, which the verifier has just accepted, under d.
func (c *verifiedTokens) put(d tokenDigest, t *verifiedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.old, d)
	c.insert(d, t)
}

// drop forgets the token cached under d.
func (c *verifiedTokens) drop(d tokenDigest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cur, d)
	delete(c.old, d)
}

// insert adds t to the current generation, starting a new one first when it is full.
// c.mu must be held.
func (c *verifiedTokens) insert(d tokenDigest, t *verifiedToken) {
	if _, ok := c.cur[d]; !ok && len(c.cur) >= c.genCap {
		c.old = nil
		if c.keepOld {
			c.old = c.cur
		}
		c.cur = map[tokenDigest]*verifiedToken{} // grows only as far as it is used
	}
	c.cur[d] = t
}

// len is the number of tokens cached, expired ones not yet dropped included.
func (c *verifiedTokens) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.cur) + len(c.old)
}
