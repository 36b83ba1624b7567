package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ory/fosite/token/jwt"
)

// randomToken returns 256 random bits, base64url-encoded: the form of every bearer value
// Gatehouse hands out (paused-request tokens, CSRF tokens, generated client secrets).
func randomToken(random io.Reader) (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("read random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hashToken is how a bearer value is stored: hex SHA-256, so a database dump yields nothing
// usable. The values are 256-bit random, so no salt or slow hash is needed.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// verifyIDTokenHint checks that hint is an ID token (not an access token), signed by one of
// our published keys and issued by us (expiry is not checked: OpenID Connect allows an
// expired hint) and returns its claims.
func (p *Provider) verifyIDTokenHint(hint string) (jwt.MapClaims, error) {
	t, err := p.keys.parse(hint)
	var ve *jwt.ValidationError
	if err != nil && !(errors.As(err, &ve) && ve.Errors == jwt.ValidationErrorExpired) {
		return nil, err
	}
	if t == nil || t.Claims == nil {
		return nil, errors.New("id_token_hint has no claims")
	}
	if err := checkIDTokenShape(t); err != nil {
		return nil, err
	}
	if iss, _ := t.Claims["iss"].(string); iss != p.cfg.Issuer {
		return nil, fmt.Errorf("id_token_hint issuer %q is not %q", iss, p.cfg.Issuer)
	}
	if sub, _ := t.Claims["sub"].(string); sub == "" {
		return nil, errors.New("id_token_hint has no subject")
	}
	return t.Claims, nil
}

// checkIDTokenShape refuses a verified JWT that is not one of our ID tokens. Access tokens
// (RFC 9068) are signed by the same keys, so the signature alone does not tell them apart:
// an access token has typ at+jwt and carries client_id and scope, which no ID token does.
func checkIDTokenShape(t *jwt.Token) error {
	if typ, _ := t.Header["typ"].(string); typ != "" && !strings.EqualFold(typ, "JWT") {
		return fmt.Errorf("id_token_hint has type %q: not an ID token", typ)
	}
	for _, claim := range []string{"client_id", "scope"} {
		if _, ok := t.Claims[claim]; ok {
			return fmt.Errorf("id_token_hint carries %s: an access token, not an ID token", claim)
		}
	}
	return nil
}

// idTokenHintSigner is the signer fosite checks the authorize endpoint's id_token_hint with:
// it verifies as jwtSigner does and also refuses an access token.
type idTokenHintSigner struct{ *jwtSigner }

func (s idTokenHintSigner) Decode(ctx context.Context, token string) (*jwt.Token, error) {
	t, err := s.jwtSigner.Decode(ctx, token)
	if t != nil {
		if shapeErr := checkIDTokenShape(t); shapeErr != nil {
			return nil, shapeErr
		}
	}
	return t, err
}
