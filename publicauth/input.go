package publicauth

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on account fields.
const (
	// maxEmailBytes is the longest address SMTP can carry (RFC 5321 §4.5.3.1.3, less the
	// angle brackets).
	maxEmailBytes = 254
	maxNameChars  = 200
)

// invalidEmailReason is the *InputError reason (and, after "email ", the JSON message) of
// an address that is not usable.
const invalidEmailReason = "must be a valid email address"

// normalizeEmail trims email and checks that it is a single bare address (RFC 5322
// addr-spec, as net/mail parses it): no display name, no angle brackets, no comments; and
// that it has a key (EmailKey). It returns the trimmed address as typed (case kept), the
// form stored and shown, or an *InputError for field "email".
func normalizeEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", &InputError{Field: "email", Reason: "is required"}
	}
	if len(email) > maxEmailBytes {
		return "", &InputError{Field: "email", Reason: fmt.Sprintf("must be at most %d bytes", maxEmailBytes)}
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Name != "" || addr.Address != email {
		return "", &InputError{Field: "email", Reason: invalidEmailReason}
	}
	if _, err := EmailKey(email); err != nil {
		return "", &InputError{Field: "email", Reason: invalidEmailReason}
	}
	return email, nil
}

// normalizeName trims name and checks that it is present, at most maxNameChars characters
// and free of control characters. It returns the trimmed name or an *InputError for field
// "name".
func normalizeName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", &InputError{Field: "name", Reason: "is required"}
	case !utf8.ValidString(name):
		return "", &InputError{Field: "name", Reason: "must be valid UTF-8"}
	case utf8.RuneCountInString(name) > maxNameChars:
		return "", &InputError{Field: "name", Reason: fmt.Sprintf("must be at most %d characters", maxNameChars)}
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", &InputError{Field: "name", Reason: "must not contain control characters"}
	}
	return name, nil
}

// normalizeRole maps the empty role to RoleUser and refuses any role but RoleUser and
// RoleAdmin with an *InputError for field "role".
func normalizeRole(role string) (string, error) {
	switch role = strings.TrimSpace(role); role {
	case "":
		return RoleUser, nil
	case RoleUser, RoleAdmin:
		return role, nil
	}
	return "", &InputError{Field: "role", Reason: fmt.Sprintf("must be %q or %q", RoleUser, RoleAdmin)}
}
