package storage

// schemaV11 moves the PKCE challenge and the OpenID Connect request data of an
// authorization code onto the code's own row, so a code exchange reads one row and spends
// it with one conditional update:
//
//   - pkce_form is the PKCE request's form (code_challenge, code_challenge_method),
//     url.Values.Encode()d; NULL when the code has no PKCE request;
//   - oidc_key is the SHA-256 (hex) of the code itself, by which fosite looks its OpenID
//     Connect request up; oidc_form is that request's form (nonce, max_age, prompt, …); both
//     NULL when the code has none.
//
// The rows of pkce_requests and oidc_sessions written by earlier releases are copied onto
// their codes (an OpenID Connect row is found by its request id, which it shares with its
// code). Those tables are left in place, no longer written, and emptied by the janitor as
// their rows expire.
func schemaV11() []string {
	return []string{
		`ALTER TABLE {authorization_codes} ADD COLUMN pkce_form {text}`,
		`ALTER TABLE {authorization_codes} ADD COLUMN oidc_key {text}`,
		`ALTER TABLE {authorization_codes} ADD COLUMN oidc_form {text}`,
		`CREATE UNIQUE INDEX {authorization_codes_oidc_key_key} ON {authorization_codes} (oidc_key)`,
		`UPDATE {authorization_codes} SET pkce_form =
			(SELECT p.form FROM {pkce_requests} p WHERE p.signature = {authorization_codes}.signature)`,
		`UPDATE {authorization_codes} SET
			oidc_key = (SELECT MIN(o.signature) FROM {oidc_sessions} o WHERE o.request_id = {authorization_codes}.request_id),
			oidc_form = (SELECT MIN(o.form) FROM {oidc_sessions} o WHERE o.request_id = {authorization_codes}.request_id)`,
	}
}
