package storage

// schemaV19 lets a rotated refresh token be used once more within a grace window
// (SetRefreshReuseGrace), for a client whose answer to the rotation was lost:
//
//   - rotated_at is when the token was rotated (spent by a refresh); NULL while it is
//     active, and for a token that was revoked rather than rotated, which has no grace;
//   - grace_used is true once the token's one use within the window has happened.
func schemaV19() []string {
	return []string{
		`ALTER TABLE {refresh_tokens} ADD COLUMN rotated_at {time}`,
		`ALTER TABLE {refresh_tokens} ADD COLUMN grace_used {bool} NOT NULL DEFAULT FALSE`,
	}
}
