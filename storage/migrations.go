package storage

import "gorm.io/gorm"

// migrations returns the schema's history, oldest first. Append new steps; never edit one
// that has been released.
func migrations() []migration {
	return []migration{
		{version: 1, name: "initial schema", up: ddl(schemaV1)},
		{version: 2, name: "public authentication: PIN gate, one-time tokens, PIN challenges", up: ddl(schemaV2)},
		{version: 3, name: "per-application permissions and their audit log", up: ddl(schemaV3)},
		{version: 4, name: "linked social and upstream identities", up: ddl(schemaV4)},
		{version: 5, name: "email keys: ASCII case folding and IDNA domains", up: rekeyEmails},
		{version: 6, name: "clients registered as resource servers", up: ddl(schemaV6)},
		{version: 7, name: "mailed links and PIN challenges refer to paused requests by hash", up: migrateV7},
		{version: 8, name: "token tables indexed by subject, for revoking a user's grants", up: ddl(schemaV8)},
		{version: 9, name: "sessions, consents, links, PIN challenges, identities and permissions refer to accounts by id, without a users row", up: migrateV9},
		{version: 10, name: "revocation rules for stateless access tokens", up: ddl(schemaV10)},
		{version: 11, name: "authorization codes carry their PKCE and OpenID Connect request data", up: ddl(schemaV11)},
		{version: 12, name: "client authentication methods, client keys and request object algorithm", up: ddl(schemaV12)},
		{version: 13, name: "pushed authorization requests, and clients that must push theirs", up: ddl(schemaV13)},
		{version: 14, name: "clients that must use DPoP", up: ddl(schemaV14)},
		// No version 15: the change it was set aside for (key rotation) needed no schema change.
		{version: 16, name: "device authorization grant codes", up: ddl(schemaV16)},
		{version: 17, name: "back-channel logout: session ids, session clients and the logout outbox", up: migrateV17},
		{version: 18, name: "users carry the OpenID Connect standard profile", up: ddl(schemaV18)},
		{version: 19, name: "rotated refresh tokens remember when, for the reuse grace window", up: ddl(schemaV19)},
		{version: 20, name: "the audit trail, security_events, absorbing the permission audit log", up: migrateV20},
		{version: 21, name: "dynamic client registration: initial access tokens, registration access tokens, client URIs", up: ddl(schemaV21)},
		{version: 22, name: "the durable mail outbox", up: ddl(schemaV22)},
		{version: 23, name: "back-off of failing back-channel logout endpoints", up: ddl(schemaV23)},
		{version: 30, name: "sessions record every authentication method they completed", up: ddl(schemaV30)},
		{version: 31, name: "second factors: TOTP secrets, recovery codes, passkeys and their ceremonies", up: ddl(schemaV31)},
	}
}

// ddl is the step of a migration that only runs the statements schema returns.
func ddl(schema func() []string) func(tx *gorm.DB, n schemaNames) error {
	return func(tx *gorm.DB, n schemaNames) error { return execAll(tx, n, schema()) }
}

// requestTable is the DDL of a table holding serialized fosite requests; extra adds the
// table's own columns.
func requestTable(name, extra string) string {
	return `CREATE TABLE ` + name + ` (
		signature {text} PRIMARY KEY,
		request_id {text} NOT NULL,
		requested_at {time} NOT NULL,
		client_id {text} NOT NULL REFERENCES {clients} (id) ON DELETE CASCADE,
		subject {text} NOT NULL DEFAULT '',
		requested_scopes {text} NOT NULL DEFAULT '[]',
		granted_scopes {text} NOT NULL DEFAULT '[]',
		requested_audience {text} NOT NULL DEFAULT '[]',
		granted_audience {text} NOT NULL DEFAULT '[]',
		form {text} NOT NULL DEFAULT '',
		session_data {text} NOT NULL,
		` + extra + `expires_at {time}
	)`
}

