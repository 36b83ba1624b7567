package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"gorm.io/gorm"
)

// CreateSession inserts s, setting a zero sess.CreatedAt to now. It returns
// publicauth.ErrUserNotFound when sess.UserID is no user and ErrConflict when a session with
// sess.IDHash exists. It implements publicauth.SessionStore.
func (s *Store) CreateSession(ctx context.Context, sess *publicauth.Session) error {
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = s.nowUTC()
	}
	m := sessionModel{
		IDHash:    sess.IDHash,
		UserID:    sess.UserID,
		Kind:      sess.Kind,
		Method:    sess.Method,
		AuthTime:  utc(sess.AuthTime),
		CreatedAt: utc(sess.CreatedAt),
		ExpiresAt: utc(sess.ExpiresAt),
	}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
	if err != nil {
		switch {
		case isForeignKey(err):
			return publicauth.ErrUserNotFound
		case isDuplicate(err):
			return ErrConflict
		}
		return fmt.Errorf("storage: create session: %w", err)
	}
	return nil
}

// SessionByIDHash returns the session with that id hash whose ExpiresAt is after now, or
// publicauth.ErrSessionNotFound for a missing, expired or deleted session.
func (s *Store) SessionByIDHash(ctx context.Context, idHash string, now time.Time) (*publicauth.Session, error) {
	var m sessionModel
	if err := s.conn(ctx).Take(&m, "id_hash = ? AND expires_at > ?", idHash, utc(now)).Error; err != nil {
		if isNotFound(err) {
			return nil, publicauth.ErrSessionNotFound
		}
		return nil, fmt.Errorf("storage: get session: %w", err)
	}
	return &publicauth.Session{
		IDHash:    m.IDHash,
		UserID:    m.UserID,
		Kind:      m.Kind,
		Method:    m.Method,
		AuthTime:  timeUTC(m.AuthTime),
		CreatedAt: timeUTC(m.CreatedAt),
		ExpiresAt: timeUTC(m.ExpiresAt),
	}, nil
}

// DeleteSession removes the session; deleting a missing session is not an error.
func (s *Store) DeleteSession(ctx context.Context, idHash string) error {
	if err := s.conn(ctx).Where("id_hash = ?", idHash).Delete(&sessionModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete session: %w", err)
	}
	return nil
}

// DeleteUserSessions removes every session of the user.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) error {
	if err := s.conn(ctx).Where("user_id = ?", userID).Delete(&sessionModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete user sessions: %w", err)
	}
	return nil
}
