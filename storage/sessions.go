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
	return userRowError("create session", err)
}

// SessionByIDHash returns the session with that id hash whose ExpiresAt is after now and its
// user, or publicauth.ErrSessionNotFound for a missing, expired or deleted session.
func (s *Store) SessionByIDHash(ctx context.Context, idHash string, now time.Time) (*publicauth.Session, *publicauth.User, error) {
	// One join: a session's user always exists (its rows cascade with the user's).
	var row struct {
		Session sessionModel `gorm:"embedded"`
		User    userModel    `gorm:"embedded;embeddedPrefix:u_"`
	}
	err := s.conn(ctx).Table(s.names.table("sessions")).
		Select(s.sql(`{sessions}.id_hash, {sessions}.user_id, {sessions}.kind, {sessions}.method, {sessions}.auth_time,
			{sessions}.created_at, {sessions}.expires_at, {users}.id AS u_id, {users}.email AS u_email,
			{users}.email_lower AS u_email_lower, {users}.email_verified AS u_email_verified,
			{users}.name AS u_name, {users}.password_hash AS u_password_hash, {users}.role AS u_role,
			{users}.status AS u_status, {users}.require_pin AS u_require_pin,
			{users}.social_providers AS u_social_providers, {users}.created_at AS u_created_at, {users}.updated_at AS u_updated_at`)).
		Joins(s.sql("JOIN {users} ON {users}.id = {sessions}.user_id")).
		Where(s.sql("{sessions}.id_hash = ? AND {sessions}.expires_at > ?"), idHash, utc(now)).
		Take(&row).Error
	if err != nil {
		if isNotFound(err) {
			return nil, nil, publicauth.ErrSessionNotFound
		}
		return nil, nil, fmt.Errorf("storage: get session: %w", err)
	}
	m := row.Session
	return &publicauth.Session{
		IDHash:    m.IDHash,
		UserID:    m.UserID,
		Kind:      m.Kind,
		Method:    m.Method,
		AuthTime:  timeUTC(m.AuthTime),
		CreatedAt: timeUTC(m.CreatedAt),
		ExpiresAt: timeUTC(m.ExpiresAt),
	}, row.User.toUser(), nil
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