// schemaV1 creates every table. String lists are JSON text; a NULL expires_at never expires.
func schemaV1() []string {
	return []string{
		`CREATE TABLE {clients} (
		id {text} PRIMARY KEY,
		secret_hash {blob},
		name {text} NOT NULL DEFAULT '',
		redirect_uris {text} NOT NULL DEFAULT '[]',
		post_logout_redirect_uris {text} NOT NULL DEFAULT '[]',
		grant_types {text} NOT NULL DEFAULT '[]',
		response_types {text} NOT NULL DEFAULT '[]',
		scopes {text} NOT NULL DEFAULT '[]',
		audience {text} NOT NULL DEFAULT '[]',
		public {bool} NOT NULL DEFAULT FALSE,
		first_party {bool} NOT NULL DEFAULT FALSE,
		id_token_alg {text} NOT NULL DEFAULT '',
		created_at {time} NOT NULL,
		updated_at {time} NOT NULL
	)`,
		`CREATE INDEX {clients_created_at_idx} ON {clients} (created_at, id)`,

		`CREATE TABLE {users} (
		id {text} PRIMARY KEY,
		email {text} NOT NULL,
		email_lower {text} NOT NULL,
		email_verified {bool} NOT NULL DEFAULT FALSE,
		name {text} NOT NULL DEFAULT '',
		password_hash {text} NOT NULL DEFAULT '',
		role {text} NOT NULL DEFAULT '',
		status {text} NOT NULL DEFAULT '',
		created_at {time} NOT NULL,
		updated_at {time} NOT NULL
	)`,
		`CREATE UNIQUE INDEX {users_email_lower_key} ON {users} (email_lower)`,

		`CREATE TABLE {sessions} (
		id_hash {text} PRIMARY KEY,
		user_id {text} NOT NULL REFERENCES {users} (id) ON DELETE CASCADE,
		kind {text} NOT NULL,
		method {text} NOT NULL DEFAULT '',
		auth_time {time} NOT NULL,
		created_at {time} NOT NULL,
		expires_at {time} NOT NULL
	)`,
		`CREATE INDEX {sessions_user_id_idx} ON {sessions} (user_id)`,
		`CREATE INDEX {sessions_expires_at_idx} ON {sessions} (expires_at)`,

		`CREATE TABLE {auth_requests} (
		id_hash {text} PRIMARY KEY,
		client_id {text} NOT NULL REFERENCES {clients} (id) ON DELETE CASCADE,
		form {text} NOT NULL DEFAULT '',
		requested_at {time} NOT NULL,
		expires_at {time} NOT NULL,
		user_id {text} NOT NULL DEFAULT '',
		auth_time {time}
	)`,
		`CREATE INDEX {auth_requests_client_id_idx} ON {auth_requests} (client_id)`,
		`CREATE INDEX {auth_requests_expires_at_idx} ON {auth_requests} (expires_at)`,

		requestTable("{authorization_codes}", "active {bool} NOT NULL DEFAULT TRUE,\n\t\t"),
		`CREATE INDEX {authorization_codes_request_id_idx} ON {authorization_codes} (request_id)`,
		`CREATE INDEX {authorization_codes_client_subject_idx} ON {authorization_codes} (client_id, subject)`,
		`CREATE INDEX {authorization_codes_expires_at_idx} ON {authorization_codes} (expires_at)`,

		requestTable("{access_tokens}", ""),
		`CREATE INDEX {access_tokens_request_id_idx} ON {access_tokens} (request_id)`,
		`CREATE INDEX {access_tokens_client_subject_idx} ON {access_tokens} (client_id, subject)`,
		`CREATE INDEX {access_tokens_expires_at_idx} ON {access_tokens} (expires_at)`,

		requestTable("{refresh_tokens}", "access_signature {text} NOT NULL DEFAULT '',\n\t\tactive {bool} NOT NULL DEFAULT TRUE,\n\t\t"),
		`CREATE INDEX {refresh_tokens_request_id_idx} ON {refresh_tokens} (request_id)`,
		`CREATE INDEX {refresh_tokens_client_subject_idx} ON {refresh_tokens} (client_id, subject)`,
		`CREATE INDEX {refresh_tokens_expires_at_idx} ON {refresh_tokens} (expires_at)`,

		requestTable("{pkce_requests}", ""),
		`CREATE INDEX {pkce_requests_client_id_idx} ON {pkce_requests} (client_id)`,
		`CREATE INDEX {pkce_requests_expires_at_idx} ON {pkce_requests} (expires_at)`,

		requestTable("{oidc_sessions}", ""),
		`CREATE INDEX {oidc_sessions_client_id_idx} ON {oidc_sessions} (client_id)`,
		`CREATE INDEX {oidc_sessions_expires_at_idx} ON {oidc_sessions} (expires_at)`,

		`CREATE TABLE {consents} (
		user_id {text} NOT NULL REFERENCES {users} (id) ON DELETE CASCADE,
		client_id {text} NOT NULL REFERENCES {clients} (id) ON DELETE CASCADE,
		scopes {text} NOT NULL DEFAULT '[]',
		granted_at {time} NOT NULL,
		PRIMARY KEY (user_id, client_id)
	)`,
		`CREATE INDEX {consents_client_id_idx} ON {consents} (client_id)`,

		`CREATE TABLE {signing_keys} (
		kid {text} PRIMARY KEY,
		algorithm {text} NOT NULL,
		sealed {blob} NOT NULL,
		created_at {time} NOT NULL,
		retired_at {time}
	)`,

		`CREATE TABLE {client_assertion_jtis} (
		jti {text} PRIMARY KEY,
		expires_at {time} NOT NULL
	)`,
		`CREATE INDEX {client_assertion_jtis_expires_at_idx} ON {client_assertion_jtis} (expires_at)`,
	}
}
