package storage

// schemaV14 marks clients that must prove possession of a key with DPoP (RFC 9449) at the
// token endpoint. Every existing client keeps sending bearer token requests as before.
// DPoP binding of refresh tokens needs no column: the key's thumbprint is kept in the
// grant's stored session.
func schemaV14() []string {
	return []string{
		`ALTER TABLE {clients} ADD COLUMN require_dpop {bool} NOT NULL DEFAULT FALSE`,
	}
}
