package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"gorm.io/gorm"
)

// CreateSession inserts s, setting a zero sess.CreatedAt to now and an empty sess.SID to a
// random 128-bit id. sess.UserID is an account
// id, which need not be a row of users (provider.WithAccounts). It returns ErrConflict when
// a session with sess.IDHash exists. It implements publicauth.SessionStore.
func (s *Store) CreateSession(ctx context.Context, sess *publicauth.Session) error {
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = s.nowUTC()
	}
	if sess.SID == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("storage: create session: %w", err)
		}
		sess.SID = hex.EncodeToString(b)
	}
	m := sessionModel{
		IDHash:    sess.IDHash,
		SID:       sess.SID,
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

// SessionByIDHash returns the session with that id hash whose ExpiresAt is after now and
// the row of users with its account id, or a nil user when users has none (an account kept
// outside Gatehouse); publicauth.ErrSessionNotFound for a missing, expired or deleted
// session. It is one query, a left join. Outside a transaction, concurrent reads share that
// query (coalescer), each answered by a statement that started after it was called, so a
// session ended (logout, password reset) on any replica is never read again: every hosted
// page, authorization and session check reads the session.
func (s *Store) SessionByIDHash(ctx context.Context, idHash string, now time.Time) (*publicauth.Session, *publicauth.User, error) {
	var found map[string]*sessionRow
	var err error
	if s.txFrom(ctx) != nil {
		found, err = s.sessionsByIDHash(ctx, []string{idHash})
	} else {
		found, err = s.sessions.lookup(ctx, idHash)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("storage: get session: %w", err)
	}
	row, ok := found[idHash]
	// Expiry is decided here, by the caller's clock, not in the shared query: the lookups of
	// one batch may each pass their own now.
	if !ok || !row.Session.ExpiresAt.After(utc(now)) {
		return nil, nil, publicauth.ErrSessionNotFound
	}
	m := row.Session
	var u *publicauth.User
	if row.User.ID != "" && row.UserCreatedAt != nil && row.UserUpdatedAt != nil {
		user := row.User
		user.CreatedAt, user.UpdatedAt = *row.UserCreatedAt, *row.UserUpdatedAt
		u = user.toUser()
	}
	return &publicauth.Session{
		IDHash:    m.IDHash,
		SID:       m.SID,
		UserID:    m.UserID,
		Kind:      m.Kind,
		Method:    m.Method,
		AuthTime:  timeUTC(m.AuthTime),
		CreatedAt: timeUTC(m.CreatedAt),
		ExpiresAt: timeUTC(m.ExpiresAt),
	}, u, nil
}

// sessionRow is a session read with its user's row (SessionByIDHash).
type sessionRow struct {
	Session sessionModel `gorm:"embedded"`
	User    userModel    `gorm:"embedded;embeddedPrefix:u_"`
	// The user's times, NULL without a users row: SQLite keeps the column type (and so
	// the time parsing) only for a bare column, not for a COALESCE of it.
	UserCreatedAt *time.Time `gorm:"column:user_created_at"`
	UserUpdatedAt *time.Time `gorm:"column:user_updated_at"`
}

// sessionsByIDHash reads the sessions with those id hashes, expired ones included, each with
// its user's row (a left join): those that exist.
func (s *Store) sessionsByIDHash(ctx context.Context, idHashes []string) (map[string]*sessionRow, error) {
	var rows []sessionRow
	err := s.conn(ctx).Table(s.names.table("sessions")).
		Select(s.sql(`{sessions}.id_hash, {sessions}.sid, {sessions}.user_id, {sessions}.kind, {sessions}.method, {sessions}.auth_time,
			{sessions}.created_at, {sessions}.expires_at, COALESCE({users}.id, '') AS u_id,
			COALESCE({users}.email, '') AS u_email, COALESCE({users}.email_lower, '') AS u_email_lower,
			COALESCE({users}.email_verified, FALSE) AS u_email_verified, COALESCE({users}.name, '') AS u_name,
			COALESCE({users}.password_hash, '') AS u_password_hash, COALESCE({users}.role, '') AS u_role,
			COALESCE({users}.status, '') AS u_status, COALESCE({users}.require_pin, FALSE) AS u_require_pin,
			COALESCE({users}.social_providers, '[]') AS u_social_providers, COALESCE({users}.profile, '') AS u_profile,
			{users}.created_at AS user_created_at, {users}.updated_at AS user_updated_at`)).
		// A left join: an account kept outside Gatehouse has no row in users. Every user
		// column is coalesced, so such a row scans as an empty user id.
		Joins(s.sql("LEFT JOIN {users} ON {users}.id = {sessions}.user_id")).
		Where(s.inKeyList(s.sql("{sessions}.id_hash")), keyList(idHashes)).
		Find(&rows).Error
	if err != nil {
		return nil, err
	}
	found := make(map[string]*sessionRow, len(rows))
	for i := range rows {
		found[rows[i].Session.IDHash] = &rows[i]
	}
	return found, nil
}

// DeleteSession ends the session: in one transaction (a savepoint inside ctx's) it queues a
// back-channel logout message for every client issued a code in it, revokes the codes,
// refresh tokens and access tokens issued in it, and deletes it (endSessions). Deleting a
// missing session is not an error.
func (s *Store) DeleteSession(ctx context.Context, idHash string) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		_, err := s.endSessions(tx, 0, "id_hash = ?", idHash)
		return err
	})
}

// DeleteUserSessions ends every session of the user, as DeleteSession ends one.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		_, err := s.endSessions(tx, 0, "user_id = ?", userID)
		return err
	})
}
