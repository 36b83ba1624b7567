package provider

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/internal/bearer"
	"github.com/gatehouse-id/gatehouse/storage"
)

// The outcomes of VerifyAccessToken a caller must tell apart.
var (
	// ErrInvalidToken: the token is no valid access token of this provider. It is malformed,
	// not signed by one of its keys, expired, revoked (by the revocation endpoint or by a
	// credential change), unknown, or a refresh or ID token. Which one is not told, so a
	// caller cannot probe tokens; answer 401 invalid_token (RFC 6750 §3.1).
	ErrInvalidToken = errors.New("invalid access token")
	// ErrUnavailable: the database could not be reached, so whether the token was revoked is
	// unknown. The token is neither accepted nor refused; answer 503 with Retry-After. The
	// store's error is wrapped as well.
	ErrUnavailable = errors.New("token store unavailable")
)

// AccessToken is an access token VerifyAccessToken accepted.
type AccessToken struct {
	// Subject is the token's sub: the user's id for a user token, the client's id for a
	// client_credentials token.
	Subject string
	// ClientID is the client the token was issued to.
	ClientID string
	// Scopes are the scopes granted with the token.
	Scopes []string
	// Audience is the token's aud: the audience granted with it, or else the client's id.
	Audience []string
	// IssuedAt is when the token was issued (its iat).
	IssuedAt time.Time
	// ExpiresAt is when the token expires; VerifyAccessToken refuses it from then on.
	ExpiresAt time.Time
	// UserBound is true for a token issued for a user (authorization_code or refresh_token
	// grant) and false for a client_credentials token, which speaks for the client itself.
	UserBound bool
	// DPoPThumbprint is the JWK SHA-256 thumbprint (RFC 7638) of the key the token is bound
	// to (its cnf.jkt, RFC 9449 §6), "" for a bearer token. A bound token is valid only with
	// a DPoP proof by that key (VerifyRequest).
	DPoPThumbprint string
	// Claims are the JWT's claims as issued (iss, sub, aud, client_id, scope, exp, iat, jti,
	// auth_time for a user token, and the private gid and iat_us: the grant and the issue
	// time in microseconds); whole numbers such as exp are int64.
	Claims map[string]any
}

// VerifyAccessToken checks token as an access token for an API in the same process: its
// signature, its type (at+jwt: an ID token is refused), issuer and expiry (by the
// provider's clock), that its client still exists, and, in one indexed query, that no
// revocation rule matches it, exactly as introspection does, so a revoked token is refused
// at once on every replica. A refused token is ErrInvalidToken; an unreachable database is
// ErrUnavailable. Only bearer tokens are verified: a DPoP-bound token needs the request that
// presents it, for its proof, and is refused here with ErrDPoPRequired (which matches
// ErrInvalidToken); verify requests with VerifyRequest, which accepts both.
func (p *Provider) VerifyAccessToken(ctx context.Context, token string) (*AccessToken, error) {
	at, _, err := p.verifier.verify(ctx, token)
	if err == nil && at.DPoPThumbprint != "" {
		return nil, ErrDPoPRequired
	}
	return at, err
}

// accessTokenVerifier checks Gatehouse's stateless access tokens (DESIGN.md §3): valid is
// signed by one of the provider's keys, typed at+jwt, issued by it, unexpired, of a client
// that still exists, and matched by no revocation rule.
type accessTokenVerifier struct {
	keys   *keySet
	store  *storage.Store
	issuer string
	now    func() time.Time
	// verified caches the tokens accepted, so one presented again skips the parse and the
	// signature check (Config.VerifiedTokenCacheSize); nil: every token is verified in full.
	verified *verifiedTokens
	// checks counts full verifications (check), for the tests.
	checks atomic.Uint64
}

