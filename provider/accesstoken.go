package provider

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/jwt"
)

// tokenStrategy issues JWT access tokens (RFC 9068) and delegates authorization codes and
// refresh tokens to fosite's HMAC strategy (opaque values; storage keeps their signatures).
// A JWT access token is also stored by its signature, so revocation and introspection stay
// stateful: a revoked token is refused even though its signature still verifies.
type tokenStrategy struct {
	*oauth2.HMACSHAStrategyUnPrefixed
	signer   *jwtSigner
	issuer   string
	lifespan time.Duration
	now      func() time.Time
}

var _ oauth2.CoreStrategy = (*tokenStrategy)(nil)

func (s *tokenStrategy) AccessTokenSignature(_ context.Context, token string) string {
	if i := strings.LastIndexByte(token, '.'); i >= 0 && strings.Count(token, ".") == 2 {
		return token[i+1:]
	}
	return ""
}

// GenerateAccessToken signs the RFC 9068 claims: iss, sub (the user, or the client for
// client_credentials), aud, client_id, scope, exp, iat, jti, and auth_time for user tokens;
// and the claims WithClaims gave the request (withTokenClaims), which never replace those.
func (s *tokenStrategy) GenerateAccessToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	sess, ok := r.GetSession().(*Session)
	if !ok {
		return "", "", errors.New("session is not a *provider.Session")
	}
	narrowGrantedAudience(r)
	now := s.now().UTC()
	exp := sess.GetExpiresAt(fosite.AccessToken)
	if exp.IsZero() {
		exp = now.Add(s.lifespan)
	}
	claims := jwt.MapClaims{
		"iss":       s.issuer,
		"sub":       sess.GetSubject(),
		"aud":       tokenAudience(r),
		"client_id": r.GetClient().GetID(),
		"scope":     strings.Join(r.GetGrantedScopes(), " "),
		"exp":       exp.Unix(),
		"iat":       now.Unix(),
		"jti":       uuid.NewString(),
	}
	if sess.UserBound && !sess.IDTokenClaims().AuthTime.IsZero() {
		claims["auth_time"] = sess.IDTokenClaims().AuthTime.Unix()
	}
	extra, err := tokenClaimsFor(ctx, ClaimsAccessToken, r)
	if err != nil {
		return "", "", err
	}
	for name, value := range extra {
		if _, set := claims[name]; !set {
			claims[name] = value
		}
	}
	k, err := s.signer.keys.activeKey(s.signer.alg)
	if err != nil {
		return "", "", err
	}
	return signJWT(k, claims, map[string]any{"typ": "at+jwt"})
}

// narrowGrantedAudience makes the audience a token request asked for (the token endpoint
// has checked it against the grant's: narrowAudience) the audience of the access token and
// of the refresh token issued with it. It must happen here: fosite's authorization_code
// handler grants the code's whole audience just before it generates the access token.
func narrowGrantedAudience(r fosite.Requester) {
	req, ok := r.(*fosite.AccessRequest)
	if !ok {
		return
	}
	if asked := fosite.GetAudiences(req.Form); len(asked) > 0 {
		req.RequestedAudience, req.GrantedAudience = asked, asked
	}
}

// tokenAudience is the audience of the tokens of grant r: the audience granted with it, or
// else the client it was issued to. It is the access token's aud, and what a resource server
// is matched against at introspection.
func tokenAudience(r fosite.Requester) []string {
	if aud := r.GetGrantedAudience(); len(aud) > 0 {
		return aud
	}
	return []string{r.GetClient().GetID()}
}

// ValidateAccessToken checks the signature and expiry; the caller (fosite's CoreValidator)
// has already found the token's row, so a revoked token never gets here.
func (s *tokenStrategy) ValidateAccessToken(_ context.Context, _ fosite.Requester, token string) error {
	_, err := s.signer.keys.parse(token)
	var ve *jwt.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve) && ve.Has(jwt.ValidationErrorExpired):
		return fosite.ErrTokenExpired.WithWrap(err)
	default:
		return fosite.ErrTokenSignatureMismatch.WithWrap(err)
	}
}
