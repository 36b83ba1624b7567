package provider

import (
	"context"

	"github.com/ory/fosite/token/jwt"
)

// Internals reached by the external tests (package provider_test), so they drive the key
// set with their own clock instead of waiting for the reload ticker, and so the fuzz
// targets reach the parsers behind the handlers.

// RotateDueKeys runs the scheduled rotation check now, as each reload tick does.
func (p *Provider) RotateDueKeys(ctx context.Context) error { return p.keys.rotateDue(ctx) }

// ReloadKeys re-reads the key set from the database now, as each reload tick does.
func (p *Provider) ReloadKeys(ctx context.Context) error { return p.keys.load(ctx) }

// NormalizeUserCode is normalizeUserCode, for FuzzNormalizeUserCode.
var NormalizeUserCode = normalizeUserCode

// DisplayUserCode is displayUserCode.
var DisplayUserCode = displayUserCode

// VerifyIDTokenHint is p's check of an id_token_hint.
func (p *Provider) VerifyIDTokenHint(hint string) (map[string]any, error) {
	return p.verifyIDTokenHint(hint)
}

// SignWithActiveKey signs claims (and extra header fields) with p's active RS256 key, as
// its ID tokens are signed.
func (p *Provider) SignWithActiveKey(claims map[string]any, header map[string]any) (string, error) {
	k, err := p.keys.activeKey("RS256")
	if err != nil {
		return "", err
	}
	raw, _, err := signJWT(k, jwt.MapClaims(claims), header)
	return raw, err
}

// DeliverLogouts runs one step of the back-channel logout worker (deliverLogouts), so tests
// drive deliveries and retries without waiting for its ticker.
func (p *Provider) DeliverLogouts(ctx context.Context) (int, error) { return p.deliverLogouts(ctx) }

// TokenChecks is how many access tokens p has verified in full (parsed and their signature
// checked) rather than taken from its cache of verified tokens.
func (p *Provider) TokenChecks() uint64 { return p.verifier.checks.Load() }

// VerifiedTokensCached is how many tokens p's cache of verified tokens holds; 0 when off.
func (p *Provider) VerifiedTokensCached() int {
	if p.verifier.verified == nil {
		return 0
	}
	return p.verifier.verified.len()
}

// ClientKeySetsCached is how many clients' key sets p's JWKS cache holds.
func (p *Provider) ClientKeySetsCached() int { return p.keySets.len() }
