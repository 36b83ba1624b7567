package publicauth

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// maxBodyBytes caps a JSON request body.
const maxBodyBytes = 64 << 10

// Describe is the one table from this package's errors to HTTP answers: the status and the
// message safe to show. The JSON API and the provider's hosted pages both use it. Anything
// not in it is a 500 whose details must only be logged.
func Describe(err error) (int, string) {
	var reqErr *httpjson.RequestError
	var inputErr *InputError
	var rateErr *RateLimitError
	var unavailable *UnavailableError
	var refused *RefusedError
	switch {
	case errors.As(err, &reqErr):
		return reqErr.Status, reqErr.Message
	case errors.As(err, &unavailable):
		// The Accounts store lacks what the feature needs: as if the endpoint did not exist.
		return http.StatusNotFound, unavailable.Error()
	case errors.As(err, &refused):
		return http.StatusForbidden, refused.Message
	case errors.Is(err, ErrRegistrationClosed):
		return http.StatusForbidden, "registration is closed"
	case errors.As(err, &inputErr):
		return http.StatusBadRequest, inputErr.Error()
	case errors.Is(err, ErrInvalidEmail):
		return http.StatusBadRequest, "email " + invalidEmailReason
	case errors.Is(err, ErrInvalidCredentials):
		return http.StatusUnauthorized, "invalid email or password"
	case errors.Is(err, ErrSessionNotFound):
		return http.StatusUnauthorized, "no valid session"
	case errors.Is(err, ErrAccountDisabled):
		return http.StatusForbidden, "account disabled"
	case errors.Is(err, ErrNotAdmin):
		return http.StatusForbidden, "admin role required"
	case errors.Is(err, ErrUserNotFound):
		return http.StatusNotFound, "user not found"
	case errors.Is(err, ErrEmailTaken):
		return http.StatusConflict, "email already registered"
	case errors.Is(err, ErrInvalidToken):
		return http.StatusBadRequest, "the link is invalid or has expired"
	case errors.Is(err, ErrPasswordMismatch):
		return http.StatusUnauthorized, "the password is not the one chosen when registering"
	case errors.Is(err, ErrPINMismatch):
		return http.StatusUnauthorized, "wrong PIN"
	case errors.Is(err, ErrChallengeInvalid):
		return http.StatusUnauthorized, "the PIN has expired or was entered wrong too often; log in again"
	case errors.As(err, &rateErr):
		return http.StatusTooManyRequests, "too many attempts, try again later"
	case errors.Is(err, ErrBusy):
		return http.StatusServiceUnavailable, "too many sign-ins are being checked at once, try again in a moment"
	case httpjson.Unavailable(err):
		return http.StatusServiceUnavailable, "service temporarily unavailable, try again shortly"
	}
	return http.StatusInternalServerError, "internal error"
}

// writeError answers r with err mapped through Describe in the shape
// {"error": "<HTTP status text>", "message": "<text>"}. A 429 and the 503 of ErrBusy carry
// Retry-After (see RetryAfterSeconds), any other 503 Retry-After 5. A 500 logs the real error with the request's
// method and path.
func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, message := Describe(err)
	if seconds, ok := RetryAfterSeconds(err); ok {
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
	} else if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	if status >= http.StatusInternalServerError {
		s.logger.ErrorContext(r.Context(), "publicauth: request failed",
			"method", r.Method, "path", r.URL.Path, "error", err)
	}
	httpjson.WriteError(w, status, message)
}

// RetryAfterSeconds returns the Retry-After value of an attempt refused for load: of a
// *RateLimitError in err its RetryAfter, of ErrBusy BusyRetryAfter; in whole seconds,
// rounded up, at least 1. The hosted pages set the same header.
func RetryAfterSeconds(err error) (int, bool) {
	var rateErr *RateLimitError
	var wait time.Duration
	switch {
	case errors.As(err, &rateErr):
		wait = rateErr.RetryAfter
	case errors.Is(err, ErrBusy):
		wait = BusyRetryAfter
	default:
		return 0, false
	}
	return max(1, int((wait+time.Second-1)/time.Second)), true
}

// decodeJSON reads r's body, which must be declared application/json, hold one JSON object
// and be at most maxBodyBytes long, into dst (see httpjson.Decode). A field of the wrong
// JSON type is an *InputError naming it.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	return httpjson.Decode(w, r, dst, maxBodyBytes, func(field, reason string) error {
		// encoding/json names a field of an embedded struct by its Go path; the client knows
		// only the JSON name.
		return &InputError{Field: strings.TrimPrefix(field, "profileFields."), Reason: reason}
	})
}
