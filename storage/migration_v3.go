package storage

// schemaV3 creates the per-application permission records and their audit log.
//
// One record per (user, client): the primary key is the unique index that enforces it, and
// the records go with their user or client (ON DELETE CASCADE). The audit log has no
// foreign keys on purpose: it is history and outlives the records, users and clients it
// names. Both listings page by keyset, so each has an index in its sort order.
func schemaV3() []string {
	return []string{
		`CREATE TABLE {permissions} (
		user_id {text} NOT NULL REFERENCES {users} (id) ON DELETE CASCADE,
		client_id {text} NOT NULL REFERENCES {clients} (id) ON DELETE CASCADE,
		status {text} NOT NULL,
		role {text} NOT NULL,
		has_access {bool} NOT NULL DEFAULT FALSE,
		requested_at {time},
		granted_at {time},
		granted_by {text} NOT NULL DEFAULT '',
		created_at {time} NOT NULL,
		updated_at {time} NOT NULL,
		PRIMARY KEY (user_id, client_id)
	)`,
		`CREATE INDEX {permissions_client_created_idx} ON {permissions} (client_id, created_at, user_id)`,
		`CREATE INDEX {permissions_client_status_created_idx} ON {permissions} (client_id, status, created_at, user_id)`,

		`CREATE TABLE {permission_audit} (
		id {text} PRIMARY KEY,
		user_id {text} NOT NULL,
		client_id {text} NOT NULL,
		actor_type {text} NOT NULL,
		actor_id {text} NOT NULL,
		action {text} NOT NULL,
		before_record {text},
		after_record {text} NOT NULL,
		at {time} NOT NULL
	)`,
		`CREATE INDEX {permission_audit_at_idx} ON {permission_audit} (at, id)`,
		`CREATE INDEX {permission_audit_user_at_idx} ON {permission_audit} (user_id, at, id)`,
		`CREATE INDEX {permission_audit_client_at_idx} ON {permission_audit} (client_id, at, id)`,
	}
}
