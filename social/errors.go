package social

import (
	"errors"
	"fmt"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// Errors of a social login. Those that reach a page (Host.ErrorPage) are exported, so the
// hosted pages' error table knows them.
var (
	// ErrBadState: the callback's state is missing or differs from the cookie's, or the
	// cookie is missing, forged, expired, used or of another provider.
	ErrBadState = errors.New("social login state does not match")
	// ErrReturnTo: return_to is neither a path on our origin nor a registered redirect URI.
	ErrReturnTo = errors.New("return URL not allowed")
	// errDenied: the provider answered the authorization request with access_denied.
	errDenied = errors.New("the user or the provider denied the login")
)

// upstreamError is a provider that failed: an error answer other than a denial, a failed
// code exchange, an ID token that does not verify, a profile that cannot be read, a
// timeout. err says what, for the log only.
type upstreamError struct {
	provider string
	err      error
}

func (e *upstreamError) Error() string { return fmt.Sprintf("%s: %v", e.provider, e.err) }
func (e *upstreamError) Unwrap() error { return e.err }

// Codes the hosted login page is sent back with after a failed social login
// (?social_error=<code>); package ui holds the texts it shows for them.
const (
	CodeDenied     = "denied"
	CodeUpstream   = "upstream"
	CodeUnverified = "email_unverified"
)

// loginCode is the code of a failed login that goes back to the login page, where the user
// can choose another way in; false for one that gets the host's error page.
func loginCode(err error) (string, bool) {
	var up *upstreamError
	switch {
	case errors.Is(err, errDenied):
		return CodeDenied, true
	case errors.As(err, &up):
		return CodeUpstream, true
	case errors.Is(err, publicauth.ErrEmailUnverifiedUpstream):
		return CodeUnverified, true
	}
	return "", false
}
