package provider

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"

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

// Clone deep-copies the session, field by field: every map, slice and pointer of the copy
// is its own, so fosite may change either without the other seeing it, and the unexported
// fields are copied too. openid.DefaultSession has its own Clone, but it would return a
// *DefaultSession and drop our fields. TestSessionCloneCopiesEveryField fails when a field
// is added here or to fosite's session without being copied.
func (s *Session) Clone() fosite.Session {
	if s == nil {
		return nil
	}
	c := *s // the strings, flags and times
	c.DefaultSession = cloneDefaultSession(s.DefaultSession)
	c.ClaimsRequest = s.ClaimsRequest.clone()
	return &c
}

// cloneDefaultSession deep-copies fosite's OpenID Connect session.
func cloneDefaultSession(d openid.DefaultSession) openid.DefaultSession {
	if d.Claims != nil {
		claims := *d.Claims
		claims.Audience = slices.Clone(claims.Audience)
		claims.AuthenticationMethodsReferences = slices.Clone(claims.AuthenticationMethodsReferences)
		claims.Extra = cloneJSONMap(claims.Extra)
		d.Claims = &claims
	}
	if d.Headers != nil {
		d.Headers = &jwt.Headers{Extra: cloneJSONMap(d.Headers.Extra)}
	}
	d.ExpiresAt = maps.Clone(d.ExpiresAt)
	return d
}

// clone deep-copies a claims request; nil stays nil, and so do its members' nil requests.
func (c *claimsParameter) clone() *claimsParameter {
	if c == nil {
		return nil
	}
	return &claimsParameter{IDToken: cloneClaimRequests(c.IDToken), Userinfo: cloneClaimRequests(c.Userinfo)}
}

func cloneClaimRequests(m map[string]*claimRequest) map[string]*claimRequest {
	if m == nil {
		return nil
	}
	out := make(map[string]*claimRequest, len(m))
	for name, r := range m {
		if r != nil {
			r = &claimRequest{Essential: r.Essential, Value: bytes.Clone(r.Value), Values: cloneJSONSlice(r.Values)}
		}
		out[name] = r
	}
	return out
}

// cloneJSONMap deep-copies a map of claim values (cloneJSONValue).
func cloneJSONMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneJSONValue(v)
	}
	return out
}

func cloneJSONSlice(s []any) []any {
	if s == nil {
		return nil
	}
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = cloneJSONValue(v)
	}
	return out
}

// cloneJSONValue deep-copies a claim value: the shapes JSON decodes to (maps, arrays and
// scalars) and those WithClaims functions usually return ([]string, map[string]string,
// json.RawMessage). A value of any other type is a scalar or a value the embedder gave,
// which nothing in Gatehouse changes, and is shared.
func cloneJSONValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneJSONMap(v)
	case []any:
		return cloneJSONSlice(v)
	case []string:
		return slices.Clone(v)
	case map[string]string:
		return maps.Clone(v)
	case json.RawMessage:
		return json.RawMessage(bytes.Clone(v))
	}
	return v
}

var _ fosite.Session = (*Session)(nil)
var _ openid.Session = (*Session)(nil)

// secondUTC truncates t to whole seconds in UTC: JWT times are whole seconds, and comparing
// auth_time with the request time at a finer grain than the token carries would make
// prompt=login and max_age checks flap.
func secondUTC(t time.Time) time.Time { return t.Truncate(time.Second).UTC() }
