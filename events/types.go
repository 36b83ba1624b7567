package events

// Login methods this package adds to publicauth's (MethodPassword "password",
// MethodMagicLink "magic_link") and the upstream providers' ("google", "facebook",
// "oidc:<name>").
const (
	// MethodPIN is the method of a LoginFailed whose mailed PIN was wrong.
	MethodPIN = "pin"
	// MethodOperator is the method of a UserRegistered for an account an operator created
	// (the admin command line, provider.CreateUser).
	MethodOperator = "operator"
)

// Reasons of LoginFailed.
const (
	// ReasonBadCredentials: an unknown email, or a wrong password (told apart only by
	// LoginFailed.UserID, which is set for a known account).
	ReasonBadCredentials = "bad_credentials"
	// ReasonLocked: too many failed logins for the email; the password was not checked.
	ReasonLocked = "locked"
	// ReasonDisabled: the right credentials of a disabled account.
	ReasonDisabled = "disabled"
	// ReasonPINWrong: a wrong PIN; the challenge has tries left.
	ReasonPINWrong = "pin_wrong"
	// ReasonPINExhausted: the wrong PIN that used up the challenge's tries.
	ReasonPINExhausted = "pin_exhausted"
	// ReasonLinkInvalid: a magic link that is unknown, used or expired.
	ReasonLinkInvalid = "link_invalid"
)

// Reasons of FamilyRevoked and ConsentWithdrawn.
const (
	// ReasonRefreshTokenReuse: a refresh token was presented again after its rotation.
	ReasonRefreshTokenReuse = "refresh_token_reuse"
	// ReasonCodeReuse: an authorization code was presented again after its exchange.
	ReasonCodeReuse = "authorization_code_reuse"
	// ReasonPasswordReset: the user reset their password.
	ReasonPasswordReset = "password_reset"
	// ReasonPasswordAdded: a password was added to a social-only account.
	ReasonPasswordAdded = "password_added"
	// ReasonEmailVerified: the user's address was verified for the first time.
	ReasonEmailVerified = "email_verified"
	// ReasonUserDisabled: an operator disabled the account.
	ReasonUserDisabled = "user_disabled"
	// ReasonUserDeleted: an operator deleted the account.
	ReasonUserDeleted = "user_deleted"
	// ReasonPermissionRevoked: the user's permission for the client was revoked.
	ReasonPermissionRevoked = "permission_revoked"
)

// Kinds of TokenRevoked.
const (
	KindAccessToken  = "access_token"
	KindRefreshToken = "refresh_token"
)

// LoginSucceeded fires when a session starts: every factor passed (the PIN too, when the
// gate is on) and the session cookie is set.
type LoginSucceeded struct {
	Meta
	UserID string
	// Method is the first factor: "password", "magic_link", or the upstream provider
	// ("google", "facebook", "oidc:<name>").
	Method string
	// SessionKind is "public" (public-session) or "admin" (admin-session).
	SessionKind string
	// PIN is true when the PIN gate was on for the user, so a mailed PIN was accepted too.
	PIN bool
}

// LoginFailed fires when a login attempt is refused: a password login (bad credentials, a
// locked email, a disabled account), a wrong PIN, a magic link that does not log in, or a
// wrong, replayed or locked-out second-factor code. It never carries the email typed.
type LoginFailed struct {
	Meta
	// UserID is the account's id when one is known (a wrong password of an existing
	// account, a disabled account, a PIN challenge), else "".
	UserID string
	// Method is "password", "magic_link", MethodPIN, or a second factor: FactorTOTP,
	// MethodRecoveryCode.
	Method string
	// Reason is one of the Reason… constants of LoginFailed (ReasonBadCredentials, …).
	Reason string
}

// UserRegistered fires when an account is created: by the registration form or API, by a
// first upstream login, or by an operator.
type UserRegistered struct {
	Meta
	UserID string
	Email  string
	// Method is "password" (registration), the upstream provider ("google", …), or
	// MethodOperator.
	Method string
}

// EmailVerified fires when an account's address becomes verified by a verification link
// or a magic link. (A password reset or an added password verifies the address too;
// PasswordReset and PasswordAdded report those.)
type EmailVerified struct {
	Meta
	UserID string
	Email  string
}

// PasswordReset fires when a user set a new password through a reset link.
type PasswordReset struct {
	Meta
	UserID string
}

// PasswordAdded fires when a social-only account got a password (registration with its
// address, confirmed by its owner).
type PasswordAdded struct {
	Meta
	UserID string
}

// TokenIssued fires when the token endpoint issued tokens (RFC 6749 §5.1).
type TokenIssued struct {
	Meta
	// GrantType is "authorization_code", "refresh_token", "client_credentials" or
	// "urn:ietf:params:oauth:grant-type:device_code".
	GrantType string
	ClientID  string
	// Subject is the token's sub: the user's id, or the client's id for client_credentials.
	Subject string
	// UserBound is true for a user's token, false for a client_credentials token.
	UserBound bool
	// Scopes and Audience are those granted with the access token.
	Scopes   []string
	Audience []string
	// TokenID is the access token's jti, the id VerifyAccessToken's Claims and
	// introspection show; the token itself is never in an event.
	TokenID string
	// GrantID names the grant: the same for a code's tokens and every refresh of them, and
	// the GrantID of a later TokenRevoked or FamilyRevoked of that grant.
	GrantID string
	// RefreshToken is true when a refresh token was issued (rotated, for refresh_token).
	RefreshToken bool
	// IDToken is true when an ID token was issued.
	IDToken bool
}

