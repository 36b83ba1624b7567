package storage

// schemaV2 adds what public authentication needs beyond accounts and sessions: the per-user
// PIN gate, the linked social providers (denormalized onto the user so every session check
// reads loginMethods without a join), one-time mail tokens and PIN challenges.
//
// one_time_tokens keeps only the SHA-256 of each token; pin_challenges keeps an HMAC of the
// PIN. Both cascade with their user and are swept by the janitor once expired or used.
func schemaV2() []string {
	return []string{
		`ALTER TABLE {users} ADD COLUMN require_pin {bool} NOT NULL DEFAULT FALSE`,
		`ALTER TABLE {users} ADD COLUMN social_providers {text} NOT NULL DEFAULT '[]'`,

		`CREATE TABLE {one_time_tokens} (
		id_hash {text} PRIMARY KEY,
		purpose {text} NOT NULL,
		user_id {text} NOT NULL REFERENCES {users} (id) ON DELETE CASCADE,
		email {text} NOT NULL,
		redirect_uri {text} NOT NULL DEFAULT '',
		resume {text} NOT NULL DEFAULT '',
		payload {text} NOT NULL DEFAULT '',
		created_at {time} NOT NULL,
		expires_at {time} NOT NULL,
		used_at {time}
	)`,
		`CREATE INDEX {one_time_tokens_user_purpose_idx} ON {one_time_tokens} (user_id, purpose)`,
		`CREATE INDEX {one_time_tokens_expires_at_idx} ON {one_time_tokens} (expires_at)`,

		`CREATE TABLE {pin_challenges} (
		id {text} PRIMARY KEY,
		user_id {text} NOT NULL REFERENCES {users} (id) ON DELETE CASCADE,
		pin_hash {text} NOT NULL,
		kind {text} NOT NULL,
		method {text} NOT NULL,
		redirect_uri {text} NOT NULL DEFAULT '',
		resume {text} NOT NULL DEFAULT '',
		attempts {int} NOT NULL DEFAULT 0,
		created_at {time} NOT NULL,
		expires_at {time} NOT NULL,
		used_at {time}
	)`,
		`CREATE INDEX {pin_challenges_user_id_idx} ON {pin_challenges} (user_id)`,
		`CREATE INDEX {pin_challenges_expires_at_idx} ON {pin_challenges} (expires_at)`,
	}
}
