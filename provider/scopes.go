package provider

import (
	"errors"
	"fmt"
	"slices"
)

// Scope is a custom scope the provider's clients may be registered with and ask for,
// beyond the built-in ones (Config.Scopes).
//
// An API's scope usually grants what only clients the operator trusts may have (a
// client_credentials token carrying it passes RequireScopes), so dynamic client
// registration (RFC 7591, RFC 7592) refuses it with invalid_client_metadata unless it is
// marked Registrable. The operator grants it to clients with CreateClient or UpdateClient.
type Scope struct {
	// Name is the scope token: RFC 6749 §3.3 characters (printable ASCII without space,
	// `"` and `\`), unique, and not a built-in scope. Required.
	Name string
	// Description says in one sentence what the scope lets an application do, as the
	// consent page shows it (e.g. "Read your orders"). Default: "Use scope NAME".
	Description string
	// Registrable lets a client registering itself at /api/oauth/register ask for this
	// scope, as it may for the standard OpenID Connect scopes. Mark only a scope any
	// self-registered client may hold, for example one whose every use still passes the
	// user's consent and the API's own checks of who the user is. Default false: dynamic
	// registration (and its RFC 7592 updates) refuses it with invalid_client_metadata.
	Registrable bool
}

// builtinScopes are the scopes Gatehouse defines itself; a custom scope cannot take their
// names.
var builtinScopes = scopesSupported

// standardRegistrableScopes are the built-in scopes any client may register for: those of
// OpenID Connect (Core §5.4, §11). manage_permissions, which lets a client change users'
// permissions, is for clients an operator trusts.
var standardRegistrableScopes = []string{"openid", "profile", "email", "address", "phone", "offline_access"}

// registrableScopes are the scopes dynamic client registration accepts: the standard
// OpenID Connect ones and the custom scopes marked Registrable.
func registrableScopes(custom []Scope) []string {
	out := slices.Clone(standardRegistrableScopes)
	for _, s := range custom {
		if s.Registrable {
			out = append(out, s.Name)
		}
	}
	return out
}

// validScopeToken reports whether s is a scope-token of RFC 6749 §3.3:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func validScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// validateScopes checks the custom scopes of Config.Scopes.
func validateScopes(scopes []Scope) error {
	var errs []error
	seen := make(map[string]bool, len(scopes))
	for _, s := range scopes {
		switch {
		case !validScopeToken(s.Name):
			errs = append(errs, fmt.Errorf("scope %q is not a valid scope token", s.Name))
		case slices.Contains(builtinScopes, s.Name):
			errs = append(errs, fmt.Errorf("scope %q is built in", s.Name))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("scope %q is declared twice", s.Name))
		}
		seen[s.Name] = true
	}
	return errors.Join(errs...)
}

// scopeDescriptions maps each custom scope to what the consent page says of it.
func scopeDescriptions(scopes []Scope) map[string]string {
	out := make(map[string]string, len(scopes))
	for _, s := range scopes {
		if s.Description != "" {
			out[s.Name] = s.Description
		}
	}
	return out
}

// supportedScopes are the scopes discovery lists: the built-in ones, then the custom ones.
func supportedScopes(custom []Scope) []string {
	out := slices.Clone(scopesSupported)
	for _, s := range custom {
		out = append(out, s.Name)
	}
	return out
}