// TokenRevoked fires when a client revoked one of its tokens at the revocation endpoint
// (RFC 7009). Revoking a refresh token revokes every token of its grant.
type TokenRevoked struct {
	Meta
	// Kind is KindAccessToken or KindRefreshToken: the token presented.
	Kind     string
	ClientID string
	// Subject is the token's sub (a user's id, or the client's for client_credentials).
	Subject string
	GrantID string
}

// FamilyRevoked fires when Gatehouse itself revoked a family of tokens: one grant, on the
// reuse of a spent refresh token or authorization code, or every grant of a user (at one
// client, or at all) on a credential change, a disabled or deleted account, or a revoked
// permission.
type FamilyRevoked struct {
	Meta
	// Reason is one of the Reason… constants of FamilyRevoked (ReasonRefreshTokenReuse, …).
	Reason string
	// Subject is the user (or, for a client_credentials grant, the client) whose tokens
	// were revoked.
	Subject string
	// ClientID is the client whose tokens were revoked; "" for every client.
	ClientID string
	// GrantID is the one grant revoked on reuse; "" when every grant of Subject was.
	GrantID string
}

// ConsentGranted fires when a user allowed a client on the consent page.
type ConsentGranted struct {
	Meta
	UserID   string
	ClientID string
	// Scopes are every scope the user has now granted the client, earlier grants included.
	Scopes []string
}

// ConsentWithdrawn fires when a user's consents were withdrawn, so the clients ask again:
// on a credential change, a disabled or deleted account.
type ConsentWithdrawn struct {
	Meta
	UserID string
	// ClientID is the client whose consent was withdrawn; "" for every client.
	ClientID string
	// Reason is one of the Reason… constants of FamilyRevoked.
	Reason string
}

// PermissionChanged fires when a permission record of a user for a client was created or
// changed (package permissions), together with its audit entry.
type PermissionChanged struct {
	Meta
	UserID   string
	ClientID string
	// Action is "update", "revoke" or "request-access".
	Action string
	// ActorKind is "admin", "client" or "user"; ActorID the admin's user id, the client's
	// id, or the user's id.
	ActorKind string
	ActorID   string
	// OldStatus and OldRole are "" when the record was created.
	OldStatus string
	OldRole   string
	NewStatus string
	NewRole   string
}

// Name implements Event.
func (*LoginSucceeded) Name() string { return "login.succeeded" }

// Name implements Event.
func (*LoginFailed) Name() string { return "login.failed" }

// Name implements Event.
func (*UserRegistered) Name() string { return "user.registered" }

// Name implements Event.
func (*EmailVerified) Name() string { return "email.verified" }

// Name implements Event.
func (*PasswordReset) Name() string { return "password.reset" }

// Name implements Event.
func (*PasswordAdded) Name() string { return "password.added" }

// Name implements Event.
func (*TokenIssued) Name() string { return "token.issued" }

// Name implements Event.
func (*TokenRevoked) Name() string { return "token.revoked" }

// Name implements Event.
func (*FamilyRevoked) Name() string { return "token.family_revoked" }

// Name implements Event.
func (*ConsentGranted) Name() string { return "consent.granted" }

// Name implements Event.
func (*ConsentWithdrawn) Name() string { return "consent.withdrawn" }

// Name implements Event.
func (*PermissionChanged) Name() string { return "permission.changed" }

// IdentityLinked fires when an upstream identity (a social or OpenID Connect login) was
// linked to an existing account. A first upstream login that creates the account is a
// UserRegistered instead.
type IdentityLinked struct {
	Meta
	UserID string
	// Provider is the upstream provider: "google", "facebook", "oidc:<name>".
	Provider string
}

// Actions of ClientChanged.
const (
	ClientCreated       = "created"
	ClientUpdated       = "updated"
	ClientSecretRotated = "secret_rotated"
	ClientDeleted       = "deleted"
)

// ClientChanged fires when an operator created, changed, deleted a client, or rotated its
// secret (the admin command line, provider.CreateClient and its siblings). It never carries
// the secret.
type ClientChanged struct {
	Meta
	ClientID string
	// Action is one of ClientCreated, ClientUpdated, ClientSecretRotated, ClientDeleted.
	Action string
}

// KeyAdded fires when a signing key was added: by an operator's rotation, or on schedule.
type KeyAdded struct {
	Meta
	KID       string
	Algorithm string
	// Scheduled is true for a rotation by Config.KeyRotationInterval.
	Scheduled bool
}

// Name implements Event.
func (*IdentityLinked) Name() string { return "identity.linked" }

// Name implements Event: "client.created", "client.updated", "client.secret_rotated" or
// "client.deleted".
func (e *ClientChanged) Name() string { return "client." + e.Action }

// Name implements Event.
func (*KeyAdded) Name() string { return "key.added" }
