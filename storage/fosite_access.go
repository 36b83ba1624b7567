package storage

import (
	"context"
	"fmt"

	"github.com/ory/fosite"
)

// CreateAccessTokenSession stores the request behind an access token, keyed by the token's
// signature (for a JWT access token, its signature segment). It implements
// oauth2.AccessTokenStorage.
func (s *Store) CreateAccessTokenSession(ctx context.Context, signature string, request fosite.Requester) error {
	cols, err := newRequestColumns(signature, request, fosite.AccessToken)
	if err != nil {
		return err
	}
	if err := s.conn(ctx).Create(&accessTokenModel{Request: cols}).Error; err != nil {
		return fmt.Errorf("storage: create access token: %w", err)
	}
	return nil
}

// GetAccessTokenSession returns the request behind the access token, its session
// unmarshalled into session, or fosite.ErrNotFound for an unknown (or revoked) token.
// Expiry is fosite's to check.
func (s *Store) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	m, err := takeRequestRow[accessTokenModel](ctx, s, "access token", signature)
	if err != nil {
		return nil, err
	}
	return s.toRequest(ctx, &m.Request, session)
}

// DeleteAccessTokenSession deletes the access token; deleting an unknown token is not an
// error.
func (s *Store) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	if err := s.conn(ctx).Where("signature = ?", signature).Delete(&accessTokenModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete access token: %w", err)
	}
	return nil
}

// RevokeAccessToken deletes every access token issued for the request id (RFC 7009
// section 2.1). It implements oauth2.TokenRevocationStorage; a request id without tokens is
// not an error.
func (s *Store) RevokeAccessToken(ctx context.Context, requestID string) error {
	if err := s.conn(ctx).Where("request_id = ?", requestID).Delete(&accessTokenModel{}).Error; err != nil {
		return fmt.Errorf("storage: revoke access tokens: %w", err)
	}
	return nil
}
