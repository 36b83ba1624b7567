package storage

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/gatehouse-id/gatehouse/factors"
)

type webauthnUserModel struct {
	UserID    string `gorm:"primaryKey"`
	Handle    string
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
}

func (webauthnUserModel) TableName(n schema.Namer) string { return n.TableName("webauthn_users") }

type webauthnCredentialModel struct {
	ID             string `gorm:"primaryKey"`
	UserID         string
	RPID           string `gorm:"column:rp_id"`
	Name           string
	SignCount      int64
	BackupEligible bool
	BackupState    bool
	CloneWarning   bool
	Credential     string
	CreatedAt      time.Time `gorm:"autoCreateTime:false"`
	LastUsedAt     *time.Time
}

func (webauthnCredentialModel) TableName(n schema.Namer) string {
	return n.TableName("webauthn_credentials")
}

func (m *webauthnCredentialModel) toPasskey() factors.Passkey {
	return factors.Passkey{
		ID: m.ID, AccountID: m.UserID, Name: m.Name, RPID: m.RPID, SignCount: uint32(m.SignCount),
		BackupEligible: m.BackupEligible, BackupState: m.BackupState, CloneWarning: m.CloneWarning,
		CreatedAt: timeUTC(m.CreatedAt), LastUsedAt: timePtrUTC(m.LastUsedAt), Credential: []byte(m.Credential),
	}
}

type webauthnCeremonyModel struct {
	IDHash      string `gorm:"primaryKey"`
	Kind        string
	UserID      string
	SessionData string
	CreatedAt   time.Time `gorm:"autoCreateTime:false"`
	ExpiresAt   time.Time
	UsedAt      *time.Time
}

func (webauthnCeremonyModel) TableName(n schema.Namer) string {
	return n.TableName("webauthn_ceremonies")
}

// PasskeyUserHandle returns the account's WebAuthn user handle, storing handle as it when
// the account has none: an insert that does nothing on a conflict, then a read, so of
// concurrent callers the first stored wins for all. It implements factors.PasskeyStore.
func (s *Store) PasskeyUserHandle(ctx context.Context, accountID string, handle []byte) ([]byte, error) {
	row := webauthnUserModel{UserID: accountID, Handle: base64.RawURLEncoding.EncodeToString(handle), CreatedAt: s.nowUTC()}
	var stored webauthnUserModel
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
			return err
		}
		return tx.Take(&stored, "user_id = ?", accountID).Error
	})
	if err != nil {
		return nil, fmt.Errorf("storage: passkey user handle: %w", err)
	}
	return base64.RawURLEncoding.DecodeString(stored.Handle)
}

// AccountByUserHandle returns the id of the account with that WebAuthn user handle, or
// factors.ErrNotEnrolled. It implements factors.PasskeyStore.
func (s *Store) AccountByUserHandle(ctx context.Context, handle []byte) (string, error) {
	var m webauthnUserModel
	err := s.conn(ctx).Take(&m, "handle = ?", base64.RawURLEncoding.EncodeToString(handle)).Error
	if isNotFound(err) {
		return "", factors.ErrNotEnrolled
	}
	if err != nil {
		return "", fmt.Errorf("storage: account by user handle: %w", err)
	}
	return m.UserID, nil
}

// CreatePasskey stores p; factors.ErrPasskeyExists when its id is registered already. It
// implements factors.PasskeyStore.
func (s *Store) CreatePasskey(ctx context.Context, p *factors.Passkey) error {
	m := webauthnCredentialModel{
		ID: p.ID, UserID: p.AccountID, RPID: p.RPID, Name: p.Name, SignCount: int64(p.SignCount),
		BackupEligible: p.BackupEligible, BackupState: p.BackupState, CloneWarning: p.CloneWarning,
		Credential: string(p.Credential), CreatedAt: utc(p.CreatedAt), LastUsedAt: utcPtr(p.LastUsedAt),
	}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
	if isDuplicate(err) {
		return factors.ErrPasskeyExists
	}
	if err != nil {
		return fmt.Errorf("storage: create passkey: %w", err)
	}
	return nil
}

// Passkeys returns the account's passkeys, oldest first. It implements factors.PasskeyStore.
func (s *Store) Passkeys(ctx context.Context, accountID string) ([]factors.Passkey, error) {
	var rows []webauthnCredentialModel
	if err := s.conn(ctx).Where("user_id = ?", accountID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("storage: list passkeys: %w", err)
	}
	keys := make([]factors.Passkey, len(rows))
	for i := range rows {
		keys[i] = rows[i].toPasskey()
	}
	return keys, nil
}

