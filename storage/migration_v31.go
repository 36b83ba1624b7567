package storage

// schemaV31 holds the second factors of package factors, every row keyed by account id
// (user_id, which need not be a row of users):
//
//   - totp_factors: an account's TOTP secret, sealed by the service (AES-GCM under a key
//     derived from the system secret, bound to the account), confirmed or an enrolment
//     waiting for its first code (expires_at set only then; the janitor deletes it once
//     past); at most one of each per account. last_step is the last time step a code was
//     accepted for (RFC 6238 §5.2), -1 before any;
//   - recovery_codes: the HMAC-SHA-256 of each recovery code under a key derived from the
//     system secret (never a code), used_at set once spent;
//   - webauthn_users: each account's random WebAuthn user handle (base64url), unique;
//   - webauthn_credentials: passkeys, by credential id (base64url): the relying party id
//     they belong to, the counter and flags that change with each use as columns, and
//     the rest of the go-webauthn credential record as JSON (credential);
//   - webauthn_ceremonies: the state of a passkey ceremony between its begin and finish,
//     keyed by the SHA-256 of its opaque id, single use (used_at), deleted by the janitor
//     once used or expired.
func schemaV31() []string {
	return []string{
		`CREATE TABLE {totp_factors} (
		id {text} PRIMARY KEY,
		user_id {text} NOT NULL,
		confirmed {bool} NOT NULL,
		sealed_secret {blob} NOT NULL,
		last_step {int} NOT NULL DEFAULT -1,
		created_at {time} NOT NULL,
		confirmed_at {time},
		last_used_at {time},
		expires_at {time}
	)`,
		`CREATE UNIQUE INDEX {totp_factors_user_id_confirmed_idx} ON {totp_factors} (user_id, confirmed)`,
		`CREATE INDEX {totp_factors_expires_at_idx} ON {totp_factors} (expires_at)`,
		`CREATE TABLE {recovery_codes} (
		user_id {text} NOT NULL,
		code_hash {text} NOT NULL,
		created_at {time} NOT NULL,
		used_at {time},
		PRIMARY KEY (user_id, code_hash)
	)`,
		`CREATE TABLE {webauthn_users} (
		user_id {text} PRIMARY KEY,
		handle {text} NOT NULL,
		created_at {time} NOT NULL
	)`,
		`CREATE UNIQUE INDEX {webauthn_users_handle_idx} ON {webauthn_users} (handle)`,
		`CREATE TABLE {webauthn_credentials} (
		id {text} PRIMARY KEY,
		user_id {text} NOT NULL,
		rp_id {text} NOT NULL,
		name {text} NOT NULL,
		sign_count {int} NOT NULL DEFAULT 0,
		backup_eligible {bool} NOT NULL DEFAULT FALSE,
		backup_state {bool} NOT NULL DEFAULT FALSE,
		clone_warning {bool} NOT NULL DEFAULT FALSE,
		credential {text} NOT NULL,
		created_at {time} NOT NULL,
		last_used_at {time}
	)`,
		`CREATE INDEX {webauthn_credentials_user_id_idx} ON {webauthn_credentials} (user_id, created_at)`,
		`CREATE TABLE {webauthn_ceremonies} (
		id_hash {text} PRIMARY KEY,
		kind {text} NOT NULL,
		user_id {text} NOT NULL DEFAULT '',
		session_data {text} NOT NULL,
		created_at {time} NOT NULL,
		expires_at {time} NOT NULL,
		used_at {time}
	)`,
		`CREATE INDEX {webauthn_ceremonies_expires_at_idx} ON {webauthn_ceremonies} (expires_at)`,
	}
}
