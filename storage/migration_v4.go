package storage

// schemaV4 creates the identities linked from social and upstream OpenID Connect providers.
// The primary key (provider, subject) is what decides between two concurrent first logins
// of the same identity: only one insert can win.
func schemaV4() []string {
	return []string{
		`CREATE TABLE {user_identities} (
		provider {text} NOT NULL,
		subject {text} NOT NULL,
		user_id {text} NOT NULL REFERENCES {users} (id) ON DELETE CASCADE,
		email {text} NOT NULL DEFAULT '',
		created_at {time} NOT NULL,
		PRIMARY KEY (provider, subject)
	)`,
		`CREATE INDEX {user_identities_user_id_idx} ON {user_identities} (user_id)`,
	}
}
