// Package publicauth authenticates the public users of a Gatehouse deployment: it owns user
// accounts (argon2id password hashes, case-insensitive unique emails), the database-backed
// cookie sessions `public-session` and `admin-session`, the one-time mail links (email
// verification, magic link, password reset), the PIN gate, the rate limits and login
// lockout, and the JSON endpoints under /api/public/*, /api/admin/login|logout and
// /api/sso/validate of the SSO interface.
//
// The package declares the storage it needs as small interfaces gathered in Store; package
// storage implements them. Attempt counting is a Limiter (package ratelimit) and mail a
// Mailer, both injected. It imports nothing else of Gatehouse, so the provider and the
// social and permissions packages can build on it.
package publicauth
