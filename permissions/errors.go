package permissions

import (
	"errors"
	"net/http"
)

// Errors of the package. Describe (http.go) maps each to its HTTP answer.
var (
	// ErrNoCredentials: the request carries neither a bearer token nor a session the route
	// accepts (401).
	ErrNoCredentials = errors.New("no credentials")
	// ErrInvalidToken: the bearer token is unknown, malformed, expired or revoked (401).
	ErrInvalidToken = errors.New("invalid access token")
	// ErrNoSession: the request carries no valid admin-session or public-session (401).
	ErrNoSession = errors.New("no valid session")
	// ErrNotAdmin: the session's user is not an admin (403).
	ErrNotAdmin = errors.New("admin role required")
	// ErrClientMismatch: the token's client is not the client of the path (403).
	ErrClientMismatch = errors.New("access token client does not match the requested client")
	// ErrSubjectMismatch: the user-bound token's subject is not the user of the path (403).
	ErrSubjectMismatch = errors.New("access token subject does not match the requested user")
	// ErrScopeMissing: the client token lacks scope manage_permissions (403).
	ErrScopeMissing = errors.New("access token lacks scope manage_permissions")
	// ErrClientTokenRequired: a user-bound token was used where only a client token may
	// act (403).
	ErrClientTokenRequired = errors.New("a client token (client_credentials) is required")
	// ErrUserTokenRequired: a client token was used where only a user-bound token may act
	// (403).
	ErrUserTokenRequired = errors.New("a user-bound access token is required")
	// ErrUnknownUser: no user has the id of the path (404).
	ErrUnknownUser = errors.New("user not found")
	// ErrUnknownClient: no client has the id of the path (404).
	ErrUnknownClient = errors.New("application not found")
	// ErrNoRecord: the user has no permission record for the client (404).
	ErrNoRecord = errors.New("no permission record")
	// ErrAlreadyApproved: an access request for a record that is approved (409).
	ErrAlreadyApproved = errors.New("access already approved")
	// ErrRecordExists is what Store.SavePermission returns when asked to insert a record
	// another transaction has just inserted; the change is retried and then finds it.
	ErrRecordExists = errors.New("permission record already exists")
)

// InputError reports a request value the service refuses: Field names the JSON field or
// query parameter, Reason says why. The API answers it 400 with "<field> <reason>".
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string { return e.Field + " " + e.Reason }

// TokenError is a refused access token whose 401 answer carries headers of its own: the
// challenge of the scheme it was presented with (a DPoP challenge, RFC 9449 §7.1) and a
// fresh DPoP-Nonce. Tokens.Validate returns it; it matches ErrInvalidToken and answers
// Message.
type TokenError struct {
	// Header holds the answer's WWW-Authenticate and any other headers.
	Header http.Header
	// Message is the answer's message.
	Message string
}

func (e *TokenError) Error() string { return "invalid access token: " + e.Message }

// Unwrap makes a TokenError match ErrInvalidToken.
func (e *TokenError) Unwrap() error { return ErrInvalidToken }
