package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/ory/fosite"
	"gorm.io/gorm/clause"
)

// SetRefreshReuseGrace sets the refresh-token reuse grace window: a refresh token rotated
// less than d ago may be used once more, which rotates it again (its first successor is
// deactivated) instead of counting as reuse. That is the retry of a client whose answer to
// the rotation was lost on the way (Hydra's rotation_grace_period, Dex's reuseInterval). A
// second use, a use after the window, and any use of a revoked token still revoke the
// whole grant. Zero, the default, turns the window off: every reuse revokes the grant, as
// RFC 9700 §4.14.2 prefers.
func (s *Store) SetRefreshReuseGrace(d time.Duration) { s.refreshGrace.Store(int64(max(d, 0))) }

type reuseGraceKey struct{}

// WithReuseGrace marks ctx as a refresh_token grant's: only there does a rotated refresh
// token's reuse grace (SetRefreshReuseGrace) apply. Introspection and revocation see a
// rotated token as the inactive token it is.
func WithReuseGrace(ctx context.Context) context.Context {
	return context.WithValue(ctx, reuseGraceKey{}, true)
}

// inReuseGrace reports whether, in a refresh grant (WithReuseGrace), the inactive refresh
// token m may be used once more: it was rotated (not revoked) less than the grace window
// ago, and has not had its one use.
func (s *Store) inReuseGrace(ctx context.Context, m *refreshTokenModel) bool {
	grace := time.Duration(s.refreshGrace.Load())
	if grace <= 0 || ctx.Value(reuseGraceKey{}) == nil {
		return false
	}
	return !m.Active && m.RotatedAt != nil && !m.GraceUsed && s.now().Before(m.RotatedAt.Add(grace))
}

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
// revoking the whole grant, unless it is in its reuse grace (SetRefreshReuseGrace); an
// unknown token returns fosite.ErrNotFound.
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
	if !m.Active && !s.inReuseGrace(ctx, m) {
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
	read, known := memoFrom(ctx).refreshToken(signature)
	err := deactivate[refreshTokenModel](ctx, s, "rotate refresh token", signature, fosite.ErrInactiveToken, known,
		map[string]any{"active": false, "rotated_at": s.nowUTC()})
	if err != fosite.ErrInactiveToken || s.refreshGrace.Load() == 0 {
		return err
	}
	if !known {
		m, terr := takeRequestRow[refreshTokenModel](ctx, s, "refresh token", signature)
		if terr != nil {
			return err
		}
		read = *m
	}
	if s.inReuseGrace(ctx, &read) {
		return s.rotateInGrace(ctx, &read)
	}
	return err
}

// rotateInGrace spends the reuse grace of the rotated refresh token m (read by this
// request): of concurrent uses exactly one wins, the others get fosite.ErrInactiveToken
// (reuse). The token's family keeps one live token: the successor its first rotation
// issued, whose answer the client never got, is deactivated, without grace of its own, and
// the provider's rule on the grant revokes the access token issued with it.
//
// A rotation of that successor may run at the same time. On Postgres, at READ COMMITTED,
// the UPDATE deactivating the family would wait for the successor's row lock and then skip
// it, already inactive, while the token that rotation inserted is not in the statement's
// snapshot: it would stay live beside this grant's new token, two chains in one family. So
// the family's live tokens are locked first (SELECT … FOR UPDATE), which waits for any
// rotation holding one of them to commit; the UPDATE, a statement of its own, then sees
// the token that rotation inserted and deactivates it too. A rotation that comes after
// waits for this transaction instead, and finds its token deactivated (reuse). SQLite's
// transactions already hold the database's write lock (BEGIN IMMEDIATE).
func (s *Store) rotateInGrace(ctx context.Context, m *refreshTokenModel) error {
	db := s.conn(ctx)
	if s.dialect == dialectPostgres {
		var locked []string
		err := db.Model(&refreshTokenModel{}).Clauses(clause.Locking{Strength: "UPDATE"}).
			Where("request_id = ? AND active = ?", m.Request.RequestID, true).
			Pluck("signature", &locked).Error
		if err != nil {
			return fmt.Errorf("storage: lock refresh token family: %w", err)
		}
	}
	res := db.Model(&refreshTokenModel{}).
		Where("signature = ? AND active = ? AND grace_used = ? AND rotated_at IS NOT NULL", m.Request.Signature, false, false).
		Update("grace_used", true)
	if res.Error != nil {
		return fmt.Errorf("storage: rotate refresh token in grace: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fosite.ErrInactiveToken
	}
	err := db.Model(&refreshTokenModel{}).
		Where("request_id = ? AND active = ?", m.Request.RequestID, true).
		Updates(map[string]any{"active": false, "rotated_at": nil}).Error
	if err != nil {
		return fmt.Errorf("storage: rotate refresh token in grace: %w", err)
	}
	return nil
}

// RevokeRefreshToken marks every refresh token issued for the request id inactive: the
// whole family of a grant, which rotation keeps under one request id (RFC 7009 section 2.1,
// RFC 9700 section 4.14.2). A request id without tokens is not an error.
func (s *Store) RevokeRefreshToken(ctx context.Context, requestID string) error {
	// Rotated tokens lose their reuse grace too.
	err := s.conn(ctx).Model(&refreshTokenModel{}).
		Where("request_id = ?", requestID).
		Updates(map[string]any{"active": false, "rotated_at": nil}).Error
	if err != nil {
		return fmt.Errorf("storage: revoke refresh tokens: %w", err)
	}
	return nil
}
