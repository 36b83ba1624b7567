package publicauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
)

// maxBodyBytes caps a JSON request body.
const maxBodyBytes = 64 << 10

// requestError is a fault of the HTTP request itself (media type, size, JSON syntax), found
// before the service is called. It carries its status and a message safe to show.
type requestError struct {
	status  int
	message string
}

func (e *requestError) Error() string { return e.message }

// errorBody is the error shape of the JSON API (DESIGN §4): the HTTP status text and a
// message for people.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Describe is the one table from this package's errors to HTTP answers: the status and the
// message safe to show. The JSON API and the provider's hosted pages both use it. Anything
// not in it is a 500 whose details must only be logged.
func Describe(err error) (int, string) {
	var reqErr *requestError
	var inputErr *InputError
	var rateErr *RateLimitError
	switch {
	case errors.As(err, &reqErr):
		return reqErr.status, reqErr.message
	case errors.As(err, &inputErr):
		return http.StatusBadRequest, inputErr.Error()
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
	case errors.Is(err, ErrMailUnavailable):
		return http.StatusServiceUnavailable, "could not send the PIN, try again"
	case unavailable(err):
		return http.StatusServiceUnavailable, "service temporarily unavailable, try again shortly"
	}
	return http.StatusInternalServerError, "internal error"
}

// writeError answers r with err mapped through Describe in the shape
// {"error": "<HTTP status text>", "message": "<text>"}. A 429 carries Retry-After (see
// RetryAfterSeconds), a 503 Retry-After 5. A 500 logs the real error with the request's
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
			"method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, errorBody{Error: http.StatusText(status), Message: message})
}

// RetryAfterSeconds returns the Retry-After value of a *RateLimitError in err: its RetryAfter
// in whole seconds, rounded up, at least 1. The hosted pages set the same header.
func RetryAfterSeconds(err error) (int, bool) {
	var rateErr *RateLimitError
	if !errors.As(err, &rateErr) {
		return 0, false
	}
	return max(1, int((rateErr.RetryAfter+time.Second-1)/time.Second)), true
}

// writeJSON answers with status and v as JSON, never cached.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// The status line is out; a failed write means the client went away.
	_ = json.NewEncoder(w).Encode(v)
}

// decodeJSON reads r's body, which must be declared application/json, hold one JSON object
// and be at most maxBodyBytes long, into dst. Unknown fields are ignored. It returns a
// *requestError (415, 413 or 400) or an *InputError for a field of the wrong JSON type.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return &requestError{status: http.StatusUnsupportedMediaType, message: "Content-Type must be application/json"}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return &requestError{status: http.StatusBadRequest, message: "request body must hold a single JSON object"}
	default:
		return decodeError(err)
	}
}

// decodeError translates an error of json.Decoder over a size-capped body.
func decodeError(err error) error {
	var tooLarge *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return &requestError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("request body must be at most %d bytes", maxBodyBytes)}
	case errors.Is(err, io.EOF):
		return &requestError{status: http.StatusBadRequest, message: "request body is empty"}
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return &requestError{status: http.StatusBadRequest, message: "request body is not valid JSON"}
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return &InputError{Field: typeErr.Field, Reason: "must be a JSON " + typeErr.Type.String()}
	case errors.As(err, &typeErr):
		return &requestError{status: http.StatusBadRequest, message: "request body must be a JSON object"}
	}
	return &requestError{status: http.StatusBadRequest, message: "request body could not be read"}
}

// unavailable reports whether err says the store cannot reach its database; the store marks
// such errors with an Unavailable method (publicauth does not import storage).
func unavailable(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.As(err, &u) && u.Unavailable()
}
