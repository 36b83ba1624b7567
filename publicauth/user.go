package publicauth

import (
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
)

// Roles a user can hold. The role decides who may use the admin surface.
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
)

// Statuses of a user account. Only active users can log in.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
)

// Login methods: how a session's user authenticated. MethodPassword is also reported in
// loginMethods; a magic link is not a standing login method of an account, so
// MethodMagicLink only marks sessions.
const (
	MethodPassword  = "password"
	MethodMagicLink = "magic_link"
)

// User is a public user account.
type User struct {
	// ID is an opaque UUID string; it is the `sub` of every token issued for the user.
	ID string
	// Email as the user typed it. Its EmailKey is unique across all users.
	Email         string
	EmailVerified bool
	Name          string
	// PasswordHash is an argon2id PHC string, or empty for an account that has no password
	// (a social-only account).
	PasswordHash string
	Role         string
	Status       string
	// RequirePIN turns on the PIN gate for this user: a password or magic-link login asks
	// for a one-time PIN sent by mail before the session starts.
	RequirePIN bool
	// SocialProviders lists the social and upstream identity providers linked to the
	// account ("google", "facebook", "oidc:<name>"), sorted; it feeds LoginMethods.
	SocialProviders []string
	// Claims are the further claims of an account from a store given with WithAccounts
	// (Account.Claims); nil for Gatehouse's own users.
	Claims map[string]any
	// Profile is the OpenID Connect standard profile of Gatehouse's own users; the zero
	// Profile for an account of a store given with WithAccounts (its Claims carry it).
	Profile   Profile
	CreatedAt time.Time
	UpdatedAt time.Time

	// external marks an account of a store given with WithAccounts: it has a password
	// there (never a PasswordHash here), role RoleUser and no linked providers.
	external bool
}

// HasPassword reports whether the account can log in with a password: a Gatehouse user with
// a password hash, or any account of a store given with WithAccounts.
func (u *User) HasPassword() bool {
	return u.external || u.PasswordHash != ""
}

// LoginMethods lists how the user can log in, in a stable order.
func (u *User) LoginMethods() []string {
	methods := []string{}
	if u.HasPassword() {
		methods = append(methods, MethodPassword)
	}
	return append(methods, u.SocialProviders...)
}

// Session kinds: which cookie carries the session.
const (
	SessionPublic = "public"
	SessionAdmin  = "admin"
)

// Session is a server-side login session. The cookie carries a random token; the store keys
// the session by the SHA-256 hash of that token, so a database dump reveals no usable cookie.
type Session struct {
	// IDHash is the hex SHA-256 of the session token held in the cookie.
	IDHash string
	// SID is the session's public id: random, unrelated to the cookie's token, fixed for the
	// session's life. Relying parties see it as the `sid` claim of ID tokens and logout
	// tokens (OpenID Connect Back-Channel Logout 1.0).
	SID    string
	UserID string
	// Kind is SessionPublic or SessionAdmin.
	Kind string
	// Method is how the user authenticated (MethodPassword, …): the first factor.
	Method string
	// AuthTime is when the user actually authenticated; it becomes the ID token's auth_time.
	AuthTime time.Time
	// Methods are the authentication methods the session completed, and when, oldest
	// first: the first factor, a PIN the gate asked for, and every factor added later
	// (AddSessionMethod, a step-up). Package acr turns them into acr and amr. A session
	// stored before sessions kept them has none here: see CompletedMethods.
	Methods   []acr.Method
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CompletedMethods returns the session's Methods, or, for a session stored before sessions
// kept them, its Method completed at its AuthTime. CurrentSession returns sessions with
// Methods set this way.
func (s *Session) CompletedMethods() []acr.Method {
	if len(s.Methods) > 0 {
		return s.Methods
	}
	return []acr.Method{{Name: s.Method, At: s.AuthTime}}
}
