// Package acr decides what the authentication methods a login session completed amount to:
// the RFC 8176 `amr` values a token states, the `acr` of the ordered set Gatehouse publishes
// as `acr_values_supported`, and, for a requirement (an acr and a max_age), the one method to
// ask for next. It is pure: no I/O, no clock (callers pass times), no state. Package
// publicauth records each completed Method on the session, package factors produces the
// second-factor ones, and the authorization endpoint asks Next what is missing.
//
//	lvl := acr.Assess(session.Methods, time.Time{}) // lvl.ACR, lvl.AMR, lvl.AuthTime for the ID token
//	step := acr.Next(session.Methods, acr.Requirement{ACR: acr.TwoFactor, NotBefore: acr.MaxAgeCutoff(now, maxAge)},
//		[]string{acr.Password, acr.TOTP, acr.RecoveryCode})
//	switch {
//	case step.Met: // issue the code
//	case len(step.Ask) > 0: // ask for one of step.Ask, append it to the session, call Next again
//	case len(step.Enrol) > 0: // lead the user through enrolling one of step.Enrol
//	default: // unmet_authentication_requirements
//	}
//
// # Factors
//
// Methods fall into classes, and a session has as many factors as classes among the
// methods that count, plus one for a passkey whose authenticator verified the user itself
// (WebAuthn's UV flag: a PIN or biometric on the device):
//
//   - knowledge: Password;
//   - an account elsewhere: MagicLink and PIN (both mailed) and an upstream login (Google,
//     Facebook, an OpenID Connect provider). They are one class because one compromised
//     mailbox, or the upstream account that is often the same mailbox, yields all of them:
//     an emailed code or link never counts as the second factor after an emailed first
//     factor or an upstream login (Kratos once accepted email as both);
//   - an enrolled authenticator: TOTP, RecoveryCode, Passkey.
//
// # The acr set, in order
//
//	OneFactor          "urn:gatehouse:acr:1fa"  any one factor
//	TwoFactor          "urn:gatehouse:acr:2fa"  two factors
//	PhishingResistant  "phr"                    two factors, one of them a passkey
//
// Each level includes those before it (Meets). PhishingResistant is the OpenID Extended
// Authentication Profile's "phr": an attacker who relays the login pages learns nothing that
// completes a WebAuthn assertion, which is bound to the origin. Its stronger sibling "phrh"
// (hardware-protected keys) is not offered: passkeys are registered without attestation, so
// nothing proves where a key lives. One-factor and two-factor have no registered names, so
// they are URNs of Gatehouse's own, which a relying party compares as opaque strings.
//
// # amr values
//
// RFC 8176 §2 values where one applies: Password is "pwd"; TOTP "otp"; a device-bound passkey
// "hwk" and a synced one (backup eligible) "swk", plus "user" when the authenticator verified
// the user; "mfa" beside the specific values whenever the session has two factors or more.
// The registry has no value for mail or for recovery codes: a mailed link or PIN and a
// recovery code are one-time secrets, so they are "otp" too (as Zitadel and Authgear state
// emailed codes), never a private value no relying-party library knows. An upstream login is
// "fed", the value Microsoft Entra ID uses for a federated login; the registry has none.
// Without attestation hwk and swk are what the authenticator claims (its backup-eligible
// flag), not proven: see PhishingResistant above.
package acr
