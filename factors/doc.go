// Package factors keeps the second factors of an account and checks them: TOTP
// authenticator apps (RFC 6238), passkeys (WebAuthn Level 3, also as a sign-in of their
// own) and single-use recovery codes. It is the domain layer only: the pages and the
// authorization endpoint call it with plain Go values and JSON-able WebAuthn options, and
// record what it returns (an acr.Method) on the session with publicauth's
// AddSessionMethod.
//
//	svc, err := factors.New(factors.Config{Issuer: "https://id.example.com", RecoveryCodeKey: key},
//		store, factors.WithSealer(sealer), factors.WithLockout(auth), factors.WithNotifier(auth))
//
//	enrol, _ := svc.BeginTOTP(ctx, factors.Account{ID: u.ID, Name: u.Email})  // show enrol.QRCodePNG and enrol.Secret
//	err = svc.ConfirmTOTP(ctx, u.ID, "123456")                                 // the first code from the app
//	m, err := svc.VerifyTOTP(ctx, u.ID, code)                                  // at a login: m goes on the session
//
// Every factor is keyed by account id alone, so accounts kept outside Gatehouse
// (provider.WithAccounts) have factors too. The package declares what it needs as small
// interfaces: Store (package storage implements it, in the same transactions as the rest
// of Gatehouse), a Sealer that encrypts TOTP secrets at rest, a Lockout that counts wrong
// codes with the login lockout, and a Notifier that mails the owner about changes
// (publicauth's Service is both). Every change is a typed event of package events
// (FactorAdded, FactorRemoved, RecoveryCodeUsed, PasskeyCloneSuspected), recorded in the
// audit trail in the change's transaction, and the owner's mail goes out in that
// transaction too.
//
// # TOTP
//
// A secret of 160 bits (RFC 4226 §4), SHA-1, 6 digits, 30-second steps: what every
// authenticator app reads from the otpauth:// URI. BeginTOTP keeps the new secret as a
// pending enrolment (sealed, for TOTPEnrolmentLifespan); the first right code confirms
// it. A code is accepted at most once: the last accepted time step is stored and a code
// of that step or an earlier one is refused (RFC 6238 §5.2) by one conditional update,
// so of two uses of one code at the same moment exactly one wins. One step of clock drift
// either way is allowed (§5.2's recommendation), two are not. Every try counts against
// the lockout before the code is compared (in constant time), and a right code clears it.
//
// # Recovery codes
//
// Ten codes of ten characters of Crockford's base-32 alphabet (50 bits each), shown
// once, grouped as XXXXX-XXXXX; input is read without case, dashes or spaces, O as 0 and
// I or L as 1. Only their HMAC-SHA-256 under Config.RecoveryCodeKey (bound to the account)
// is stored, so a database dump yields no code. A code is found by its keyed hash, which
// is as good as a constant-time comparison: what a lookup's timing could reveal is how
// the hash of the typed code relates to stored hashes, and without the key no one can
// aim a guess at a hash. A code is spent by one conditional update (of two uses at once,
// one wins); generating a set replaces the old one in the same transaction. Using one is
// a security event and mails the owner.
//
// # Passkeys
//
// Registration asks for a discoverable credential (resident key required), user
// verification preferred and attestation none. The relying party id is the host of
// Config.Issuer and the only accepted origin its origin: a mounted issuer path does not
// change them, but moving the issuer to another host does, and every passkey registered
// under the old host stops working there (the authenticator binds it to the old id), so
// users then sign in another way and register their passkeys again; TOTP and recovery
// codes are unaffected. Passkeys of another relying party id are listed as not Usable.
// An issuer whose host is an IP address has no passkeys (WebAuthn allows domain names
// only): Available says why.
//
// Ceremony state (the challenge) is kept server-side, keyed by the SHA-256 of an opaque
// random id, single use and valid for CeremonyLifespan, so any replica can finish a
// ceremony another began. Each account has a random 32-byte user handle of its own (never
// its id), by which a passwordless login finds the account.
//
// The signature counter and the backup-eligible and backup-state flags are kept. A counter
// that does not go up (neither it nor the stored one being 0, which synced passkeys
// always report) means the private key may have been copied (WebAuthn §6.1.1): the login
// is refused, the passkey marked and refused from then on, a PasskeyCloneSuspected event
// emitted and a warning logged. Refusing is the safe side: a copy would otherwise keep
// working, and a user locked out of one passkey still has the factor they used to enrol
// it, recovery codes and the admin reset; removing the marked passkey and registering
// again restores it. Two ceremonies finished in parallel with one authenticator can trip
// it too, which is rare and errs the same safe way.
package factors
