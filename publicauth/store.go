package publicauth

import (
	"context"
	"time"
)

// UserStore persists user accounts.
type UserStore interface {
	// CreateUser inserts u. It returns ErrEmailTaken when another user has the same email
	// compared case-insensitively.
	CreateUser(ctx context.Context, u *User) error
	// UserByID returns the user with that id, or ErrUserNotFound.
	UserByID(ctx context.Context, id string) (*User, error)
	// UserByEmail returns the user whose email equals email case-insensitively, or
	// ErrUserNotFound.
	UserByEmail(ctx context.Context, email string) (*User, error)
	// UpdateUser overwrites the stored user with u (matched by u.ID) and sets UpdatedAt.
	// It returns ErrUserNotFound when there is no such user and ErrEmailTaken when the new
	// email collides with another user's.
	UpdateUser(ctx context.Context, u *User) error
}

// SessionStore persists login sessions.
type SessionStore interface {
	// CreateSession inserts s.
	CreateSession(ctx context.Context, s *Session) error
	// SessionByIDHash returns the session with that id hash whose ExpiresAt is after now,
	// together with its user, in one round trip (it runs on every request that carries a
	// session cookie); or ErrSessionNotFound for a missing, expired or deleted session.
	SessionByIDHash(ctx context.Context, idHash string, now time.Time) (*Session, *User, error)
	// DeleteSession removes the session; deleting a missing session is not an error.
	DeleteSession(ctx context.Context, idHash string) error
	// DeleteUserSessions removes every session of the user.
	DeleteUserSessions(ctx context.Context, userID string) error
}
