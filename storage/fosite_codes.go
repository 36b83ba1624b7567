package storage

import (
	"context"
	"fmt"

	"github.com/ory/fosite"
)

// CreateAuthorizeCodeSession stores the authorization request behind the code whose
// signature is given, as an active code. It implements oauth2.AuthorizeCodeStorage.
func (s *Store) CreateAuthorizeCodeSession(ctx context.Context, signature string, request fosite.Requester) error {
	cols, err := newRequestColumns(signature, request, fosite.AuthorizeCode)
	if err != nil {
		return err
	}
	if err := s.conn(ctx).Create(&authorizationCodeModel{Request: cols, Active: true}).Error; err != nil {
		return fmt.Errorf("storage: create authorization code: %w", err)
	}
	return nil
}

// GetAuthorizeCodeSession returns the authorization request of the code, its session
// unmarshalled into session. A used (invalidated) code returns the request together with
// fosite.ErrInvalidatedAuthorizeCode, so fosite can revoke the tokens issued for it; an
// unknown code returns fosite.ErrNotFound. Expiry is fosite's to check.
func (s *Store) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return getActiveRequest[authorizationCodeModel](ctx, s, "authorization code", signature, session, fosite.ErrInvalidatedAuthorizeCode)
}

// InvalidateAuthorizeCodeSession marks the code used; the row stays until it expires so a
// second use is recognised. The update is conditional on the code being active, so of two
// concurrent exchanges exactly one succeeds: the other gets
// fosite.ErrInvalidatedAuthorizeCode. An unknown code returns fosite.ErrNotFound.
func (s *Store) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	return deactivate[authorizationCodeModel](s.conn(ctx), "invalidate authorization code", signature, fosite.ErrInvalidatedAuthorizeCode)
}
