// Package publicauth authenticates the public users of a Gatehouse deployment: it owns user
// accounts (argon2id password hashes, case-insensitive unique emails), the database-backed
// cookie sessions `public-session` and `admin-session`, and the JSON endpoints under
// /api/public/* of the SSO interface (register, login, session, logout).
//
// Mail (email verification, magic links, PINs, password reset) goes through a Mailer:
// SMTPMailer when an SMTP server is configured, else NewLogMailer's, which logs it. Its
// subjects and bodies come from embedded templates (mailtemplates/) that a deployer may
// replace file by file.
//
// The package declares the storage it needs as small interfaces (UserStore, SessionStore);
// package storage implements them. It imports nothing else of Gatehouse, so the provider and
// the social and permissions packages can build on it.
package publicauth
