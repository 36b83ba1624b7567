package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ory/fosite"
)

// CreatePKCERequestSession stores the PKCE parameters of the request behind the code whose
// signature is given. It implements pkce.PKCERequestStorage.
func (s *Store) CreatePKCERequestSession(ctx context.Context, signature string, request fosite.Requester) error {
	cols, err := newRequestColumns(signature, request, fosite.AuthorizeCode)
	if err != nil {
		return err
	}
	if err := s.conn(ctx).Create(&pkceRequestModel{Request: cols}).Error; err != nil {
		return fmt.Errorf("storage: create pkce request: %w", err)
	}
	return nil
}

// GetPKCERequestSession returns the PKCE request of the code, its session unmarshalled into
// session, or fosite.ErrNotFound.
func (s *Store) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	m, err := takeRequestRow[pkceRequestModel](ctx, s, "pkce request", signature)
	if err != nil {
		return nil, err
	}
	return s.toRequest(ctx, &m.Request, session)
}

// DeletePKCERequestSession deletes the PKCE request of the code; deleting an unknown one is
// not an error.
func (s *Store) DeletePKCERequestSession(ctx context.Context, signature string) error {
	if err := s.conn(ctx).Where("signature = ?", signature).Delete(&pkceRequestModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete pkce request: %w", err)
	}
	return nil
}

// oidcKey is the key of an OpenID Connect session row. fosite passes the authorization code
// itself (not its signature) to the OpenIDConnectRequestStorage methods; the row is keyed by
// the code's SHA-256 so no usable code is ever stored.
func oidcKey(authorizeCode string) string {
	sum := sha256.Sum256([]byte(authorizeCode))
	return hex.EncodeToString(sum[:])
}

// CreateOpenIDConnectSession stores the OpenID Connect request of an authorization code. It
// implements openid.OpenIDConnectRequestStorage.
func (s *Store) CreateOpenIDConnectSession(ctx context.Context, authorizeCode string, request fosite.Requester) error {
	cols, err := newRequestColumns(oidcKey(authorizeCode), request, fosite.AuthorizeCode)
	if err != nil {
		return err
	}
	if err := s.conn(ctx).Create(&oidcSessionModel{Request: cols}).Error; err != nil {
		return fmt.Errorf("storage: create openid connect session: %w", err)
	}
	return nil
}

// GetOpenIDConnectSession returns the OpenID Connect request of the code, its session
// unmarshalled into requester's session, or fosite.ErrNotFound (which is
// openid.ErrNoSessionFound).
func (s *Store) GetOpenIDConnectSession(ctx context.Context, authorizeCode string, requester fosite.Requester) (fosite.Requester, error) {
	if requester == nil {
		return nil, errors.New("storage: get openid connect session: nil requester")
	}
	m, err := takeRequestRow[oidcSessionModel](ctx, s, "openid connect session", oidcKey(authorizeCode))
	if err != nil {
		return nil, err
	}
	return s.toRequest(ctx, &m.Request, requester.GetSession())
}

// DeleteOpenIDConnectSession deletes the OpenID Connect request of the code; deleting an
// unknown one is not an error.
func (s *Store) DeleteOpenIDConnectSession(ctx context.Context, authorizeCode string) error {
	if err := s.conn(ctx).Where("signature = ?", oidcKey(authorizeCode)).Delete(&oidcSessionModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete openid connect session: %w", err)
	}
	return nil
}