// RecordPasskeyUse stores a verified use of the account's passkey in one conditional
// update: it succeeds only while the passkey is not marked as cloned and its stored
// counter is below signCount (both 0 for an authenticator without a counter), so a
// counter that did not go up, and the slower of two uses racing with one counter, are
// factors.ErrCounterNotIncreased. It implements factors.PasskeyStore.
func (s *Store) RecordPasskeyUse(ctx context.Context, accountID, id string, signCount uint32, backupState bool, now time.Time) error {
	q := s.conn(ctx).Model(&webauthnCredentialModel{}).Where("id = ? AND user_id = ? AND clone_warning = ?", id, accountID, false)
	if signCount == 0 {
		q = q.Where("sign_count = 0")
	} else {
		q = q.Where("sign_count < ?", int64(signCount))
	}
	res := q.Updates(map[string]any{"sign_count": int64(signCount), "backup_state": backupState, "last_used_at": utc(now)})
	if res.Error != nil {
		return fmt.Errorf("storage: record passkey use: %w", res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	var n int64
	if err := s.conn(ctx).Model(&webauthnCredentialModel{}).Where("id = ? AND user_id = ?", id, accountID).Count(&n).Error; err != nil {
		return fmt.Errorf("storage: record passkey use: %w", err)
	}
	if n == 0 {
		return factors.ErrNotEnrolled
	}
	return factors.ErrCounterNotIncreased
}

// MarkPasskeyCloned sets the passkey's clone warning. It implements factors.PasskeyStore.
func (s *Store) MarkPasskeyCloned(ctx context.Context, accountID, id string) error {
	return s.updatePasskey(ctx, "mark passkey cloned", accountID, id, "clone_warning", true)
}

// RenamePasskey sets the passkey's name; factors.ErrNotEnrolled for no such passkey of
// the account. It implements factors.PasskeyStore.
func (s *Store) RenamePasskey(ctx context.Context, accountID, id, name string) error {
	return s.updatePasskey(ctx, "rename passkey", accountID, id, "name", name)
}

// updatePasskey sets one column of the account's passkey id.
func (s *Store) updatePasskey(ctx context.Context, what, accountID, id, column string, value any) error {
	res := s.conn(ctx).Model(&webauthnCredentialModel{}).Where("id = ? AND user_id = ?", id, accountID).Update(column, value)
	if res.Error != nil {
		return fmt.Errorf("storage: %s: %w", what, res.Error)
	}
	if res.RowsAffected == 0 {
		return factors.ErrNotEnrolled
	}
	return nil
}

// DeletePasskey deletes the account's passkey; factors.ErrNotEnrolled for no such passkey.
// It implements factors.PasskeyStore.
func (s *Store) DeletePasskey(ctx context.Context, accountID, id string) error {
	res := s.conn(ctx).Where("id = ? AND user_id = ?", id, accountID).Delete(&webauthnCredentialModel{})
	if res.Error != nil {
		return fmt.Errorf("storage: delete passkey: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return factors.ErrNotEnrolled
	}
	return nil
}

// CreateCeremony stores c. It implements factors.CeremonyStore.
func (s *Store) CreateCeremony(ctx context.Context, c *factors.Ceremony) error {
	m := webauthnCeremonyModel{
		IDHash: c.IDHash, Kind: c.Kind, UserID: c.AccountID, SessionData: string(c.SessionData),
		CreatedAt: utc(c.CreatedAt), ExpiresAt: utc(c.ExpiresAt),
	}
	if err := s.conn(ctx).Create(&m).Error; err != nil {
		return fmt.Errorf("storage: create passkey ceremony: %w", err)
	}
	return nil
}

// ConsumeCeremony spends the ceremony with that id hash and returns it: one conditional
// update that succeeds only while it is unused and unexpired at now, so of concurrent
// callers exactly one wins; the others, and any unknown ceremony, get
// factors.ErrCeremonyInvalid. It implements factors.CeremonyStore.
func (s *Store) ConsumeCeremony(ctx context.Context, idHash string, now time.Time) (*factors.Ceremony, error) {
	now = utc(now)
	m, err := claimRow[webauthnCeremonyModel](ctx, s, "consume passkey ceremony", factors.ErrCeremonyInvalid, "id_hash", idHash,
		func(q *gorm.DB) *gorm.DB {
			return q.Where("id_hash = ? AND used_at IS NULL AND expires_at > ?", idHash, now).Update("used_at", now)
		})
	if err != nil {
		return nil, err
	}
	return &factors.Ceremony{
		IDHash: m.IDHash, Kind: m.Kind, AccountID: m.UserID, SessionData: []byte(m.SessionData),
		CreatedAt: timeUTC(m.CreatedAt), ExpiresAt: timeUTC(m.ExpiresAt),
	}, nil
}
