package storage

// schemaV13 adds pushed authorization requests (RFC 9126):
//
//   - clients.require_par marks a client that must push every authorization request; every
//     existing client stays free not to;
//   - pushed_requests holds each pushed request until the authorization endpoint consumes
//     it or it expires: keyed by the SHA-256 (hex) of its request_uri, never the request_uri
//     itself, with the request's parameters minus the client's credentials.
func schemaV13() []string {
	return []string{
		`ALTER TABLE {clients} ADD COLUMN require_par {bool} NOT NULL DEFAULT FALSE`,
		`CREATE TABLE {pushed_requests} (
		id_hash {text} PRIMARY KEY,
		client_id {text} NOT NULL REFERENCES {clients} (id) ON DELETE CASCADE,
		form {text} NOT NULL DEFAULT '',
		requested_at {time} NOT NULL,
		expires_at {time} NOT NULL
	)`,
		`CREATE INDEX {pushed_requests_client_id_idx} ON {pushed_requests} (client_id)`,
		`CREATE INDEX {pushed_requests_expires_at_idx} ON {pushed_requests} (expires_at)`,
	}
}
