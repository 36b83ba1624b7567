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

	"github.com/gatehouse-id/gatehouse/storage"
)

// tokenStrategy issues JWT access tokens (RFC 9068) and delegates authorization codes and
// refresh tokens to fosite's HMAC strategy (opaque values; storage keeps their signatures).
// A JWT access token is stateless: no row is stored for it. It is valid while its signature
// and expiry check out and no revocation rule matches it (accessTokenVerifier).
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

// Private claims of Gatehouse's access tokens (RFC 7519 §4.3). A claim WithClaims returns
// under one of these names is dropped, as for every claim the token sets itself.
const (
	// claimGrantID is the grant the token was issued for: fosite's request id, shared by
	// the tokens of one authorization and its refreshes (a client_credentials token is a
	// grant of its own). A revocation rule on the grant matches it.
	claimGrantID = "gid"
	// claimIssuedMicros is the issue time in microseconds since the Unix epoch. iat has
	// whole seconds only; this tells a token issued just before a revocation rule from one
	// issued just after it in the same second.
	claimIssuedMicros = "iat_us"
)

// GenerateAccessToken signs the RFC 9068 claims: iss, sub (the user, or the client for
// client_credentials), aud, client_id, scope, exp, iat, jti, and auth_time for user tokens;
// the private claims gid (the grant) and iat_us (the issue time to the microsecond); and
// the claims WithClaims gave the request (withTokenClaims), which never replace those. It
// records the issue time on the session, for the rule a refresh adds (refreshStore).
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

		claimGrantID:      r.GetID(),
		claimIssuedMicros: now.UnixMicro(),
	}
	sess.accessIssuedAt = now
	if cp := sess.ClaimsRequest; cp != nil && len(cp.Userinfo) > 0 {
		claims[claimUserinfoRequest] = cp.Userinfo
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
	token, signature, err := signJWT(k, claims, map[string]any{"typ": "at+jwt"})
	if err == nil {
		noteIssuedAccessToken(ctx, token) // for an EdDSA ID token's at_hash
	}
	return token, signature, err
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

// ValidateAccessToken refuses every token: fosite's CoreValidator calls it only for a token
// it found in storage, and no access token is stored. Access tokens are checked by
// accessTokenVerifier instead.
func (s *tokenStrategy) ValidateAccessToken(context.Context, fosite.Requester, string) error {
	return fosite.ErrRequestUnauthorized.WithHint("Access tokens are verified from the JWT.")
}

// refreshStore is the store of fosite's refresh_token grant. A refresh revokes the access
// tokens the grant issued before (fosite's contract, RFC 9700 §4.14.2): as the new token is
// stored, it records a rule on the grant for the tokens issued before the new one, which
// the rule spares, however close in time.
type refreshStore struct {
	fositeStore
	store *storage.Store
}

// CreateAccessTokenSession records the rule; the token itself is not stored.
func (s refreshStore) CreateAccessTokenSession(ctx context.Context, signature string, r fosite.Requester) error {
	sess, ok := r.GetSession().(*Session)
	if !ok || sess.accessIssuedAt.IsZero() {
		return errors.New("refresh: the access token's issue time is unknown")
	}
	return s.store.RevokeGrantAccessTokensBefore(ctx, r.GetID(), sess.accessIssuedAt)
}
