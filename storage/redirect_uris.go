package storage

import (
	"context"
	"fmt"
	"slices"
)

// IsRegisteredRedirectURI reports whether uri equals, as a string, one of the redirect URIs
// of some registered client. It reads only the clients' redirect URI lists (clients are
// few). It implements publicauth.RedirectURIs.
func (s *Store) IsRegisteredRedirectURI(ctx context.Context, uri string) (bool, error) {
	if uri == "" {
		return false, nil
	}
	var lists []stringList
	if err := s.conn(ctx).Model(&clientModel{}).Pluck("redirect_uris", &lists).Error; err != nil {
		return false, fmt.Errorf("storage: load redirect URIs: %w", err)
	}
	for _, l := range lists {
		if slices.Contains(l, uri) {
			return true, nil
		}
	}
	return false, nil
}
