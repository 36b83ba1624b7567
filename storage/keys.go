package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// SigningKeys returns every signing key, retired ones included, ordered by CreatedAt and
// then KID.
func (s *Store) SigningKeys(ctx context.Context) ([]*SigningKey, error) {
	var ms []signingKeyModel
	if err := s.conn(ctx).Order("created_at, kid").Find(&ms).Error; err != nil {
		return nil, fmt.Errorf("storage: list signing keys: %w", err)
	}
	out := make([]*SigningKey, 0, len(ms))
	for _, m := range ms {
		out = append(out, &SigningKey{
			KID:       m.KID,
			Algorithm: m.Algorithm,
			Sealed:    m.Sealed,
			CreatedAt: timeUTC(m.CreatedAt),
			RetiredAt: timePtrUTC(m.RetiredAt),
		})
	}
	return out, nil
}

// AddSigningKey makes k the active key of its algorithm: in one transaction it sets
// RetiredAt = k.CreatedAt on every key of k.Algorithm not yet retired, then inserts k. A zero
// k.CreatedAt is set to now. It returns ErrConflict when a key with k.KID exists (and then
// retires nothing).
func (s *Store) AddSigningKey(ctx context.Context, k *SigningKey) error {
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.nowUTC()
	}
	createdAt := utc(k.CreatedAt)
	return s.inTx(ctx, func(tx *gorm.DB) error {
		err := tx.Model(&signingKeyModel{}).
			Where("algorithm = ? AND retired_at IS NULL", k.Algorithm).
			Update("retired_at", createdAt).Error
		if err != nil {
			return fmt.Errorf("storage: retire signing keys: %w", err)
		}
		m := signingKeyModel{
			KID:       k.KID,
			Algorithm: k.Algorithm,
			Sealed:    k.Sealed,
			CreatedAt: createdAt,
			RetiredAt: utcPtr(k.RetiredAt),
		}
		if err := tx.Create(&m).Error; err != nil {
			if isDuplicate(err) {
				return ErrConflict
			}
			return fmt.Errorf("storage: add signing key: %w", err)
		}
		return nil
	})
}

// RotateSigningKey is AddSigningKey for a scheduled rotation that several replicas may
// attempt at once: it makes k the active key of k.Algorithm only if that algorithm's active
// key was created at or before due, and reports whether it did. The database decides the
// race: the update that retires the active key is conditional (retired_at IS NULL AND
// created_at <= due), so of concurrent callers exactly one retires it and inserts its key;
// the others find no row to retire, insert nothing and get false. They get false as well
// when the algorithm has no active key (AddSigningKey creates the first one) or when its
// active key is newer than due. A zero k.CreatedAt is set to now. A k.KID that exists
// rolls the whole rotation back and returns ErrConflict.
func (s *Store) RotateSigningKey(ctx context.Context, k *SigningKey, due time.Time) (bool, error) {
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.nowUTC()
	}
	createdAt := utc(k.CreatedAt)
	rotated := false
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		// On Postgres a concurrent rotation holds the row until it commits; this update then
		// re-reads it, finds it retired and changes nothing. SQLite runs one writer at a time.
		res := tx.Model(&signingKeyModel{}).
			Where("algorithm = ? AND retired_at IS NULL AND created_at <= ?", k.Algorithm, utc(due)).
			Update("retired_at", createdAt)
		if res.Error != nil {
			return fmt.Errorf("storage: retire signing keys: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		m := signingKeyModel{KID: k.KID, Algorithm: k.Algorithm, Sealed: k.Sealed, CreatedAt: createdAt}
		if err := tx.Create(&m).Error; err != nil {
			if isDuplicate(err) {
				return ErrConflict
			}
			return fmt.Errorf("storage: add signing key: %w", err)
		}
		rotated = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return rotated, nil
}
