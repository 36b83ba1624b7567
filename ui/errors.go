package ui

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/social"
)

// Errors of the pages themselves. They and the domain errors the pages meet are answered
// from one table, describe.
var (
	// errFormExpired: a form POST whose CSRF token does not match the browser's cookie.
	errFormExpired = errors.New("form CSRF token missing or invalid")
	// errCrossOrigin: a form POST a browser sent from another origin or site.
	errCrossOrigin = errors.New("form sent from another site")
	// errLinkIncomplete: the page of a mailed link opened without the link's token.
	errLinkIncomplete = errors.New("link page opened without a token")
	// The mailed links that are invalid, used or expired (publicauth.ErrInvalidToken), each
	// with the text of its page.
	errMagicLinkExpired   = errors.New("magic link invalid or expired")
	errResetLinkExpired   = errors.New("password-reset link invalid or expired")
	errConfirmLinkExpired = errors.New("password-linking link invalid or expired")
	errVerifyLinkExpired  = errors.New("verification link invalid or expired")
	// ErrLogoutUnreadable: a logout request whose form cannot be parsed.
	ErrLogoutUnreadable = errors.New("logout request could not be read")
)

// RequestError is an authorization request that cannot be completed and has no verified
// redirect URI to be answered at: the page shows Status and Description, the error
// description the client would have got.
type RequestError struct {
	Status      int
	Description string
}

func (e *RequestError) Error() string { return "authorization request failed: " + e.Description }

// problem is how a page answers an error: the status and, in sentence case, the title and
// text the user sees.
type problem struct {
	status      int
	title, text string
	// form: the input the user sent was refused; the form shows text and can be sent again.
	form bool
}

const titleCannotComplete = "The request cannot be completed"

// linkExpired is the page of a mailed link that no longer works.
func linkExpired(text string) problem {
	return problem{status: http.StatusBadRequest, title: "Link expired", text: text}
}

// pageErrors is the one list of the pages' error texts, by the error they answer.
var pageErrors = []struct {
	err error
	problem
}{
	{publicauth.ErrBusy, problem{status: http.StatusServiceUnavailable, title: "Busy",
		text: "Too many sign-ins are being checked right now. Please try again in a moment."}},
	{publicauth.ErrRequestExpired, problem{status: http.StatusBadRequest, title: "Sign-in request expired",
		text: "This sign-in request has expired or has already been completed. Go back to the application and start again."}},
	{errFormExpired, problem{status: http.StatusForbidden, title: "Form expired",
		text: "The form expired. Go back, reload the page and try again."}},
	{errCrossOrigin, problem{status: http.StatusForbidden, title: "Request refused",
		text: "This form was sent from another site. Open the page on this site and send it from there."}},
	{errLinkIncomplete, problem{status: http.StatusBadRequest, title: "Link incomplete",
		text: "This page opens from the link in your email. Open the whole link, or ask for a new one."}},
	{errMagicLinkExpired, linkExpired("This sign-in link is invalid, was already used or has expired. Ask for a new one.")},
	{errResetLinkExpired, linkExpired("This password-reset link is invalid, was already used or has expired. Ask for a new one.")},
	{errConfirmLinkExpired, linkExpired("This link is invalid, was already used or has expired. Register again to get a new one.")},
	{errVerifyLinkExpired, linkExpired("This verification link is invalid, was already used or has expired.")},
	{ErrLogoutUnreadable, problem{status: http.StatusBadRequest, title: "Invalid logout request",
		text: "The logout request could not be read."}},
	{social.ErrBadState, problem{status: http.StatusBadRequest, title: "Sign-in could not be verified",
		text: "This sign-in attempt is invalid, expired or was already used. Go back to the sign-in page and start again."}},
	{social.ErrReturnTo, problem{status: http.StatusBadRequest, title: titleCannotComplete,
		text: "return_to must be a path on this service or a redirect URI registered by an application."}},
	{ErrDeviceCodeInvalid, problem{status: http.StatusBadRequest, title: "Code not recognised",
		text: "That code is not valid, was already used or has expired. Check the code on your device, or start again there.", form: true}},
	{publicauth.ErrLinkRefused, problem{status: http.StatusForbidden, title: "Account already exists",
		text: "An account with this email address already exists. Sign in to it with your password first, then choose this sign-in option again to link it to your account."}},
	{publicauth.ErrAccountDisabled, problem{status: http.StatusForbidden, title: "Account disabled",
		text: "This account is disabled.", form: true}},
	{publicauth.ErrPINMismatch, problem{status: http.StatusUnauthorized, title: "Wrong PIN",
		text: "That PIN is not right. Check the latest mail and try again.", form: true}},
	{publicauth.ErrChallengeInvalid, problem{status: http.StatusUnauthorized, title: "Sign in again",
		text: "This PIN has expired or was entered wrong too many times."}},
}

