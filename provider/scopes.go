package provider

import (
	"errors"
	"fmt"
	"slices"
)

// Scope is a custom scope the provider's clients may be registered with and ask for,
// beyond the built-in ones (Config.Scopes).
type Scope struct {
	// Name is the scope token: RFC 6749 §3.3 characters (printable ASCII without space,
	// `"` and `\`), unique, and not a built-in scope. Required.
	Name string
	// Description says in one sentence what the scope lets an application do, as the
	// consent page shows it (e.g. "Read your orders"). Default: "Use scope NAME".
	Description string
}

// builtinScopes are the scopes Gatehouse defines itself; a custom scope cannot take their
// names.
var builtinScopes = scopesSupported

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