// looksLikeJWT reports whether token has a JWT's three segments: an access token rather
// than an opaque refresh token (fosite's HMAC tokens have two).
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// verify returns the access token token is and the reference the revocation rules match,
// or ErrInvalidToken, or ErrUnavailable wrapping the store's error.
//
// A token accepted before, byte for byte, is taken from the cache instead of being parsed
// and its signature checked again; what can change is checked on every request all the
// same: its expiry by the provider's clock, that the key named by its kid is still
// published (else it is verified in full, which refuses it) and, in the same query as for
// a new token, that no revocation rule matches it. The checks fosite makes by the real
// clock (iat and nbf not in the future, exp not past) stay passed as time goes on, and the
// provider's clock decides expiry.
func (v *accessTokenVerifier) verify(ctx context.Context, token string) (*AccessToken, storage.AccessTokenRef, error) {
	if !looksLikeJWT(token) {
		return nil, storage.AccessTokenRef{}, ErrInvalidToken
	}
	var digest tokenDigest
	var t *verifiedToken
	if v.verified != nil {
		digest = sha256.Sum256([]byte(token))
		if c, ok := v.verified.get(digest, v.now()); ok {
			if v.keys.publishes(c.kid) {
				t = c
			} else {
				v.verified.drop(digest) // its key was withdrawn: check below refuses it
			}
		}
	}
	cached := t != nil
	if !cached {
		var ref storage.AccessTokenRef
		var err error
		if t, ref, err = v.check(token); err != nil {
			return nil, ref, err
		}
		if !v.now().Before(t.at.ExpiresAt) {
			return nil, t.ref, ErrInvalidToken
		}
	}
	// One query decides revocation, a deleted client's tokens included: storage.DeleteClient
	// leaves a rule on the client, in the same transaction, on every replica at once.
	revoked, err := v.store.AccessTokenRevoked(ctx, t.ref)
	if err != nil {
		return nil, t.ref, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if revoked {
		if cached {
			v.verified.drop(digest) // revocation is for good: free its place
		}
		return nil, t.ref, ErrInvalidToken
	}
	if v.verified == nil {
		return &t.at, t.ref, nil // no cache shares it: no copy needed
	}
	if !cached {
		v.verified.put(digest, t)
	}
	return t.accessToken(), t.ref, nil
}

// check verifies what about token cannot change: its signature by a published key, its
// type (at+jwt), issuer and claims. Expiry and revocation are verify's. On an error, the
// reference is as far as it was read.
func (v *accessTokenVerifier) check(token string) (*verifiedToken, storage.AccessTokenRef, error) {
	v.checks.Add(1)
	var ref storage.AccessTokenRef
	parsed, err := v.keys.parse(token)
	if err != nil || parsed == nil {
		return nil, ref, ErrInvalidToken
	}
	if typ, _ := parsed.Header["typ"].(string); !strings.EqualFold(typ, "at+jwt") {
		return nil, ref, ErrInvalidToken
	}
	claims := map[string]any(parsed.Claims)
	str := func(name string) string { s, _ := claims[name].(string); return s }
	iat, okIat := intClaim(claims, "iat")
	exp, okExp := intClaim(claims, "exp")
	us, okUs := intClaim(claims, claimIssuedMicros)
	ref = storage.AccessTokenRef{JTI: str("jti"), GrantID: str(claimGrantID), Subject: str("sub"),
		ClientID: str("client_id"), IssuedAt: time.UnixMicro(us).UTC()}
	switch {
	case str("iss") != v.issuer, ref.JTI == "", ref.GrantID == "", ref.Subject == "", ref.ClientID == "",
		!okIat || !okExp || !okUs,
		// iat_us must lie in the second iat names.
		us < iat*1e6 || us >= (iat+1)*1e6:
		return nil, ref, ErrInvalidToken
	}
	_, authTime := claims["auth_time"]
	cnf, _ := claims["cnf"].(map[string]any)
	jkt, _ := cnf["jkt"].(string)
	if _, hasCnf := claims["cnf"]; hasCnf && jkt == "" {
		// A confirmation this verifier cannot check binds the token to something else.
		return nil, ref, ErrInvalidToken
	}
	kid, _ := parsed.Header["kid"].(string)
	return &verifiedToken{kid: kid, ref: ref, at: AccessToken{
		DPoPThumbprint: jkt,
		Subject:        ref.Subject,
		ClientID:       ref.ClientID,
		Scopes:         strings.Fields(str("scope")),
		Audience:       claimStrings(claims["aud"]),
		IssuedAt:       time.Unix(iat, 0).UTC(),
		ExpiresAt:      time.Unix(exp, 0).UTC(),
		// A client_credentials token speaks for its client: sub is the client's id, and it
		// has no auth_time, which every user token carries.
		UserBound: ref.Subject != ref.ClientID || authTime,
		Claims:    claims,
	}}, ref, nil
}

// intClaim is the whole-number claim name of claims, and whether it is one.
func intClaim(claims map[string]any, name string) (int64, bool) {
	switch n := claims[name].(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), n == float64(int64(n))
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// accessTokenKey is the request context key of the *AccessToken RequireScopes accepted.
type accessTokenKey struct{}

// AccessTokenFromContext returns the access token RequireScopes accepted for the request
// whose context is ctx, and false outside such a request.
func AccessTokenFromContext(ctx context.Context) (*AccessToken, bool) {
	at, ok := ctx.Value(accessTokenKey{}).(*AccessToken)
	return at, ok && at != nil
}

// RequireScopes returns middleware for an API in the same process. It reads the request's
// access token (the Authorization header with the Bearer or DPoP scheme, or access_token in
// a form-encoded POST body), verifies it with VerifyRequest (a DPoP-bound token with its
// proof), requires every one of scopes, and passes the request on with the token in its
// context (AccessTokenFromContext). Otherwise it answers as RFC 6750 §3 and RFC 9449 §7.1
// describe, the issuer as realm: 401 without an error code when no token was sent (a Bearer
// and a DPoP challenge), 401 invalid_token for a refused token (DPoP's challenge for a
// DPoP-bound token presented as Bearer), 401 invalid_dpop_proof or use_dpop_nonce for a
// refused proof, 403 insufficient_scope naming the required scopes, and 503
// temporarily_unavailable with Retry-After when the database is unreachable.
//
// Client tokens pass it: a client_credentials token, which speaks for its client and no
// user (AccessToken.UserBound false, Subject the client's id), carrying the scopes is let
// through like a user's. A route that acts for a user (reads "my orders", changes a user's
// data) should use RequireUser instead, so that a client's own token cannot reach it.
//
// RequireScopes does not look at the token's audience: any client's token with the scopes
// passes. An API that clients reach with audience-restricted tokens (ClientSpec.Audience,
// RFC 8707 resource indicators) should use RequireAudience, so a token issued for another
// API is refused (RFC 9068 §4).
func (p *Provider) RequireScopes(scopes ...string) func(http.Handler) http.Handler {
	return p.require(requirement{scopes: scopes})
}

// RequireUser is RequireScopes for a route that acts for a user: it also refuses a token
// that speaks for no user, a client_credentials token, with 401 and the error code
// insufficient_user_authentication (RFC 9470 §3: the token carries no authentication of a
// user), so only a token the user's authorization produced (authorization code, device
// code or their refresh) reaches the handler, whose AccessToken.Subject is then the
// user's id.
func (p *Provider) RequireUser(scopes ...string) func(http.Handler) http.Handler {
	return p.require(requirement{scopes: scopes, user: true})
}

// RequireAudience is RequireScopes for an API identified by audience (a resource URI or a
// client id, as ClientSpec.Audience names it): it also refuses, 401 invalid_token, a token
// whose audience does not name it. Client tokens pass it, as they pass RequireScopes.
func (p *Provider) RequireAudience(audience string, scopes ...string) func(http.Handler) http.Handler {
	return p.require(requirement{audience: audience, scopes: scopes})
}

// requirement is what RequireScopes, RequireUser and RequireAudience demand of a token.
type requirement struct {
	// audience the token's aud must contain; "" checks none.
	audience string
	// scopes the token must all carry.
	scopes []string
	// user demands a user-bound token.
	user bool
}

// errInsufficientUserAuthentication is RFC 9470 §3's error code: the token does not carry
// the authentication of a user the resource requires.
const errInsufficientUserAuthentication = "insufficient_user_authentication"

// require is the middleware of want.
func (p *Provider) require(want requirement) func(http.Handler) http.Handler {
	scopes := slices.Clone(want.scopes) // the caller's slice may change later
	required := strings.Join(scopes, " ")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			at, ok := p.bearerToken(w, r)
			if !ok {
				return
			}
			if want.audience != "" && !slices.Contains(at.Audience, want.audience) {
				p.bearerError(w, r, http.StatusUnauthorized, "invalid_token", "The access token was not issued for this resource.", "")
				return
			}
			if want.user && !at.UserBound {
				p.bearerError(w, r, http.StatusUnauthorized, errInsufficientUserAuthentication,
					"This resource acts for a user: present a token issued with a user's authorization, not a client's own token.", "")
				return
			}
			for _, s := range scopes {
				if !fosite.Arguments(at.Scopes).Has(s) {
					p.bearerError(w, r, http.StatusForbidden, "insufficient_scope", "The access token does not carry the required scopes.", required)
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accessTokenKey{}, at)))
		})
	}
}

// bearerToken returns the access token r carries (internal/bearer), verified by
// VerifyRequest, and true. Otherwise it has answered w as RFC 6750 §3 and RFC 9449 §7.1
// describe (refusal) and returns false.
func (p *Provider) bearerToken(w http.ResponseWriter, r *http.Request) (*AccessToken, bool) {
	at, err := p.VerifyRequest(r)
	if err != nil {
		writeRefusal(w, p.refusal(r, err))
		return nil, false
	}
	return at, true
}

// bearerError answers a request refused for its verified access token, with the challenge
// of the scheme the token was presented with (challenge).
func (p *Provider) bearerError(w http.ResponseWriter, r *http.Request, status int, code, description, scope string) {
	writeRefusal(w, p.challenge(bearer.FromRequest(r).Scheme, status, code, description, scope))
}

// quoted is s as an HTTP quoted-string (RFC 9110 §5.6.4).
func quoted(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
