package publicauth

import "strings"

// Destination is where a finished login goes. PausedRequest, when set, wins over Resume,
// and Resume over RedirectURI.
type Destination struct {
	// PausedRequest refers to the paused OAuth authorization request the login continues;
	// the provider resolves it. It is a reference (the hex SHA-256 of the request's token),
	// never the token itself: the rows of mailed links and PIN challenges keep it, and a
	// stored row must not be able to drive the flow on its own. Only the provider sets it.
	PausedRequest string
	// RedirectURI is a registered redirect URI or an allow-listed origin's URL (a magic link
	// asked for through the JSON API).
	RedirectURI string
	// Resume is an internal path (beginning with "/" but not "//") the login goes to, e.g.
	// the signed-in page. Only the provider sets it.
	Resume string
}

// isInternalPath reports whether p is a path on this server: it begins with "/" and not with
// "//" or "/\" (which browsers read as a host), and holds no control characters.
func isInternalPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, `/\`) {
		return false
	}
	return !strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
