package storage

// schemaV8 indexes the token tables by subject alone: revoking every grant of a user (a
// password change, a first verification, a disabled account) looks them up by subject over
// every client, which the (client_id, subject) indexes cannot serve.
func schemaV8() []string {
	return []string{
		`CREATE INDEX {authorization_codes_subject_idx} ON {authorization_codes} (subject)`,
		`CREATE INDEX {access_tokens_subject_idx} ON {access_tokens} (subject)`,
		`CREATE INDEX {refresh_tokens_subject_idx} ON {refresh_tokens} (subject)`,
	}
}
