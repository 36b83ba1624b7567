package storage

// schemaV30 lets a session record every authentication method it completed, and when
// (publicauth.Session.Methods, package acr): methods is a JSON list of {method, at, …},
// oldest first. A session stored before it keeps '[]', which reads as its method at its
// auth_time.
func schemaV30() []string {
	return []string{
		`ALTER TABLE {sessions} ADD COLUMN methods {text} NOT NULL DEFAULT '[]'`,
	}
}
