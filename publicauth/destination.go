package publicauth

import "github.com/gatehouse-id/gatehouse/internal/mountpath"

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
	// Resume is an internal path the login goes to, e.g. the signed-in page: a path under
	// Config.BaseURL's, by the rule of mountpath.Contains (beginning with "/" but not
	// "//", and under a mount path nothing that resolves out of it). Only the provider sets
	// it.
	Resume string
}

// isInternalPath reports whether p is a path of this service: one a browser resolves to a
// place under the service's mount path (mountpath.Contains).
func (s *Service) isInternalPath(p string) bool { return mountpath.Contains(s.mount, p) }
