package storage

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// RevokeTokensOf revokes what subject holds for clientID, for example when an admin revokes
// the user's permission for that application: in one transaction it deletes the subject's
// access tokens for the client and marks its refresh tokens inactive (a later use of one of
// them then counts as reuse and revokes its grant). Pending authorization codes are left to
// expire. Revoking when there is nothing to revoke is not an error.
func (s *Store) RevokeTokensOf(ctx context.Context, subject, clientID string) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		err := tx.Where("subject = ? AND client_id = ?", subject, clientID).Delete(&accessTokenModel{}).Error
		if err != nil {
			return fmt.Errorf("storage: revoke access tokens of subject: %w", err)
		}
		err = tx.Model(&refreshTokenModel{}).
			Where("subject = ? AND client_id = ? AND active = ?", subject, clientID, true).
			Update("active", false).Error
		if err != nil {
			return fmt.Errorf("storage: revoke refresh tokens of subject: %w", err)
		}
		return nil
	})
}
