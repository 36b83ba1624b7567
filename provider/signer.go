package provider

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v3"
	"github.com/ory/fosite/token/jwt"
)

// jwtSigner is fosite's jwt.Signer over the key set: it signs with the active key of one
// algorithm and verifies with whichever published key the token's kid names, so tokens
// signed before a rotation stay verifiable.
type jwtSigner struct {
	keys *keySet
	alg  string
}

var _ jwt.Signer = (*jwtSigner)(nil)

// Generate signs the claims fosite built, an ID token's among them. fosite writes the
// request time as `rat`, which no specification defines: it is dropped here, after fosite
// has used the request time for its max_age and prompt checks.
func (s *jwtSigner) Generate(_ context.Context, claims jwt.MapClaims, header jwt.Mapper) (string, string, error) {
	delete(claims, "rat")
	k, err := s.keys.activeKey(s.alg)
	if err != nil {
		return "", "", err
	}
	return signJWT(k, claims, header.ToMap())
}

// signJWT signs claims with k; header may set extra fields such as typ.
func signJWT(k *signingKey, claims jwt.MapClaims, header map[string]any) (string, string, error) {
	if aud, ok := claims["aud"].([]string); ok {
		claims["aud"] = audienceClaim(aud)
	}
	token := jwt.NewWithClaims(jose.SignatureAlgorithm(k.alg), claims)
	for name, v := range header {
		if name != "alg" {
			token.Header[name] = v
		}
	}
	token.Header["kid"] = k.kid
	// Sign with the bare private key (a key of the database) or an opaque signer (an
	// external key, WithSigner): given a JSONWebKey, go-jose validates the key on every
	// signature, which for RSA costs as much as the signature itself.
	raw, err := token.SignedString(k.signer)
	if err != nil {
		return "", "", err
	}
	return raw, raw[strings.LastIndexByte(raw, '.')+1:], nil
}

// audienceClaim is how aud is written: a single audience as a string, as the SSO interface
// shows it, several as an array.
func audienceClaim(aud []string) any {
	if len(aud) == 1 {
		return aud[0]
	}
	return aud
}

// Decode verifies the signature against the published key named by kid and validates the
// time claims. As fosite requires, an expired token is returned together with its error.
func (s *jwtSigner) Decode(_ context.Context, token string) (*jwt.Token, error) {
	return s.keys.parse(token)
}

func (s *jwtSigner) Validate(ctx context.Context, token string) (string, error) {
	if _, err := s.Decode(ctx, token); err != nil {
		return "", err
	}
	return s.GetSignature(ctx, token)
}

func (s *jwtSigner) Hash(_ context.Context, in []byte) ([]byte, error) {
	sum := sha256.Sum256(in)
	return sum[:], nil
}

func (s *jwtSigner) GetSignature(_ context.Context, token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("header, body and signature must all be set")
	}
	return parts[2], nil
}

// GetSigningMethodLength is the SHA-256 size: RS256 and ES256 both hash with SHA-256.
// fosite computes at_hash with SHA-256 for EdDSA too; idTokenStrategy redoes it with
// SHA-512 (fixEdDSAAccessTokenHash).
func (s *jwtSigner) GetSigningMethodLength(context.Context) int { return sha256.Size }

// parse verifies token with the published key its kid names. A token whose alg differs from
// that key's algorithm (alg confusion, "none") is refused before any verification.
func (ks *keySet) parse(token string) (*jwt.Token, error) {
	return jwt.ParseWithClaims(token, jwt.MapClaims{}, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := ks.lookup(kid)
		if !ok {
			return nil, fmt.Errorf("unknown signing key %q", kid)
		}
		if string(t.Method) != k.alg {
			return nil, fmt.Errorf("token alg %q does not match key alg %q", t.Method, k.alg)
		}
		// The JSONWebKey, not its bare key: fosite hands go-jose a pointer to what it gets,
		// and go-jose verifies with an ed25519.PublicKey but not with a pointer to one.
		return &k.public, nil
	})
}
