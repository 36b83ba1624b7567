package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// CreateAuthRequest inserts r, setting a zero r.RequestedAt to now. It returns ErrConflict
// when a request with r.IDHash exists and ErrNotFound when r.ClientID is no client.
func (s *Store) CreateAuthRequest(ctx context.Context, r *AuthRequest) error {
	if r.RequestedAt.IsZero() {
		r.RequestedAt = s.nowUTC()
	}
	m := authRequestModel{
		IDHash:      r.IDHash,
		ClientID:    r.ClientID,
		Form:        r.Form,
		RequestedAt: utc(r.RequestedAt),
		ExpiresAt:   utc(r.ExpiresAt),
		UserID:      r.UserID,
		AuthTime:    utcPtr(r.AuthTime),
	}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
	if err != nil {
		switch {
		case isDuplicate(err):
			return ErrConflict
		case isForeignKey(err):
			return ErrNotFound
		}
		return fmt.Errorf("storage: create auth request: %w", err)
	}
	return nil
}

// AuthRequestByIDHash returns the pending request with that id hash whose ExpiresAt is
// after now, or ErrNotFound when it is missing or expired.
func (s *Store) AuthRequestByIDHash(ctx context.Context, idHash string, now time.Time) (*AuthRequest, error) {
	var m authRequestModel
	err := s.conn(ctx).Take(&m, "id_hash = ? AND expires_at > ?", idHash, utc(now)).Error
	if err != nil {
		if isNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("storage: get auth request: %w", err)
	}
	return &AuthRequest{
		IDHash:      m.IDHash,
		ClientID:    m.ClientID,
		Form:        m.Form,
		RequestedAt: timeUTC(m.RequestedAt),
		ExpiresAt:   timeUTC(m.ExpiresAt),
		UserID:      m.UserID,
		AuthTime:    timePtrUTC(m.AuthTime),
	}, nil
}

// CompleteAuthRequestLogin records that userID logged in at authTime for this very request
// and re-keys it under newIDHash (the hash of a new token; idHash to keep the key). It
// returns ErrNotFound when there is no request with that id hash (expired or not: the
// caller has just read it with AuthRequestByIDHash), so of two concurrent logins into one
// request only one re-keys it.
func (s *Store) CompleteAuthRequestLogin(ctx context.Context, idHash, newIDHash, userID string, authTime time.Time) error {
	res := s.conn(ctx).Model(&authRequestModel{}).
		Where("id_hash = ?", idHash).
		Updates(map[string]any{"id_hash": newIDHash, "user_id": userID, "auth_time": utc(authTime)})
	if res.Error != nil {
		return fmt.Errorf("storage: complete auth request login: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteAuthRequest deletes the request; deleting a missing request is not an error.
func (s *Store) DeleteAuthRequest(ctx context.Context, idHash string) error {
	if err := s.conn(ctx).Where("id_hash = ?", idHash).Delete(&authRequestModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete auth request: %w", err)
	}
	return nil
}
