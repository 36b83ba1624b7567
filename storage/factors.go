package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/gatehouse-id/gatehouse/factors"
)

// The stores of package factors: TOTP secrets and recovery codes here, passkeys and their
// ceremonies in passkeys.go (migration 31).

type totpFactorModel struct {
	ID           string `gorm:"primaryKey"`
	UserID       string
	Confirmed    bool
	SealedSecret []byte
	LastStep     int64
	CreatedAt    time.Time `gorm:"autoCreateTime:false"`
	ConfirmedAt  *time.Time
	LastUsedAt   *time.Time
	ExpiresAt    *time.Time
}

func (totpFactorModel) TableName(n schema.Namer) string { return n.TableName("totp_factors") }

func (m *totpFactorModel) toRecord() *factors.TOTPRecord {
	return &factors.TOTPRecord{
		ID: m.ID, AccountID: m.UserID, Confirmed: m.Confirmed, SealedSecret: m.SealedSecret, LastStep: m.LastStep,
		CreatedAt: timeUTC(m.CreatedAt), ConfirmedAt: timePtrUTC(m.ConfirmedAt), LastUsedAt: timePtrUTC(m.LastUsedAt),
		ExpiresAt: timePtrUTC(m.ExpiresAt),
	}
}

type recoveryCodeModel struct {
	UserID    string    `gorm:"primaryKey"`
	CodeHash  string    `gorm:"primaryKey"`
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
	UsedAt    *time.Time
}

func (recoveryCodeModel) TableName(n schema.Namer) string { return n.TableName("recovery_codes") }

// SaveTOTPEnrolment stores r as the account's pending TOTP enrolment, replacing an earlier
// one, in one transaction. It implements factors.TOTPStore.
func (s *Store) SaveTOTPEnrolment(ctx context.Context, r *factors.TOTPRecord) error {
	m := totpFactorModel{
		ID: r.ID, UserID: r.AccountID, SealedSecret: r.SealedSecret, LastStep: r.LastStep,
		CreatedAt: utc(r.CreatedAt), ExpiresAt: utcPtr(r.ExpiresAt),
	}
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("user_id = ? AND confirmed = ?", r.AccountID, false).Delete(&totpFactorModel{}).Error; err != nil {
			return err
		}
		return tx.Create(&m).Error
	})
	if err != nil {
		return fmt.Errorf("storage: save TOTP enrolment: %w", err)
	}
	return nil
}

// TOTP returns the account's confirmed TOTP, or its pending enrolment unexpired at now;
// factors.ErrNotEnrolled when there is none. It implements factors.TOTPStore.
func (s *Store) TOTP(ctx context.Context, accountID string, confirmed bool, now time.Time) (*factors.TOTPRecord, error) {
	q := s.conn(ctx).Where("user_id = ? AND confirmed = ?", accountID, confirmed)
	if !confirmed {
		q = q.Where("expires_at > ?", utc(now))
	}
	var m totpFactorModel
	err := q.Take(&m).Error
	if isNotFound(err) {
		return nil, factors.ErrNotEnrolled
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get TOTP: %w", err)
	}
	return m.toRecord(), nil
}

// ConfirmTOTP turns the account's pending enrolment, unexpired at now, into its confirmed
// TOTP with step as its last accepted step, in one conditional update; the unique index on
// (user_id, confirmed) refuses a second confirmed TOTP (factors.ErrAlreadyEnrolled), so
// of concurrent confirmations one wins. Without such an enrolment it returns
// factors.ErrNotEnrolled. It implements factors.TOTPStore.
func (s *Store) ConfirmTOTP(ctx context.Context, accountID string, step int64, now time.Time) error {
	now = utc(now)
	var rows int64
	err := s.guarded(ctx, func(db *gorm.DB) error {
		res := db.Model(&totpFactorModel{}).
			Where("user_id = ? AND confirmed = ? AND expires_at > ?", accountID, false, now).
			Updates(map[string]any{"confirmed": true, "confirmed_at": now, "last_step": step, "expires_at": nil})
		rows = res.RowsAffected
		return res.Error
	})
	switch {
	case isDuplicate(err):
		return factors.ErrAlreadyEnrolled
	case err != nil:
		return fmt.Errorf("storage: confirm TOTP: %w", err)
	case rows == 0:
		return factors.ErrNotEnrolled
	}
	return nil
}

