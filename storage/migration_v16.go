package storage

// schemaV16 adds the device authorization grant's codes (RFC 8628). A row is one device
// authorization request: the device code (kept as its SHA-256, never in clear), the user
// code the user types (unique while the row lives; eight letters, so hashing it would
// protect nothing), the client and what it asked for, the polling state, and the user's
// decision with the fosite session the tokens are issued from.
//
// status is pending until the user decides (approved or denied), and issued once the
// tokens were written: the conditional update from approved to issued is what issues them
// exactly once.
func schemaV16() []string {
	return []string{
		`CREATE TABLE {device_codes} (
		device_code_hash {text} PRIMARY KEY,
		user_code {text} NOT NULL,
		client_id {text} NOT NULL,
		request_id {text} NOT NULL,
		form {text} NOT NULL,
		requested_at {time} NOT NULL,
		expires_at {time} NOT NULL,
		poll_interval {int} NOT NULL,
		last_polled_at {time},
		status {text} NOT NULL,
		subject {text},
		session {text},
		decided_at {time}
	)`,
		`CREATE UNIQUE INDEX {device_codes_user_code_key} ON {device_codes} (user_code)`,
		`CREATE INDEX {device_codes_client_id_idx} ON {device_codes} (client_id)`,
		`CREATE INDEX {device_codes_expires_at_idx} ON {device_codes} (expires_at)`,
	}
}
