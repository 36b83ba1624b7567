package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

var _ publicauth.IdentityStore = (*Store)(nil)

// identityModel is a row of user_identities: one provider account linked to one user.
type identityModel struct {
	Provider  string `gorm:"primaryKey"`
	Subject   string `gorm:"primaryKey"`
	UserID    string
	Email     string
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
}

func (identityModel) TableName(n schema.Namer) string { return n.TableName("user_identities") }

// UserByIdentity returns the user linked to (provider, subject), or
// publicauth.ErrIdentityNotFound. It implements publicauth.IdentityStore.
func (s *Store) UserByIdentity(ctx context.Context, provider, subject string) (*publicauth.User, error) {
	var m userModel
	err := s.conn(ctx).
		Joins(s.sql("JOIN {user_identities} ON {user_identities}.user_id = {users}.id")).
		Where(s.sql("{user_identities}.provider = ? AND {user_identities}.subject = ?"), provider, subject).
		Take(&m).Error
	if err != nil {
		if isNotFound(err) {
			return nil, publicauth.ErrIdentityNotFound
		}
		return nil, fmt.Errorf("storage: get user by identity: %w", err)
	}
	return m.toUser(), nil
}

// CreateUserWithIdentity inserts u (its SocialProviders as given) and links id to it in one
// transaction. It returns publicauth.ErrIdentityTaken when (id.Provider, id.Subject) is
// linked already, publicauth.ErrEmailTaken when u's email is in use and ErrConflict when
// u.ID is; nothing is written then. It implements publicauth.IdentityStore.
func (s *Store) CreateUserWithIdentity(ctx context.Context, u *publicauth.User, id publicauth.Identity) error {
	return s.InTx(ctx, func(ctx context.Context) error {
		if err := s.CreateUser(ctx, u); err != nil {
			return err
		}
		return s.insertIdentity(ctx, u.ID, id, u.CreatedAt)
	})
}

// LinkIdentity links id to the user userID and recomputes the user's social providers from
// every identity linked to it, in one transaction, and returns the user as stored. It
// returns publicauth.ErrUserNotFound and publicauth.ErrIdentityTaken (linked already, to
// anyone); nothing is written then. It implements publicauth.IdentityStore.
//
// The transaction first touches the user's row: that locks it (Postgres; SQLite serializes
// writers anyway), so concurrent links to one user run one after the other and each
// recomputed provider list includes every link committed before it.
func (s *Store) LinkIdentity(ctx context.Context, userID string, id publicauth.Identity) (*publicauth.User, error) {
	now := s.nowUTC()
	var out *publicauth.User
	err := s.InTx(ctx, func(ctx context.Context) error {
		tx := s.conn(ctx)
		res := tx.Model(&userModel{}).Where("id = ?", userID).Update("updated_at", now)
		if res.Error != nil {
			return fmt.Errorf("storage: link identity: lock user: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return publicauth.ErrUserNotFound
		}
		if err := s.insertIdentity(ctx, userID, id, now); err != nil {
			return err
		}
		var providers []string
		if err := s.conn(ctx).Model(&identityModel{}).Distinct("provider").Where("user_id = ?", userID).
			Order("provider").Pluck("provider", &providers).Error; err != nil {
			return fmt.Errorf("storage: link identity: list providers: %w", err)
		}
		if err := s.conn(ctx).Model(&userModel{}).Where("id = ?", userID).
			Update("social_providers", stringList(providers)).Error; err != nil {
			return fmt.Errorf("storage: link identity: update providers: %w", err)
		}
		var m userModel
		if err := s.conn(ctx).Take(&m, "id = ?", userID).Error; err != nil {
			return fmt.Errorf("storage: link identity: reload user: %w", err)
		}
		out = m.toUser()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertIdentity inserts the link of id to userID; publicauth.ErrIdentityTaken when the
// (provider, subject) key exists. It runs in a savepoint inside ctx's transaction, so a
// collision leaves that transaction usable.
func (s *Store) insertIdentity(ctx context.Context, userID string, id publicauth.Identity, at time.Time) error {
	m := identityModel{
		Provider: id.Provider, Subject: id.Subject, UserID: userID, Email: id.Email, CreatedAt: utc(at),
	}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
	switch {
	case isDuplicate(err):
		return publicauth.ErrIdentityTaken
	case err != nil:
		return fmt.Errorf("storage: insert identity: %w", err)
	}
	return nil
}
