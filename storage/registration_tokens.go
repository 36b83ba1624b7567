package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// ClientRegistration is what dynamic client registration (RFC 7591, RFC 7592) keeps about
// a client (migration 21).
type ClientRegistration struct {
	// RegistrationTokenHash is the hex SHA-256 of the client's registration access token
	// (RFC 7592 §3); empty for a client an admin registered, which has none.
	RegistrationTokenHash string
	// LogoURI, PolicyURI and TOSURI are the client's RFC 7591 §2 metadata logo_uri,
	// policy_uri and tos_uri; empty for none.
	LogoURI, PolicyURI, TOSURI string
}

// DynamicallyRegistered reports whether the client registered itself (RFC 7591), as
// opposed to being created by the operator (CLI, Go API): only a self-registered client
// holds a registration access token. Gatehouse trusts such a client's URLs less: its
// redirect and post-logout URIs are not followed before the user has signed in or
// confirmed (RFC 9700 §4.11.2).
func (r ClientRegistration) DynamicallyRegistered() bool { return r.RegistrationTokenHash != "" }

// RegistrationToken is an initial access token (RFC 7591 §3): what an admin issues to let
// one or more clients register themselves.
type RegistrationToken struct {
	// Hash is the hex SHA-256 of the token; the token itself is never stored.
	Hash string
	// ExpiresAt is when the token stops being accepted.
	ExpiresAt time.Time
	// MaxUses is how many registrations the token allows; 0 for any number until it
	// expires.
	MaxUses int
	// Uses is how many registrations it has allowed.
	Uses      int
	CreatedAt time.Time
}

type registrationTokenModel struct {
	TokenHash string `gorm:"primaryKey"`
	ExpiresAt time.Time
	MaxUses   int
	Uses      int
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
}

func (registrationTokenModel) TableName(n schema.Namer) string {
	return n.TableName("registration_tokens")
}

// CreateRegistrationToken stores t (its Uses is written as 0), setting t.CreatedAt to now
// when zero; ErrConflict when a token with t.Hash exists.
func (s *Store) CreateRegistrationToken(ctx context.Context, t *RegistrationToken) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.nowUTC()
	}
	t.Uses = 0
	m := &registrationTokenModel{TokenHash: t.Hash, ExpiresAt: utc(t.ExpiresAt), MaxUses: t.MaxUses, CreatedAt: utc(t.CreatedAt)}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(m).Error })
	if isDuplicate(err) {
		return ErrConflict
	}
	if err != nil {
		return fmt.Errorf("storage: create registration token: %w", err)
	}
	return nil
}

// UseRegistrationToken counts one use of the initial access token whose hash is hash, in
// ctx's transaction if any. It returns ErrNotFound, counting nothing, when there is no such
// token, it has expired, or its MaxUses are used up. The count is one conditional update,
// so of concurrent uses no more than MaxUses succeed: a row lock orders them on Postgres,
// the database lock on SQLite.
func (s *Store) UseRegistrationToken(ctx context.Context, hash string) error {
	res := s.conn(ctx).Model(&registrationTokenModel{}).
		Where("token_hash = ? AND expires_at > ? AND (max_uses = 0 OR uses < max_uses)", hash, s.nowUTC()).
		Update("uses", gorm.Expr("uses + 1"))
	if res.Error != nil {
		return fmt.Errorf("storage: use registration token: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// SetClientRegistrationToken replaces the registration access token hash of the client with
// that id (and its UpdatedAt); ErrNotFound when there is no such client.
func (s *Store) SetClientRegistrationToken(ctx context.Context, id, hash string) error {
	res := s.conn(ctx).Model(&clientModel{}).Where("id = ?", id).
		Updates(map[string]any{"registration_token_hash": hash, "updated_at": s.nowUTC()})
	if res.Error != nil {
		return fmt.Errorf("storage: set client registration token: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return s.afterClientWrite(ctx, id)
}