var (
	tooManyAttempts = problem{status: http.StatusTooManyRequests, title: "Too many attempts",
		text: "Too many attempts. Wait a few minutes, then try again."}
	unavailable = problem{status: http.StatusServiceUnavailable, title: "Temporarily unavailable",
		text: "The service is temporarily unavailable. Please try again in a moment."}
	internalError = problem{status: http.StatusInternalServerError, title: "Something went wrong",
		text: "Please try again in a moment."}
)

// socialLoginMessages are the texts the login page shows after a failed social login, by
// the code social sends it back with (?social_error=).
var socialLoginMessages = map[string]string{
	social.CodeDenied:     "Sign-in with the other service was cancelled. Choose another way to sign in.",
	social.CodeUpstream:   "The other sign-in service could not be reached or answered with an error. Try again in a moment, or sign in another way.",
	social.CodeUnverified: "That account has no verified email address. Verify your email address there first, or sign in another way.",
}

// describe is the one table from errors to what a page answers. A refused input of the
// public authentication service keeps its status and says its reason in sentence case;
// anything unknown is a 500 whose details are only logged.
func describe(err error) problem {
	var rateErr *publicauth.RateLimitError
	var reqErr *RequestError
	switch {
	case errors.As(err, &rateErr):
		return tooManyAttempts
	case errors.As(err, &reqErr):
		return problem{status: reqErr.Status, title: titleCannotComplete, text: reqErr.Description}
	}
	for _, e := range pageErrors {
		if errors.Is(err, e.err) {
			return e.problem
		}
	}
	if httpjson.Unavailable(err) {
		return unavailable
	}
	if status, msg := publicauth.Describe(err); status < http.StatusInternalServerError {
		return problem{status: status, title: titleCannotComplete, text: sentence(msg), form: true}
	}
	return internalError
}

// Describe tells what page answers err: its status, and its title and text in sentence
// case, from the same table Error uses. A Host that renders pages of its own, or a test of
// one, can answer alike.
func Describe(err error) (status int, title, text string) {
	p := describe(err)
	return p.status, p.title, p.text
}

// sentence makes an API message a sentence: a capital first letter and a full stop.
func sentence(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[size:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// Error answers a page request that failed with err with the error page describe gives;
// it never redirects. An attempt refused for load carries Retry-After, and a server fault
// is logged.
func (u *UI) Error(w http.ResponseWriter, r *http.Request, err error) {
	p := describe(err)
	seconds, limited := publicauth.RetryAfterSeconds(err)
	switch {
	case limited:
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
	case p.status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "5")
	}
	var reqErr *RequestError // the provider logged it with the request's details
	if p.status >= http.StatusInternalServerError && !limited && !errors.As(err, &reqErr) {
		u.log.ErrorContext(r.Context(), "hosted page failed", "error", err)
	}
	u.pages.error(w, r, p.status, p.title, p.text)
}

// formFailed answers a hosted form whose action failed with err: the form again with the
// reason for a refused input, the error page otherwise.
func (u *UI) formFailed(w http.ResponseWriter, r *http.Request, page string, f submittedForm, v formView, err error) {
	p := describe(err)
	if !p.form {
		u.Error(w, r, err)
		return
	}
	v.form().Error = p.text
	u.renderForm(w, r, p.status, page, f.token, f.paused, v)
}
