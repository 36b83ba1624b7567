// Package publicauth authenticates the public users of a Gatehouse deployment: it owns user
// accounts (argon2id password hashes, emails unique by EmailKey), the database-backed
// cookie sessions `public-session` and `admin-session`, the one-time mail links (email
// verification, magic link, password reset, password linking), the PIN gate, the rate limits and login
// lockout, and the JSON endpoints under /api/public/*, /api/admin/login|logout and
// /api/sso/validate of the SSO interface.
//
// Registering with the email of a social-only account (no password, see Identities) adds
// the password to that account instead of creating one (isAccountLinking), but only once
// the owner proved the address: at once when the request carries that account's
// `public-session` (its owner just signed in upstream), else when they open a mailed link
// to PathConfirmPassword and type that password again (Service.ConfirmPassword): its
// one-time token carries only the password's argon2id hash, and typing the password back
// is what keeps a stranger who registered the owner's address from getting a password onto
// the account by a careless click. An email with a password stays taken.
//
// Mail (email verification, magic links, PINs, password reset, password linking) goes
// through a Mailer: SMTPMailer when an SMTP server is configured, else NewLogMailer's, which
// logs it. Its subjects and bodies come from embedded templates (mailtemplates/) that a
// deployer may replace file by file. In front of the Mailer is a durable outbox
// (outbox.go, MailOutbox): each mail is written, sealed, in the transaction of the link
// token or PIN challenge it carries, and a worker in every Service delivers it and retries
// it while the Mailer fails, so no answer depends on the mail server and a restart loses
// no mail. Call Close on shutdown.
//
// Accounts come from an Accounts store (accounts.go): Gatehouse's own users table (UserStore)
// by default, or the application's own user store given with WithAccounts. Every login,
// lookup, registration, password reset and email verification goes through it, and the
// optional AccountRegistrar, PasswordSetter and EmailVerifier enable the last three (without
// one, its endpoints answer 404 through UnavailableError). Sessions, PIN challenges, mailed
// links and grants refer to an account by id alone. What only Gatehouse's own users have:
// the admin role, social-only accounts (Identities) and adding a password to one, and the
// operator's CreateUser, ChangeAccount and DeleteUser. Config.Registration (open, closed,
// or a hook given with WithBeforeRegister) decides who may create an account.
//
// The package declares the storage it needs as small interfaces gathered in Store; package
// storage implements them. Attempt counting is a Limiter (package ratelimit), injected like
// the Mailer. Logins, registrations, verifications and password changes are emitted as
// package events' events (WithEvents).
//
// A session records every authentication method it completed, and when (Session.Methods,
// in package acr's terms); AddSessionMethod adds one to a live session, for a step-up. For
// package factors the service counts wrong second-factor codes against the login lockout
// (ReserveFactorAttempt) and mails the notices of second-factor changes
// (MailFactorNotice). It imports nothing else of Gatehouse but events, acr and its
// internal helpers, so the provider and the social, permissions and factors packages can
// build on it.
package publicauth
