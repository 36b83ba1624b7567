package provider

import (
	"context"
	"crypto/sha512"
	"encoding/base64"

	"github.com/ory/fosite/token/jwt"
)

// issuedAccessToken is where GenerateAccessToken notes the access token a token request
// issued, for the ID token issued with it: fosite computes at_hash with SHA-256 whatever the
// algorithm, but for EdDSA with Ed25519 the hash is SHA-512 (OpenID Connect Core §3.1.3.6
// with errata set 2; what go-oidc and openid-client check), so GenerateIDToken redoes it.
type issuedAccessToken struct{ token string }

type issuedAccessTokenKey struct{}

// withIssuedAccessToken gives a token request's context a place for the access token it
// issues.
func withIssuedAccessToken(ctx context.Context) context.Context {
	return context.WithValue(ctx, issuedAccessTokenKey{}, &issuedAccessToken{})
}

// noteIssuedAccessToken records token on ctx's place, if it has one.
func noteIssuedAccessToken(ctx context.Context, token string) {
	if n, ok := ctx.Value(issuedAccessTokenKey{}).(*issuedAccessToken); ok {
		n.token = token
	}
}

// fixEdDSAAccessTokenHash sets the at_hash claims carry for an EdDSA ID token: the left half
// of the SHA-512 hash of the access token issued with it. When that token is unknown (no
// place on ctx) it drops at_hash, which is optional in the code flow, rather than send a
// wrong one.
func fixEdDSAAccessTokenHash(ctx context.Context, claims *jwt.IDTokenClaims) {
	if claims.AccessTokenHash == "" {
		return
	}
	n, ok := ctx.Value(issuedAccessTokenKey{}).(*issuedAccessToken)
	if !ok || n.token == "" {
		claims.AccessTokenHash = ""
		return
	}
	sum := sha512.Sum512([]byte(n.token))
	claims.AccessTokenHash = base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}
