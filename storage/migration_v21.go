package storage

// schemaV21 is dynamic client registration (RFC 7591) and its management (RFC 7592):
//
//   - registration_tokens holds the initial access tokens an admin issues, each kept as the
//     hex SHA-256 of the token (never in clear), with its expiry and how often it may be
//     used (max_uses 0: until it expires); uses counts the registrations it allowed, raised
//     by one conditional update so concurrent registrations never overrun max_uses;
//   - clients.registration_token_hash is the hex SHA-256 of a dynamically registered
//     client's registration access token (” for a client an admin registered);
//   - clients.logo_uri, policy_uri and tos_uri are the client's RFC 7591 §2 metadata.
func schemaV21() []string {
	return []string{
		`CREATE TABLE {registration_tokens} (
		token_hash {text} PRIMARY KEY,
		expires_at {time} NOT NULL,
		max_uses {int} NOT NULL,
		uses {int} NOT NULL,
		created_at {time} NOT NULL
	)`,
		`CREATE INDEX {registration_tokens_expires_at_idx} ON {registration_tokens} (expires_at)`,
		`ALTER TABLE {clients} ADD COLUMN registration_token_hash {text} NOT NULL DEFAULT ''`,
		`ALTER TABLE {clients} ADD COLUMN logo_uri {text} NOT NULL DEFAULT ''`,
		`ALTER TABLE {clients} ADD COLUMN policy_uri {text} NOT NULL DEFAULT ''`,
		`ALTER TABLE {clients} ADD COLUMN tos_uri {text} NOT NULL DEFAULT ''`,
	}
}
