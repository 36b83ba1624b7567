package storage

import (
	"context"
	"fmt"

	"github.com/ory/fosite"
)

// CreateRefreshTokenSession stores the request behind a refresh token, keyed by the token's
// signature, as active, remembering the signature of the access token issued with it. It
// implements oauth2.RefreshTokenStorage.
func (s *Store) CreateRefreshTokenSession(ctx context.Context, signature string, accessSignature string, request fosite.Requester) error {
	cols, err := newRequestColumns(signature, request, fosite.RefreshToken)
	if err != nil {
		return err
	}
	m := refreshTokenModel{Request: cols, AccessSignature: accessSignature, Active: true, SID: browserSessionID(request)}
	if err := s.conn(ctx).Create(&m).Error; err != nil {
		return fmt.Errorf("storage: create refresh token: %w", err)
	}
	return nil
}

// GetRefreshTokenSession returns the request behind the refresh token, its session
// unmarshalled into session. An inactive (rotated or revoked) token returns the request
// together with fosite.ErrInactiveToken, which fosite treats as reuse and answers by
// revoking the whole grant; an unknown token returns fosite.ErrNotFound.
//
// Under a context from WithRequestMemo the row is remembered, so RotateRefreshToken can tell
// a spent token from a missing one without another query.
func (s *Store) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	m, err := takeRequestRow[refreshTokenModel](ctx, s, "refresh token", signature)
	if err != nil {
		return nil, err
	}
	memoFrom(ctx).putRefreshToken(*m)
	r, err := s.toRequest(ctx, &m.Request, session)
	if err != nil {
		return nil, err
	}
	if !m.Active {
		return r, fosite.ErrInactiveToken
	}
	return r, nil
}

// DeleteRefreshTokenSession deletes the refresh token; deleting an unknown token is not an
// error.
func (s *Store) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	if err := s.conn(ctx).Where("signature = ?", signature).Delete(&refreshTokenModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete refresh token: %w", err)
	}
	return nil
}

// RotateRefreshToken retires the refresh token being exchanged: one conditional update
// marks it inactive (kept for reuse detection) only while it is active, so of concurrent
// rotations of one token exactly one succeeds; the others get fosite.ErrInactiveToken. An
// unknown token returns fosite.ErrNotFound. The access tokens issued before are revoked by
// the rule the provider records as it stores the new one (access tokens have no rows).
// fosite calls it inside the transaction that also stores the new tokens; outside one, it
// opens its own. The token is found by its signature; requestID is not needed for that.
func (s *Store) RotateRefreshToken(ctx context.Context, requestID string, signature string) error {
	if s.txFrom(ctx) == nil {
		return s.InTx(ctx, func(ctx context.Context) error { return s.RotateRefreshToken(ctx, requestID, signature) })
	}
	_, known := memoFrom(ctx).refreshToken(signature)
	return deactivate[refreshTokenModel](ctx, s, "rotate refresh token", signature, fosite.ErrInactiveToken, known,
		map[string]any{"active": false})
}

// RevokeRefreshToken marks every refresh token issued for the request id inactive: the
// whole family of a grant, which rotation keeps under one request id (RFC 7009 section 2.1,
// RFC 9700 section 4.14.2). A request id without tokens is not an error.
func (s *Store) RevokeRefreshToken(ctx context.Context, requestID string) error {
	err := s.conn(ctx).Model(&refreshTokenModel{}).
		Where("request_id = ?", requestID).
		Update("active", false).Error
	if err != nil {
		return fmt.Errorf("storage: revoke refresh tokens: %w", err)
	}
	return nil
}
