package storage

import (
	"context"

	"github.com/ory/fosite"
)

// Access tokens are stateless JWTs (DESIGN.md §3): the token itself carries what a check
// needs, and revocation is by rule (revocation_rules.go). The access_tokens table stays in
// the schema, holding the rows of tokens issued before this release until the janitor
// sweeps them, but nothing reads or writes it any more.

// CreateAccessTokenSession stores nothing: an access token is valid by its signature, its
// expiry and the revocation rules. It implements oauth2.AccessTokenStorage.
func (s *Store) CreateAccessTokenSession(context.Context, string, fosite.Requester) error {
	return nil
}

// GetAccessTokenSession returns fosite.ErrNotFound without touching the database: no access
// token has a row. The provider verifies access tokens from the JWT itself.
func (s *Store) GetAccessTokenSession(context.Context, string, fosite.Session) (fosite.Requester, error) {
	return nil, fosite.ErrNotFound
}

// DeleteAccessTokenSession does nothing: no access token has a row to delete.
func (s *Store) DeleteAccessTokenSession(context.Context, string) error {
	return nil
}

// RevokeAccessToken revokes every access token issued for the request id (RFC 7009 section
// 2.1) up to now, by a rule on the grant. fosite calls it when a code or a rotated refresh
// token is used again and when a refresh token is revoked. It implements
// oauth2.TokenRevocationStorage.
func (s *Store) RevokeAccessToken(ctx context.Context, requestID string) error {
	return s.revokeNow(s.conn(ctx), grantKey(requestID))
}
