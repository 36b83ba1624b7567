package social

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
)

// Errors of a social login.
var (
	// errBadState: the callback's state is missing or differs from the cookie's, or the
	// cookie is missing, forged, expired, used or of another provider.
	errBadState = errors.New("social login state does not match")
	// errReturnTo: return_to is neither a path on our origin nor a registered redirect URI.
	errReturnTo = errors.New("return URL not allowed")
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

// Codes of the messages the hosted login page shows after a failed social login
// (LoginMessage). The page is reached with ?social_error=<code>.
const (
	codeDenied     = "denied"
	codeUpstream   = "upstream"
	codeUnverified = "email_unverified"
)

var loginMessages = map[string]string{
	codeDenied:     "Sign-in with the other service was cancelled. Choose another way to sign in.",
	codeUpstream:   "The other sign-in service could not be reached or answered with an error. Try again in a moment, or sign in another way.",
	codeUnverified: "That account has no verified email address. Verify your email address there first, or sign in another way.",
}

// LoginMessage is the text the hosted login page shows for a social_error code, or "" for a
// code it does not know (so no text can be injected through the URL).
func LoginMessage(code string) string { return loginMessages[code] }

// answer is how a failed social login is shown: back on the login page with a message code
// (status 0), or an error page.
type answer struct {
	status         int
	code           string
	title, message string
}

// describe is this package's one table from errors to answers. Anything not in it is a 500
// whose details are only logged.
func describe(err error) answer {
	var up *upstreamError
	switch {
	case errors.Is(err, errDenied):
		return answer{code: codeDenied}
	case errors.As(err, &up):
		return answer{code: codeUpstream}
	case errors.Is(err, publicauth.ErrEmailUnverifiedUpstream):
		return answer{code: codeUnverified}
	case errors.Is(err, errBadState):
		return answer{status: http.StatusBadRequest, title: "Sign-in could not be verified",
			message: "This sign-in attempt is invalid, expired or was already used. Go back to the sign-in page and start again."}
	case errors.Is(err, errReturnTo):
		return answer{status: http.StatusBadRequest, title: "The request cannot be completed",
			message: "return_to must be a path on this service or a redirect URI registered by an application."}
	case errors.Is(err, publicauth.ErrRequestExpired):
		return answer{status: http.StatusBadRequest, title: "Sign-in request expired",
			message: "This sign-in request has expired or has already been completed. Go back to the application and start again."}
	case errors.Is(err, publicauth.ErrLinkRefused):
		return answer{status: http.StatusForbidden, title: "Account already exists",
			message: "An account with this email address already exists. Sign in to it with your password first, then choose this sign-in option again to link it to your account."}
	case errors.Is(err, publicauth.ErrAccountDisabled):
		return answer{status: http.StatusForbidden, title: "Account disabled", message: "This account is disabled."}
	case httpjson.Unavailable(err):
		return answer{status: http.StatusServiceUnavailable, title: "Temporarily unavailable",
			message: "The service is temporarily unavailable. Please try again in a moment."}
	}
	return answer{status: http.StatusInternalServerError, title: "Something went wrong", message: "Please try again in a moment."}
}
