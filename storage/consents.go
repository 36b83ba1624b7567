package storage

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ConsentFor returns the scopes userID has granted clientID, or ErrNotFound.
func (s *Store) ConsentFor(ctx context.Context, userID, clientID string) (*Consent, error) {
	var m consentModel
	if err := s.conn(ctx).Take(&m, "user_id = ? AND client_id = ?", userID, clientID).Error; err != nil {
		if isNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("storage: get consent: %w", err)
	}
	return &Consent{
		UserID:    m.UserID,
		ClientID:  m.ClientID,
		Scopes:    []string(m.Scopes),
		GrantedAt: timeUTC(m.GrantedAt),
	}, nil
}

// SaveConsent inserts c, or replaces the scopes and GrantedAt of the consent that user
// already gave the client, in one INSERT … ON CONFLICT statement, so concurrent saves never
// fail or duplicate (the last one wins). A zero c.GrantedAt is set to now. It returns
// ErrNotFound when the user or the client does not exist.
func (s *Store) SaveConsent(ctx context.Context, c *Consent) error {
	if c.GrantedAt.IsZero() {
		c.GrantedAt = s.nowUTC()
	}
	m := consentModel{
		UserID:    c.UserID,
		ClientID:  c.ClientID,
		Scopes:    stringList(c.Scopes),
		GrantedAt: utc(c.GrantedAt),
	}
	err := s.guarded(ctx, func(db *gorm.DB) error {
		return db.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "user_id"}, {Name: "client_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"scopes", "granted_at"}),
		}).Create(&m).Error
	})
	if err != nil {
		if isForeignKey(err) {
			return ErrNotFound
		}
		return fmt.Errorf("storage: save consent: %w", err)
	}
	return nil
}
