package storage

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// RevokeTokensOf revokes what subject holds for clientID, for example when an admin revokes
// the user's permission for that application: in one transaction it records a rule revoking
// the subject's access tokens at the client issued until now and marks its refresh tokens
// inactive (a later use of one of them then counts as reuse and revokes its grant), and a
// device code the subject approved for the client that has not yielded its tokens yet is
// denied. Pending authorization codes are left to expire. Revoking when there is nothing to
// revoke is not an error.
func (s *Store) RevokeTokensOf(ctx context.Context, subject, clientID string) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		if err := s.revokeNow(tx, subjectClientKey(subject, clientID)); err != nil {
			return err
		}
		err := tx.Model(&deviceCodeModel{}).
			Where("subject = ? AND client_id = ? AND status = ?", subject, clientID, DeviceCodeApproved).
			Update("status", DeviceCodeDenied).Error
		if err != nil {
			return fmt.Errorf("storage: deny approved device codes: %w", err)
		}
		return deactivateRefreshTokens(tx, "subject = ? AND client_id = ?", subject, clientID)
	})
}

// RevokeUserGrants revokes everything userID has granted at every client, for example after
// a password change or when the account is disabled: in one transaction (a savepoint inside
// the transaction ctx carries, so it commits or rolls back with the change that asked for
// it) it records a rule revoking the user's access tokens issued until now, marks the
// user's refresh tokens and unused authorization codes inactive (a later use counts as
// reuse and revokes its grant), denies the device codes the user approved that have not
// yielded their tokens yet, and deletes the user's consents, so every client asks again.
// It also ends the user's open PIN challenges and spends their unused mailed links,
// which began under the old credentials. Revoking when there is nothing to revoke is not an
// error. It implements publicauth.GrantStore.
func (s *Store) RevokeUserGrants(ctx context.Context, userID string) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		if err := s.revokeNow(tx, subjectKey(userID)); err != nil {
			return err
		}
		if err := deactivateRefreshTokens(tx, "subject = ?", userID); err != nil {
			return err
		}
		err := tx.Model(&authorizationCodeModel{}).
			Where("subject = ? AND active = ?", userID, true).
			Update("active", false).Error
		if err != nil {
			return fmt.Errorf("storage: revoke authorization codes of user: %w", err)
		}
		if err := tx.Where("user_id = ?", userID).Delete(&consentModel{}).Error; err != nil {
			return fmt.Errorf("storage: revoke consents of user: %w", err)
		}
		// A device the user approved but that has not fetched its tokens yet gets none.
		err = tx.Model(&deviceCodeModel{}).
			Where("subject = ? AND status = ?", userID, DeviceCodeApproved).
			Update("status", DeviceCodeDenied).Error
		if err != nil {
			return fmt.Errorf("storage: deny approved device codes of user: %w", err)
		}
		// A login waiting at its PIN, or a mailed link, began under the old credentials.
		now := s.nowUTC()
		err = tx.Model(&pinChallengeModel{}).
			Where("user_id = ? AND used_at IS NULL", userID).
			Update("used_at", now).Error
		if err != nil {
			return fmt.Errorf("storage: end PIN challenges of user: %w", err)
		}
		err = tx.Model(&oneTimeTokenModel{}).
			Where("user_id = ? AND used_at IS NULL", userID).
			Update("used_at", now).Error
		if err != nil {
			return fmt.Errorf("storage: spend mailed links of user: %w", err)
		}
		return nil
	})
}

// deactivateRefreshTokens deactivates the active refresh tokens whose rows match the
// condition where (with its args), on tx, and takes the reuse grace of the rotated ones.
func deactivateRefreshTokens(tx *gorm.DB, where string, args ...any) error {
	// Rotated tokens lose their reuse grace too (rotated_at NULL): a revoked grant must not
	// come back through a token spent just before.
	err := tx.Model(&refreshTokenModel{}).
		Where(where, args...).Where("active = ? OR rotated_at IS NOT NULL", true).
		Updates(map[string]any{"active": false, "rotated_at": nil}).Error
	if err != nil {
		return fmt.Errorf("storage: revoke refresh tokens: %w", err)
	}
	return nil
}
