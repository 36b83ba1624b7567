// Package publicauth authenticates the public users of a Gatehouse deployment: it owns user
// accounts (argon2id password hashes, case-insensitive unique emails), the database-backed
// cookie sessions `public-session` and `admin-session`, and the JSON endpoints under
// /api/public/* of the SSO interface (register, login, session, logout).
//
// The package declares the storage it needs as small interfaces (UserStore, SessionStore);
// package storage implements them. It imports nothing else of Gatehouse, so the provider and
// the social and permissions packages can build on it.
package publicauth
