package storage

// schemaV23 is logout_endpoints: the back-off of a client's back-channel logout endpoint. A
// row exists while the endpoint is on a failure streak: failures counts the failed
// deliveries in a row, and none of the client's messages is claimed before retry_at, so an
// endpoint that hangs or refuses holds at most one delivery at a time instead of every
// message it has queued. A delivered message deletes the row; the janitor deletes it at
// expires_at, a while after its back-off ended with no new failure. No foreign key: a row
// of a deleted client is harmless and expires.
func schemaV23() []string {
	return []string{
		`CREATE TABLE {logout_endpoints} (
		client_id {text} PRIMARY KEY,
		failures {int} NOT NULL,
		retry_at {time} NOT NULL,
		expires_at {time} NOT NULL
	)`,
		`CREATE INDEX {logout_endpoints_expires_at_idx} ON {logout_endpoints} (expires_at)`,
	}
}
