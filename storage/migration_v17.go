package storage

import "gorm.io/gorm"

// migrateV17 adds what OpenID Connect Back-Channel Logout 1.0 needs:
//
//   - sessions.sid, the session's public id: the `sid` claim of the ID tokens issued in the
//     session and of the logout tokens sent when it ends. It is random, unrelated to the
//     cookie's token and to id_hash, and fixed for the session's life; existing sessions get
//     one here;
//   - clients.backchannel_logout_uri and backchannel_logout_session_required, the client's
//     registration;
//   - authorization_codes.sid and refresh_tokens.sid, the session a code or refresh token was
//     issued in, so ending the session revokes them;
//   - session_clients, which clients were issued a code in which session (written in the
//     code's transaction);
//   - logout_outbox, the logout tokens still to deliver, written in the transaction that ends
//     the session and deleted once delivered. A message given up on keeps its row, marked
//     failed_at, until expires_at (the janitor then deletes it).
func migrateV17(tx *gorm.DB, n schemaNames) error {
	// A random 128-bit id per existing session, from each database's own generator.
	random := `lower(hex(randomblob(16)))`
	if n.dialect == dialectPostgres {
		random = `replace(gen_random_uuid()::text, '-', '')`
	}
	return execAll(tx, n, []string{
		`ALTER TABLE {sessions} ADD COLUMN sid {text} NOT NULL DEFAULT ''`,
		`UPDATE {sessions} SET sid = ` + random,
		`CREATE UNIQUE INDEX {sessions_sid_key} ON {sessions} (sid)`,

		`ALTER TABLE {clients} ADD COLUMN backchannel_logout_uri {text} NOT NULL DEFAULT ''`,
		`ALTER TABLE {clients} ADD COLUMN backchannel_logout_session_required {bool} NOT NULL DEFAULT FALSE`,

		`ALTER TABLE {authorization_codes} ADD COLUMN sid {text} NOT NULL DEFAULT ''`,
		`CREATE INDEX {authorization_codes_sid_idx} ON {authorization_codes} (sid)`,
		`ALTER TABLE {refresh_tokens} ADD COLUMN sid {text} NOT NULL DEFAULT ''`,
		`CREATE INDEX {refresh_tokens_sid_idx} ON {refresh_tokens} (sid)`,

		`CREATE TABLE {session_clients} (
		sid {text} NOT NULL,
		client_id {text} NOT NULL REFERENCES {clients} (id) ON DELETE CASCADE,
		PRIMARY KEY (sid, client_id)
	)`,
		`CREATE INDEX {session_clients_client_id_idx} ON {session_clients} (client_id)`,

		`CREATE TABLE {logout_outbox} (
		id {text} PRIMARY KEY,
		client_id {text} NOT NULL REFERENCES {clients} (id) ON DELETE CASCADE,
		sid {text} NOT NULL,
		subject {text} NOT NULL,
		created_at {time} NOT NULL,
		next_attempt_at {time} NOT NULL,
		attempts {int} NOT NULL DEFAULT 0,
		last_error {text} NOT NULL DEFAULT '',
		failed_at {time},
		expires_at {time}
	)`,
		`CREATE INDEX {logout_outbox_next_attempt_at_idx} ON {logout_outbox} (next_attempt_at)`,
		`CREATE INDEX {logout_outbox_client_id_idx} ON {logout_outbox} (client_id)`,
		`CREATE INDEX {logout_outbox_expires_at_idx} ON {logout_outbox} (expires_at)`,
	})
}
