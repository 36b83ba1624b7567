package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"gorm.io/gorm"
)

func (m *oneTimeTokenModel) toToken() *publicauth.OneTimeToken {
	return &publicauth.OneTimeToken{
		IDHash:        m.IDHash,
		Purpose:       m.Purpose,
		UserID:        m.UserID,
		Email:         m.Email,
		RedirectURI:   m.RedirectURI,
		Resume:        m.Resume,
		PausedRequest: m.PausedRequest,
		Payload:       m.Payload,
		CreatedAt:     timeUTC(m.CreatedAt),
		ExpiresAt:     timeUTC(m.ExpiresAt),
		UsedAt:        timePtrUTC(m.UsedAt),
	}
}

// CreateOneTimeToken inserts t, setting a zero t.CreatedAt to now. With supersede true it
// first marks every unused token of t's user and purpose used, in the same transaction. It
// returns publicauth.ErrUserNotFound when t.UserID is no user and ErrConflict when a token
// with t.IDHash exists. It implements publicauth.TokenStore.
func (s *Store) CreateOneTimeToken(ctx context.Context, t *publicauth.OneTimeToken, supersede bool) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.nowUTC()
	}
	m := oneTimeTokenModel{
		IDHash:        t.IDHash,
		Purpose:       t.Purpose,
		UserID:        t.UserID,
		Email:         t.Email,
		RedirectURI:   t.RedirectURI,
		Resume:        t.Resume,
		PausedRequest: t.PausedRequest,
		Payload:       t.Payload,
		CreatedAt:     utc(t.CreatedAt),
		ExpiresAt:     utc(t.ExpiresAt),
		UsedAt:        utcPtr(t.UsedAt),
	}
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		if supersede {
			err := tx.Model(&oneTimeTokenModel{}).
				Where("user_id = ? AND purpose = ? AND used_at IS NULL", t.UserID, t.Purpose).
				Update("used_at", utc(t.CreatedAt)).Error
			if err != nil {
				return err
			}
		}
		return tx.Create(&m).Error
	})
	return userRowError("create one-time token", err)
}

// ConsumeOneTimeToken marks the token with that hash and purpose used at now and returns it.
// The update is conditional on the token being unused, of that purpose and unexpired at
// now, so of concurrent consumers exactly one succeeds; the others, and every unknown,
// used, expired or other-purpose token, get publicauth.ErrInvalidToken.
func (s *Store) ConsumeOneTimeToken(ctx context.Context, idHash, purpose string, now time.Time) (*publicauth.OneTimeToken, error) {
	now = utc(now)
	m, err := claimRow[oneTimeTokenModel](ctx, s, "consume one-time token", publicauth.ErrInvalidToken, "id_hash", idHash,
		func(q *gorm.DB) *gorm.DB {
			return q.Where("id_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?", idHash, purpose, now).
				Update("used_at", now)
		})
	if err != nil {
		return nil, err
	}
	return m.toToken(), nil
}

// UsableOneTimeToken returns the token with that hash and purpose while it is unused and
// unexpired at now, without consuming it; any other token yields publicauth.ErrInvalidToken.
// It implements publicauth.TokenStore.
func (s *Store) UsableOneTimeToken(ctx context.Context, idHash, purpose string, now time.Time) (*publicauth.OneTimeToken, error) {
	var m oneTimeTokenModel
	err := s.conn(ctx).Take(&m, "id_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?", idHash, purpose, utc(now)).Error
	if isNotFound(err) {
		return nil, publicauth.ErrInvalidToken
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get one-time token: %w", err)
	}
	return m.toToken(), nil
}
