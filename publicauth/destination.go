package publicauth

import "strings"

// Destination is where a finished login goes. Resume, when set, wins over RedirectURI.
type Destination struct {
	// RedirectURI is a registered redirect URI or an allow-listed origin's URL (a magic link
	// asked for through the JSON API).
	RedirectURI string
	// Resume is an internal path (beginning with "/" but not "//") that continues a paused
	// OAuth request, e.g. "/api/oauth/authorize/resume?request=…". Only the provider sets it.
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
