package storage

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"gorm.io/gorm"
)

// maxReportedUsers caps the user ids a failed migration 5 names, so its message stays
// readable on a large database.
const maxReportedUsers = 50

// rekeyEmails is migration 5: it recomputes users.email_lower with publicauth.EmailKey
// (ASCII case folding, IDNA A-label domain) in place of the Unicode lower-casing releases
// before it used, under which distinct addresses such as victim@gmail.com and
// victim@gmaİl.com shared a key. It stops, changing nothing, when an email has no key or
// when two users' emails now share one, naming the users by id only.
//
// The unique index is dropped while the keys change and created again afterwards: one row's
// new key may be another's old one, which a row-by-row update would trip over. All of it
// runs in the migration's transaction.
func rekeyEmails(tx *gorm.DB, n schemaNames) error {
	var rows []struct {
		ID         string
		Email      string
		EmailLower string
	}
	if err := scan(tx.Raw(n.sql("SELECT id, email, email_lower FROM {users} ORDER BY id")), &rows); err != nil {
		return fmt.Errorf("read users: %w", err)
	}
	var invalid []string
	keys := make([]string, len(rows))
	owners := make(map[string][]string, len(rows)) // key → ids, in id order
	for i, r := range rows {
		key, err := publicauth.EmailKey(r.Email)
		if err != nil {
			invalid = append(invalid, r.ID)
			continue
		}
		keys[i] = key
		owners[key] = append(owners[key], r.ID)
	}
	if len(invalid) > 0 {
		return fmt.Errorf("the email addresses of these users are not valid (no usable domain, a control character, or not UTF-8): %s; "+
			"correct or delete those users in the users table (the previous release still runs on this schema), then run the migration again; nothing was changed",
			listIDs(invalid))
	}
	var groups []string
	for _, ids := range owners {
		if len(ids) > 1 {
			groups = append(groups, "["+strings.Join(ids, ", ")+"]")
		}
	}
	if len(groups) > 0 {
		slices.Sort(groups)
		return fmt.Errorf("users whose email addresses now compare equal (same key: ASCII case folding, IDNA domain) must not share one: %s; "+
			"in each group change the email of, or delete, all but one user in the users table (the previous release still runs on this schema), then run the migration again; nothing was changed",
			listIDs(groups))
	}
	dropped := false
	for i, r := range rows {
		if keys[i] == r.EmailLower {
			continue
		}
		if !dropped {
			if err := tx.Exec(n.sql("DROP INDEX {users_email_lower_key}")).Error; err != nil {
				return fmt.Errorf("drop the email index: %w", err)
			}
			dropped = true
		}
		if err := tx.Exec(n.sql("UPDATE {users} SET email_lower = ? WHERE id = ?"), keys[i], r.ID).Error; err != nil {
			return fmt.Errorf("update the email key of user %s: %w", r.ID, err)
		}
	}
	if !dropped {
		return nil
	}
	return execAll(tx, n, []string{`CREATE UNIQUE INDEX {users_email_lower_key} ON {users} (email_lower)`})
}

// listIDs joins items with ", ", the first maxReportedUsers of them, and says how many more
// there are.
func listIDs(items []string) string {
	if len(items) <= maxReportedUsers {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxReportedUsers], ", "), len(items)-maxReportedUsers)
}