// AcceptTOTPStep records step as the last accepted step of the account's TOTP in one
// conditional update, which succeeds only while the stored step is lower: of concurrent
// callers with one step exactly one wins (Postgres re-checks the condition on the row the
// winner committed; SQLite runs writers one at a time). Otherwise it returns
// factors.ErrCodeReplayed, or factors.ErrNotEnrolled without a TOTP. It implements
// factors.TOTPStore.
func (s *Store) AcceptTOTPStep(ctx context.Context, accountID string, step int64, now time.Time) error {
	res := s.conn(ctx).Model(&totpFactorModel{}).
		Where("user_id = ? AND confirmed = ? AND last_step < ?", accountID, true, step).
		Updates(map[string]any{"last_step": step, "last_used_at": utc(now)})
	if res.Error != nil {
		return fmt.Errorf("storage: accept TOTP step: %w", res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	if _, err := s.TOTP(ctx, accountID, true, now); err != nil {
		return err
	}
	return factors.ErrCodeReplayed
}

// DeleteTOTP deletes the account's TOTP and pending enrolment and reports whether a
// confirmed one was there. It implements factors.TOTPStore.
func (s *Store) DeleteTOTP(ctx context.Context, accountID string) (bool, error) {
	var confirmed int64
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		res := tx.Where("user_id = ? AND confirmed = ?", accountID, true).Delete(&totpFactorModel{})
		confirmed = res.RowsAffected
		if res.Error != nil {
			return res.Error
		}
		return tx.Where("user_id = ?", accountID).Delete(&totpFactorModel{}).Error
	})
	if err != nil {
		return false, fmt.Errorf("storage: delete TOTP: %w", err)
	}
	return confirmed > 0, nil
}

// ReplaceRecoveryCodes deletes the account's recovery codes and stores hashes as its new
// set, in one transaction. It implements factors.RecoveryCodeStore.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, accountID string, hashes []string, now time.Time) error {
	rows := make([]recoveryCodeModel, len(hashes))
	for i, h := range hashes {
		rows[i] = recoveryCodeModel{UserID: accountID, CodeHash: h, CreatedAt: utc(now)}
	}
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("user_id = ?", accountID).Delete(&recoveryCodeModel{}).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.Create(&rows).Error
	})
	if err != nil {
		return fmt.Errorf("storage: replace recovery codes: %w", err)
	}
	return nil
}

// UseRecoveryCode marks the account's unused code with that hash used at now in one
// conditional update (of concurrent callers exactly one wins) and counts the unused codes
// left, in one transaction. A hash of no unused code is factors.ErrCodeInvalid. It
// implements factors.RecoveryCodeStore.
func (s *Store) UseRecoveryCode(ctx context.Context, accountID, hash string, now time.Time) (int, error) {
	var remaining int64
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&recoveryCodeModel{}).
			Where("user_id = ? AND code_hash = ? AND used_at IS NULL", accountID, hash).
			Update("used_at", utc(now))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return factors.ErrCodeInvalid
		}
		return tx.Model(&recoveryCodeModel{}).Where("user_id = ? AND used_at IS NULL", accountID).Count(&remaining).Error
	})
	if errors.Is(err, factors.ErrCodeInvalid) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("storage: use recovery code: %w", err)
	}
	return int(remaining), nil
}

// RecoveryCodes describes the account's recovery codes; factors.ErrNotEnrolled when it has
// none. It implements factors.RecoveryCodeStore.
func (s *Store) RecoveryCodes(ctx context.Context, accountID string) (factors.RecoveryCodeSet, error) {
	var rows []recoveryCodeModel
	if err := s.conn(ctx).Where("user_id = ?", accountID).Find(&rows).Error; err != nil {
		return factors.RecoveryCodeSet{}, fmt.Errorf("storage: get recovery codes: %w", err)
	}
	if len(rows) == 0 {
		return factors.RecoveryCodeSet{}, factors.ErrNotEnrolled
	}
	set := factors.RecoveryCodeSet{Total: len(rows), CreatedAt: timeUTC(rows[0].CreatedAt)}
	for _, r := range rows {
		if r.UsedAt == nil {
			set.Remaining++
		}
	}
	return set, nil
}

// DeleteRecoveryCodes deletes the account's recovery codes and reports whether it had any.
// It implements factors.RecoveryCodeStore.
func (s *Store) DeleteRecoveryCodes(ctx context.Context, accountID string) (bool, error) {
	res := s.conn(ctx).Where("user_id = ?", accountID).Delete(&recoveryCodeModel{})
	if res.Error != nil {
		return false, fmt.Errorf("storage: delete recovery codes: %w", res.Error)
	}
	return res.RowsAffected > 0, nil
}
