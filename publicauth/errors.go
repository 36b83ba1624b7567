package publicauth

import "errors"

// Errors the stores and the service return. The HTTP mapping lives in one table (http.go).
var (
	ErrUserNotFound       = errors.New("user not found")
	ErrEmailTaken         = errors.New("email already registered")
	ErrSessionNotFound    = errors.New("session not found")
	ErrInvalidCredentials = errors.New("invalid email or password")
	ErrAccountDisabled    = errors.New("account disabled")
	ErrNotAdmin           = errors.New("user is not an admin")
)

// InputError reports a request value the service refuses (an email that is not a bare
// address, a password that breaks the password rule, a missing name, …). Field names the
// JSON field; Reason says why, and is safe to show to the user. The JSON API answers it with
// 400 Bad Request and the message "<field> <reason>".
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string { return e.Field + " " + e.Reason }
