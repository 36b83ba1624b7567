package storage

import (
	"context"
	"fmt"
	"slices"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"gorm.io/gorm"
)

// userToModel converts u; its email_lower column is the unique index's key,
// publicauth.EmailKey of the email, and an email without a key is an error wrapping
// publicauth.ErrInvalidEmail.
func userToModel(u *publicauth.User) (*userModel, error) {
	key, err := publicauth.EmailKey(u.Email)
	if err != nil {
		return nil, err
	}
	return &userModel{
		ID:              u.ID,
		Email:           u.Email,
		EmailLower:      key,
		EmailVerified:   u.EmailVerified,
		Name:            u.Name,
		PasswordHash:    u.PasswordHash,
		Role:            u.Role,
		Status:          u.Status,
		RequirePIN:      u.RequirePIN,
		SocialProviders: u.SocialProviders,
		Profile:         profileColumn(u.Profile),
		CreatedAt:       utc(u.CreatedAt),
		UpdatedAt:       utc(u.UpdatedAt),
	}, nil
}

// toUser is m as a publicauth.User sharing no memory with m, which UserByID may hand to
// several callers.
func (m *userModel) toUser() *publicauth.User {
	profile := publicauth.Profile(m.Profile)
	if profile.Address != nil {
		a := *profile.Address
		profile.Address = &a
	}
	return &publicauth.User{
		ID:              m.ID,
		Email:           m.Email,
		EmailVerified:   m.EmailVerified,
		Name:            m.Name,
		PasswordHash:    m.PasswordHash,
		Role:            m.Role,
		Status:          m.Status,
		RequirePIN:      m.RequirePIN,
		SocialProviders: slices.Clone([]string(m.SocialProviders)),
		Profile:         profile,
		CreatedAt:       timeUTC(m.CreatedAt),
		UpdatedAt:       timeUTC(m.UpdatedAt),
	}
}

// CreateUser inserts u, setting u.CreatedAt and u.UpdatedAt to now when they are zero. It
// returns publicauth.ErrEmailTaken when another user's email has the same
// publicauth.EmailKey (also when the other user is being inserted concurrently: the unique
// index on the key decides), ErrConflict when a user with u.ID exists, and an error
// wrapping publicauth.ErrInvalidEmail when u's email has no key.
// It implements publicauth.UserStore.
func (s *Store) CreateUser(ctx context.Context, u *publicauth.User) error {
	now := s.nowUTC()
	if u.CreatedAt.IsZero() {
		u.CreatedAt = now
	}
	if u.UpdatedAt.IsZero() {
		u.UpdatedAt = now
	}
	m, err := userToModel(u)
	if err != nil {
		return fmt.Errorf("storage: create user: %w", err)
	}
	err = s.guarded(ctx, func(db *gorm.DB) error { return db.Create(m).Error })
	if err == nil {
		return nil
	}
	if !isDuplicate(err) {
		return fmt.Errorf("storage: create user: %w", err)
	}
	// Either the id or the email collided; ids are random UUIDs, so it is almost always
	// the email. The insert ran in a savepoint, so ctx's transaction is still usable.
	var n int64
	if cerr := s.conn(ctx).Model(&userModel{}).Where("id = ?", u.ID).Count(&n).Error; cerr != nil {
		return fmt.Errorf("storage: create user: tell the colliding key apart: %w", cerr)
	} else if n > 0 {
		return ErrConflict
	}
	return publicauth.ErrEmailTaken
}

// UserByID returns the user with that id, or publicauth.ErrUserNotFound. Outside a
// transaction, concurrent reads share one query (coalescer), each answered by a statement
// that started after it was called; userinfo and introspection read the user on every
// request.
func (s *Store) UserByID(ctx context.Context, id string) (*publicauth.User, error) {
	var found map[string]*userModel
	var err error
	if s.txFrom(ctx) != nil {
		found, err = s.usersByID(ctx, []string{id})
	} else {
		found, err = s.users.lookup(ctx, id)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get user: %w", err)
	}
	m, ok := found[id]
	if !ok {
		return nil, publicauth.ErrUserNotFound
	}
	return m.toUser(), nil
}

// usersByID reads the users with those ids, those that exist.
func (s *Store) usersByID(ctx context.Context, ids []string) (map[string]*userModel, error) {
	var ms []userModel
	if err := s.conn(ctx).Where(s.inKeyList("id"), keyList(ids)).Find(&ms).Error; err != nil {
		return nil, err
	}
	found := make(map[string]*userModel, len(ms))
	for i := range ms {
		found[ms[i].ID] = &ms[i]
	}
	return found, nil
}

