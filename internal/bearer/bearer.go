// Package bearer reads OAuth 2.0 bearer tokens (RFC 6750) from requests: the one parser
// behind every endpoint that accepts an access token (userinfo, the permissions API).
package bearer

import (
	"net/http"
	"strings"
)

// FromHeader returns the token of r's "Authorization: Bearer <token>" header (the scheme
// case-insensitive, the token trimmed) and true; "" and false when r has no Authorization
// header of the Bearer scheme.
func FromHeader(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// FromRequest returns the token of r's Authorization header or, for a form-encoded POST
// without one, its access_token body parameter (RFC 6750 §2.2; never the query string);
// "" when r carries neither.
func FromRequest(r *http.Request) string {
	if token, ok := FromHeader(r); ok {
		return token
	}
	if r.Method == http.MethodPost {
		return r.PostFormValue("access_token")
	}
	return ""
}
