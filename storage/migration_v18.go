package storage

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// schemaV18 gives users their OpenID Connect standard profile (Core §5.1: given_name …
// address, phone_number_verified) in one JSON text column, publicauth.Profile as JSON
// under the claim names; ” (the default of existing rows) is the empty profile.
//
// One column rather than sixteen: the profile is always read and written whole with its
// user row, never filtered, sorted or indexed on, and validated by publicauth before it is
// stored; one column keeps the migration, the session join and every dialect the same, and
// a later standard claim needs no migration.
func schemaV18() []string {
	return []string{
		`ALTER TABLE {users} ADD COLUMN profile {text} NOT NULL DEFAULT ''`,
	}
}

// profileColumn is a publicauth.Profile stored as JSON text.
type profileColumn publicauth.Profile

// Value implements driver.Valuer: ” for the empty profile.
func (p profileColumn) Value() (driver.Value, error) {
	if p == (profileColumn{}) {
		return "", nil
	}
	b, err := json.Marshal(publicauth.Profile(p))
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// Scan implements sql.Scanner; NULL and ” are the empty profile.
func (p *profileColumn) Scan(src any) error {
	var data []byte
	switch v := src.(type) {
	case nil:
	case string:
		data = []byte(v)
	case []byte:
		data = v
	default:
		return fmt.Errorf("storage: scan profile from %T", src)
	}
	*p = profileColumn{}
	if len(data) == 0 {
		return nil
	}
	var out publicauth.Profile
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("storage: scan profile: %w", err)
	}
	*p = profileColumn(out)
	return nil
}