// UserByEmail returns the user whose email has the same publicauth.EmailKey as email, or
// publicauth.ErrUserNotFound (also for an email without a key, which no user can have).
func (s *Store) UserByEmail(ctx context.Context, email string) (*publicauth.User, error) {
	key, err := publicauth.EmailKey(email)
	if err != nil {
		return nil, publicauth.ErrUserNotFound
	}
	var m userModel
	if err := s.conn(ctx).Take(&m, "email_lower = ?", key).Error; err != nil {
		if isNotFound(err) {
			return nil, publicauth.ErrUserNotFound
		}
		return nil, fmt.Errorf("storage: get user by email: %w", err)
	}
	return m.toUser(), nil
}

// userRowError maps the error of inserting a row that belongs to an account (a session, a
// one-time token, a PIN challenge): nil stays nil, a duplicate key is ErrConflict. what
// names the operation in any other error. The account is not checked: since v9 it need not
// be a row of users.
func userRowError(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case isDuplicate(err):
		return ErrConflict
	}
	return fmt.Errorf("storage: %s: %w", what, err)
}

// ChangeUser writes only the fields c sets, and updated_at, on the user with that id, and
// returns the user as stored afterwards. It returns publicauth.ErrUserNotFound when there
// is no such user. It implements publicauth.UserStore.
func (s *Store) ChangeUser(ctx context.Context, id string, c publicauth.UserChange) (*publicauth.User, error) {
	cols := map[string]any{"updated_at": s.nowUTC()}
	if c.PasswordHash != nil {
		cols["password_hash"] = *c.PasswordHash
	}
	if c.EmailVerified != nil {
		cols["email_verified"] = *c.EmailVerified
	}
	if c.RequirePIN != nil {
		cols["require_pin"] = *c.RequirePIN
	}
	if c.Status != nil {
		cols["status"] = *c.Status
	}
	if c.Name != nil {
		cols["name"] = *c.Name
	}
	if c.Profile != nil {
		cols["profile"] = profileColumn(*c.Profile)
	}
	var affected int64
	err := s.guarded(ctx, func(db *gorm.DB) error {
		res := db.Model(&userModel{}).Where("id = ?", id).Updates(cols)
		affected = res.RowsAffected
		return res.Error
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("storage: change user: %w", err)
	case affected == 0:
		return nil, publicauth.ErrUserNotFound
	}
	return s.UserByID(ctx, id)
}

// DeleteUser deletes the user with that id and everything of theirs, in one transaction (a
// savepoint inside the transaction ctx carries): the authorization codes, refresh tokens,
// PKCE and OpenID Connect rows whose subject is the user, the pending
// authorization requests the user logged in to, and the rows that refer to the account by
// id (sessions, consents, one-time tokens, PIN challenges, linked identities, permission
// records and queued mail, whose links would be dead: no foreign key cascades them since v9). The permission audit log keeps its
// entries: it is the history of what was granted. A revocation rule on the subject revokes
// the user's access tokens, so an account created again under the same id does not revive
// them. It returns publicauth.ErrUserNotFound
// when there is no such user, and deletes nothing then. It implements publicauth.UserStore.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		res := tx.Where("id = ?", id).Delete(&userModel{})
		if res.Error != nil {
			return fmt.Errorf("storage: delete user: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return publicauth.ErrUserNotFound
		}
		if err := s.revokeNow(tx, subjectKey(id)); err != nil {
			return err
		}
		// The user's sessions end with their logout messages, before their rows go.
		if _, err := s.endSessions(tx, 0, "user_id = ?", id); err != nil {
			return err
		}
		return deleteAccountRows(tx, id)
	})
}

// deleteAccountRows deletes, on tx, every row that belongs to the account with that id:
// its tokens and codes (by subject), its pending authorization requests, and the rows of
// accountTables.
func deleteAccountRows(tx *gorm.DB, id string) error {
	for _, model := range []any{
		&authorizationCodeModel{}, &refreshTokenModel{}, &pkceRequestModel{}, &oidcSessionModel{},
		&deviceCodeModel{},
	} {
		if err := tx.Where("subject = ?", id).Delete(model).Error; err != nil {
			return fmt.Errorf("storage: delete user's tokens: %w", err)
		}
	}
	for _, model := range []any{
		&authRequestModel{}, &sessionModel{}, &consentModel{}, &oneTimeTokenModel{},
		&pinChallengeModel{}, &identityModel{}, &permissionModel{}, &mailOutboxModel{},
		&totpFactorModel{}, &recoveryCodeModel{}, &webauthnUserModel{}, &webauthnCredentialModel{},
		&webauthnCeremonyModel{},
	} {
		if err := tx.Where("user_id = ?", id).Delete(model).Error; err != nil {
			return fmt.Errorf("storage: delete user's rows: %w", err)
		}
	}
	return nil
}
