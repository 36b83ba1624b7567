package storage

// schemaV2 adds what public authentication needs beyond accounts and sessions: the per-user
// PIN gate, the linked social providers (denormalized onto the user so every session check
// reads loginMethods without a join), one-time mail tokens and PIN challenges.
func schemaV2() []string {
	return []string{
		`ALTER TABLE users ADD COLUMN require_pin {bool} NOT NULL DEFAULT FALSE`,
		`ALTER TABLE users ADD COLUMN social_providers {text} NOT NULL DEFAULT '[]'`,
	}
}
