package provider

import (
	"time"

	"github.com/mohae/deepcopy"
	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/token/jwt"
)

// Session is the fosite session Gatehouse stores with every code and token: the ID token
// claims decided at authorization time (subject, auth_time, nonce, profile claims) plus what
// the JWT access token needs. It is serialized to JSON by storage.
type Session struct {
	openid.DefaultSession
	// ClientID is the client the grant was made to; it becomes the access token's client_id.
	ClientID string `json:"client_id"`
	// UserBound is true for tokens issued on behalf of a user (authorization_code and
	// refresh_token grants) and false for client tokens (client_credentials).
	UserBound bool `json:"user_bound"`
	// ClaimsRequest is the authorization request's `claims` parameter (OpenID Connect Core
	// §5.5), parsed; nil without one. Its userinfo member rides in the grant's access tokens
	// to the userinfo endpoint (claimUserinfoRequest).
	ClaimsRequest *claimsParameter `json:"claims_request,omitempty"`
	// DPoPJKT is the thumbprint of the DPoP key a public client's refresh token is bound to
	// (RFC 9449 §5), "" when it is not bound: a refresh must come with a proof by that key.
	// Only the token endpoint sets it.
	DPoPJKT string `json:"dpop_jkt,omitempty"`
	// CodeDPoPJKT is the dpop_jkt of the authorization request (RFC 9449 §10): the code is
	// redeemed only with a proof by that key. It is a field of its own because fosite reloads
	// the code's stored session over the one the token endpoint changed.
	CodeDPoPJKT string `json:"code_dpop_jkt,omitempty"`
	// accessIssuedAt is when the access token being issued with this session was signed,
	// to the microsecond; it is not stored (refreshStore reads it in the same request).
	accessIssuedAt time.Time
}

// newSession returns an empty session, the prototype fosite fills from storage.
func newSession() *Session {
	return &Session{DefaultSession: openid.DefaultSession{
		Claims:  &jwt.IDTokenClaims{},
		Headers: &jwt.Headers{},
	}}
}

// Clone deep-copies the session. openid.DefaultSession has its own Clone, but it would return
// a *DefaultSession and drop our fields.
func (s *Session) Clone() fosite.Session {
	if s == nil {
		return nil
	}
	return deepcopy.Copy(s).(*Session)
}

var _ fosite.Session = (*Session)(nil)
var _ openid.Session = (*Session)(nil)

// secondUTC truncates t to whole seconds in UTC: JWT times are whole seconds, and comparing
// auth_time with the request time at a finer grain than the token carries would make
// prompt=login and max_age checks flap.
func secondUTC(t time.Time) time.Time { return t.Truncate(time.Second).UTC() }
