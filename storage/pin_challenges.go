package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"gorm.io/gorm"
)

func (m *pinChallengeModel) toChallenge() *publicauth.PINChallenge {
	return &publicauth.PINChallenge{
		ID:          m.ID,
		UserID:      m.UserID,
		PINHash:     m.PINHash,
		Kind:        m.Kind,
		Method:      m.Method,
		Destination: publicauth.Destination{RedirectURI: m.RedirectURI, Resume: m.Resume, PausedRequest: m.PausedRequest},
		Attempts:    m.Attempts,
		CreatedAt:   timeUTC(m.CreatedAt),
		ExpiresAt:   timeUTC(m.ExpiresAt),
		UsedAt:      timePtrUTC(m.UsedAt),
	}
}

// CreatePINChallenge inserts c, setting a zero c.CreatedAt to now. It returns
// publicauth.ErrUserNotFound when c.UserID is no user and ErrConflict when a challenge with
// c.ID exists. It implements publicauth.PINStore.
func (s *Store) CreatePINChallenge(ctx context.Context, c *publicauth.PINChallenge) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.nowUTC()
	}
	m := pinChallengeModel{
		ID:            c.ID,
		UserID:        c.UserID,
		PINHash:       c.PINHash,
		Kind:          c.Kind,
		Method:        c.Method,
		RedirectURI:   c.Destination.RedirectURI,
		Resume:        c.Destination.Resume,
		PausedRequest: c.Destination.PausedRequest,
		Attempts:      c.Attempts,
		CreatedAt:     utc(c.CreatedAt),
		ExpiresAt:     utc(c.ExpiresAt),
		UsedAt:        utcPtr(c.UsedAt),
	}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
	return userRowError("create PIN challenge", err)
}

// ReservePINAttempt adds one to the challenge's attempts in one conditional update that
// succeeds only while the challenge is unused, unexpired at now and has fewer than
// maxAttempts attempts, and returns the challenge as updated. Concurrent callers can
// therefore never make more than maxAttempts attempts between them. Without an attempt left
// it returns publicauth.ErrChallengeInvalid.
func (s *Store) ReservePINAttempt(ctx context.Context, id string, maxAttempts int, now time.Time) (*publicauth.PINChallenge, error) {
	now = utc(now)
	m, err := claimRow[pinChallengeModel](ctx, s, "reserve PIN attempt", publicauth.ErrChallengeInvalid, "id", id,
		func(q *gorm.DB) *gorm.DB {
			return q.Where("id = ? AND used_at IS NULL AND expires_at > ? AND attempts < ?", id, now, maxAttempts).
				Update("attempts", gorm.Expr("attempts + 1"))
		})
	if err != nil {
		return nil, err
	}
	return m.toChallenge(), nil
}

// ConsumePINChallenge marks the challenge used at now in one conditional update that
// succeeds only while it is unused and unexpired, so of concurrent consumers exactly one
// wins; the others, and an unknown challenge, get publicauth.ErrChallengeInvalid.
func (s *Store) ConsumePINChallenge(ctx context.Context, id string, now time.Time) error {
	now = utc(now)
	res := s.conn(ctx).Model(&pinChallengeModel{}).
		Where("id = ? AND used_at IS NULL AND expires_at > ?", id, now).
		Update("used_at", now)
	if res.Error != nil {
		return fmt.Errorf("storage: consume PIN challenge: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return publicauth.ErrChallengeInvalid
	}
	return nil
}
