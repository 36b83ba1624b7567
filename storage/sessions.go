package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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
	methods, err := encodeMethods(sess.Methods)
	if err != nil {
		return fmt.Errorf("storage: create session: %w", err)
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
		Methods:   methods,
	}
	err = s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
	return userRowError("create session", err)
}

// sessionByIDHashSQL reads a session and its user. A left join: an account kept outside
// Gatehouse has no row in users. Every user column is coalesced, so such a row scans as an
// empty user id.
const sessionByIDHashSQL = `SELECT {sessions}.id_hash, {sessions}.sid, {sessions}.user_id, {sessions}.kind,
	{sessions}.method, {sessions}.auth_time, {sessions}.created_at, {sessions}.expires_at, {sessions}.methods,
	COALESCE({users}.id, '') AS u_id,
	COALESCE({users}.email, '') AS u_email, COALESCE({users}.email_lower, '') AS u_email_lower,
	COALESCE({users}.email_verified, FALSE) AS u_email_verified, COALESCE({users}.name, '') AS u_name,
	COALESCE({users}.password_hash, '') AS u_password_hash, COALESCE({users}.role, '') AS u_role,
	COALESCE({users}.status, '') AS u_status, COALESCE({users}.require_pin, FALSE) AS u_require_pin,
	COALESCE({users}.social_providers, '[]') AS u_social_providers, COALESCE({users}.profile, '') AS u_profile,
	{users}.created_at AS user_created_at, {users}.updated_at AS user_updated_at
	FROM {sessions} LEFT JOIN {users} ON {users}.id = {sessions}.user_id
	WHERE {sessions}.id_hash = ? AND {sessions}.expires_at > ?`

// SessionByIDHash returns the session with that id hash whose ExpiresAt is after now and
// the row of users with its account id, or a nil user when users has none (an account kept
// outside Gatehouse); publicauth.ErrSessionNotFound for a missing, expired or deleted
// session. It is one query, a left join.
func (s *Store) SessionByIDHash(ctx context.Context, idHash string, now time.Time) (*publicauth.Session, *publicauth.User, error) {
	var row struct {
		Session sessionModel `gorm:"embedded"`
		User    userModel    `gorm:"embedded;embeddedPrefix:u_"`
		// The user's times, NULL without a users row: SQLite keeps the column type (and so
		// the time parsing) only for a bare column, not for a COALESCE of it.
		UserCreatedAt *time.Time `gorm:"column:user_created_at"`
		UserUpdatedAt *time.Time `gorm:"column:user_updated_at"`
	}
	// Raw, not gorm's query builder, which looked every selected name up among the row's
	// fields on each call (6% of the server's CPU during authorize, which reads a session
	// each time). id_hash is the primary key: one row or none.
	err := scan(s.conn(ctx).Raw(s.sql(sessionByIDHashSQL), idHash, utc(now)), &row)
	if err != nil {
		return nil, nil, fmt.Errorf("storage: get session: %w", err)
	}
	if row.Session.IDHash == "" {
		return nil, nil, publicauth.ErrSessionNotFound
	}
	var u *publicauth.User
	if row.User.ID != "" && row.UserCreatedAt != nil && row.UserUpdatedAt != nil {
		row.User.CreatedAt, row.User.UpdatedAt = *row.UserCreatedAt, *row.UserUpdatedAt
		u = row.User.toUser()
	}
	sess, err := row.Session.toSession()
	if err != nil {
		return nil, nil, err
	}
	return sess, u, nil
}

func (m *sessionModel) toSession() (*publicauth.Session, error) {
	sess := &publicauth.Session{
		IDHash:    m.IDHash,
		SID:       m.SID,
		UserID:    m.UserID,
		Kind:      m.Kind,
		Method:    m.Method,
		AuthTime:  timeUTC(m.AuthTime),
		CreatedAt: timeUTC(m.CreatedAt),
		ExpiresAt: timeUTC(m.ExpiresAt),
	}
	if err := json.Unmarshal([]byte(m.Methods), &sess.Methods); err != nil {
		return nil, fmt.Errorf("storage: session methods: %w", err)
	}
	if len(sess.Methods) == 0 {
		sess.Methods = nil // stored before migration 30, or without methods
	}
	for i := range sess.Methods {
		sess.Methods[i].At = sess.Methods[i].At.UTC()
	}
	return sess, nil
}

// encodeMethods is the JSON text a session's methods are stored as, their times in UTC at
// stored precision.
func encodeMethods(methods []acr.Method) (string, error) {
	out := make([]acr.Method, len(methods))
	for i, m := range methods {
		m.At = utc(m.At)
		out[i] = m
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// AddSessionMethod records that the session completed m: in one transaction it reads the
// session's methods (on Postgres with the row lock; SQLite's transaction holds the write
// lock from its start), adds m with acr.Append and writes them back, so concurrent
// additions to one session queue and all land. It returns publicauth.ErrSessionNotFound
// for a session missing or expired at now. It implements publicauth.SessionStore.
func (s *Store) AddSessionMethod(ctx context.Context, idHash string, m acr.Method, now time.Time) (*publicauth.Session, error) {
	now = utc(now)
	var row sessionModel
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		q := tx
		if s.dialect == dialectPostgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := q.Take(&row, "id_hash = ? AND expires_at > ?", idHash, now).Error; err != nil {
			return err
		}
		sess, err := row.toSession()
		if err != nil {
			return err
		}
		if row.Methods, err = encodeMethods(acr.Append(sess.CompletedMethods(), m)); err != nil {
			return err
		}
		return tx.Model(&sessionModel{}).Where("id_hash = ?", idHash).Update("methods", row.Methods).Error
	})
	if isNotFound(err) {
		return nil, publicauth.ErrSessionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: add session method: %w", err)
	}
	return row.toSession()
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

// EndSessionBySID ends the public session whose public id (Session.SID, an ID token's
// sid) is sid, if it is the user's and has not expired at now, as DeleteSession ends one
// (back-channel logout messages, its tokens revoked, all in one transaction), and reports
// whether it ended one. RP-initiated logout calls it for an id_token_hint that arrives
// without the browser's cookie (a relying party's back-end logout): no other caller may
// name a session by its public id, which its ID tokens carry.
func (s *Store) EndSessionBySID(ctx context.Context, sid, userID string, now time.Time) (bool, error) {
	if sid == "" {
		return false, nil
	}
	var n int64
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		var err error
		n, err = s.endSessions(tx, 0, "sid = ? AND user_id = ? AND kind = ? AND expires_at > ?",
			sid, userID, publicauth.SessionPublic, utc(now))
		return err
	})
	return n > 0, err
}

// DeleteUserSessions ends every session of the user, as DeleteSession ends one.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		_, err := s.endSessions(tx, 0, "user_id = ?", userID)
		return err
	})
}
