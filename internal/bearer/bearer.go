// Package bearer reads OAuth 2.0 access tokens from requests: the Bearer scheme (RFC 6750)
// and the DPoP scheme (RFC 9449 §7.1). It is the one parser behind every endpoint that
// accepts an access token (userinfo, the permissions API, RequireScopes).
package bearer

import (
	"net/http"
	"strings"
)

// The Authorization schemes of an access token, as answers name them in WWW-Authenticate.
const (
	SchemeBearer = "Bearer"
	SchemeDPoP   = "DPoP"
)

// Credential is the access token a request presents and the scheme it presents it with.
type Credential struct {
	// Scheme is SchemeBearer or SchemeDPoP.
	Scheme string
	// Token is the access token.
	Token string
}

// FromHeader returns the credential of r's "Authorization: Bearer <token>" or
// "Authorization: DPoP <token>" header (the scheme case-insensitive, the token trimmed) and
// true; the zero Credential and false when r has no Authorization header of either scheme,
// or a scheme without a token.
func FromHeader(r *http.Request) (Credential, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return Credential{}, false
	}
	switch {
	case strings.EqualFold(scheme, SchemeBearer):
		return Credential{Scheme: SchemeBearer, Token: token}, true
	case strings.EqualFold(scheme, SchemeDPoP):
		return Credential{Scheme: SchemeDPoP, Token: token}, true
	}
	return Credential{}, false
}

// FromRequest returns the credential of r's Authorization header or, for a form-encoded
// POST without one, its access_token body parameter as a Bearer token (RFC 6750 §2.2;
// never the query string); the zero Credential when r carries neither.
func FromRequest(r *http.Request) Credential {
	if c, ok := FromHeader(r); ok {
		return c
	}
	if r.Method == http.MethodPost {
		if token := r.PostFormValue("access_token"); token != "" {
			return Credential{Scheme: SchemeBearer, Token: token}
		}
	}
	return Credential{}
}
