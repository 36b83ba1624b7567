package storage

// schemaV12 records how each client authenticates (ClientAuthentication):
//
//   - token_endpoint_auth_method is one of client_secret_basic, client_secret_post,
//     client_secret_jwt, private_key_jwt and none. Existing rows keep ” (registered before
//     migration 12), which the provider reads as the methods it accepted then:
//     client_secret_basic or client_secret_post for a confidential client, none for a
//     public one;
//   - jwks_uri and jwks (a JSON Web Key Set document) hold a private_key_jwt client's
//     public keys, also used to verify its request objects;
//   - secret_sealed is a client_secret_jwt client's secret, sealed by the provider (AES-GCM
//     under the system secret): HS256 assertions are verified with the secret itself;
//   - request_object_signing_alg pins the JWS algorithm of the client's request objects.
func schemaV12() []string {
	return []string{
		`ALTER TABLE {clients} ADD COLUMN token_endpoint_auth_method {text} NOT NULL DEFAULT ''`,
		`ALTER TABLE {clients} ADD COLUMN jwks_uri {text} NOT NULL DEFAULT ''`,
		`ALTER TABLE {clients} ADD COLUMN jwks {text} NOT NULL DEFAULT ''`,
		`ALTER TABLE {clients} ADD COLUMN secret_sealed {blob}`,
		`ALTER TABLE {clients} ADD COLUMN request_object_signing_alg {text} NOT NULL DEFAULT ''`,
	}
}
