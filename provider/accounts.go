package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// Account is a user account as an Accounts store keeps it: publicauth.Account. Its ID is
// the `sub` of the account's tokens and any non-empty string ("42" is fine).
type Account = publicauth.Account

// Accounts is the application's own user store, given with WithAccounts:
// publicauth.Accounts, whose doc states the contract (AccountByID, AccountByEmail,
// Authenticate, and the errors ErrAccountNotFound and ErrBadCredentials).
type Accounts = publicauth.Accounts

// AccountRegistrar, PasswordSetter and EmailVerifier are the optional abilities of an
// Accounts store (publicauth's): each enables registration, password reset and email
// verification. Without one, that feature's endpoints answer 404 Not Found in the spec's
// error shape, the hosted pages offer no link to it, and discovery's
// gatehouse_account_features leaves it out.
type (
	AccountRegistrar = publicauth.AccountRegistrar
	PasswordSetter   = publicauth.PasswordSetter
	EmailVerifier    = publicauth.EmailVerifier
)

// RegisterRequest is an account to create, validated: publicauth.RegisterRequest. Its
// Password is the plaintext, handed only to the AccountRegistrar and the WithBeforeRegister
// hook; Gatehouse never logs it.
type RegisterRequest = publicauth.RegisterRequest

// RegistrationMode is Config.Registration: RegistrationOpen, RegistrationClosed or
// RegistrationHook.
type RegistrationMode = publicauth.RegistrationMode

// Registration modes (Config.Registration).
const (
	RegistrationOpen   = publicauth.RegistrationOpen
	RegistrationClosed = publicauth.RegistrationClosed
	RegistrationHook   = publicauth.RegistrationHook
)

// Errors an Accounts store returns (besides ErrEmailTaken, RegisterAccount's answer for an
// email in use).
var (
	// ErrAccountNotFound: no account has that id or email.
	ErrAccountNotFound = publicauth.ErrAccountNotFound
	// ErrBadCredentials: Authenticate's one answer for an unknown email, an account without
	// a password and a wrong password.
	ErrBadCredentials = publicauth.ErrBadCredentials
	// ErrAccountDisabled: Authenticate may return it for a disabled account whose password
	// matched (or return the account with Disabled set).
	ErrAccountDisabled = publicauth.ErrAccountDisabled
)

// accountOptions are the options of this file.
type accountOptions struct {
	accounts       Accounts
	claims         func(context.Context, ClaimsRequest) (map[string]any, error)
	beforeRegister func(context.Context, RegisterRequest) error
}

// WithAccounts keeps the provider's accounts in a instead of Gatehouse's own users table:
// password login (JSON API and hosted page), sessions, the PIN gate (Account.RequirePIN, or
// PublicAuthConfig.RequirePIN), magic links, userinfo and the permission routes look
// accounts up through it, and tokens carry the account's id as `sub`. Sessions, consents,
// PIN challenges, mailed links and permission records refer to the account by id and need
// no row in Gatehouse's users table. Registration, password reset and email verification
// work when a also implements AccountRegistrar, PasswordSetter and EmailVerifier.
//
// What needs Gatehouse's own users stays with them: the admin role (so `admin-session`,
// POST /api/admin/login and the admin routes by session; client tokens with
// manage_permissions still manage permissions), social and upstream login (New fails when
// Config.Social enables any together with WithAccounts), adding a password to a
// social-only account, and the user administration of package provider and the CLI.
// Rate limits and the login lockout apply as before; Authenticate should take as long for
// an unknown email as for a wrong password. WithAccounts(nil) is an error.
func WithAccounts(a Accounts) Option {
	return func(o *options) error {
		if a == nil {
			return errors.New("provider: WithAccounts(nil)")
		}
		o.accounts = a
		return nil
	}
}

// WithBeforeRegister gives the hook Config.Registration RegistrationHook asks before it
// creates an account (registration, and a first social login, asked with an empty
// Password): nil lets it through; RefuseRegistration(message) refuses it with 403 Forbidden
// and message shown to the user; any other error is logged and answered 500. New fails
// when the mode is "hook" without a hook, or a hook is given with another mode.
func WithBeforeRegister(hook func(ctx context.Context, r RegisterRequest) error) Option {
	return func(o *options) error {
		if hook == nil {
			return errors.New("provider: WithBeforeRegister(nil)")
		}
		o.beforeRegister = hook
		return nil
	}
}

// RefuseRegistration is the error a WithBeforeRegister hook returns to refuse an account:
// the user sees message, with 403 Forbidden in the spec's error shape
// ({"error": "Forbidden", "message": message}) or on the hosted page.
func RefuseRegistration(message string) error {
	return publicauth.RefuseRegistration(message)
}

// Tokens a ClaimsRequest is made for.
const (
	ClaimsIDToken     = "id_token"
	ClaimsAccessToken = "access_token"
	ClaimsUserinfo    = "userinfo"
)

// ClaimsRequest tells a WithClaims function what the claims are for.
type ClaimsRequest struct {
	// Token is ClaimsIDToken, ClaimsAccessToken or ClaimsUserinfo.
	Token string
	// ClientID is the client the token was, or is being, issued to.
	ClientID string
	// Subject is the token's `sub`: the account id, or the client id for client_credentials.
	Subject string
	// Scopes are the scopes granted.
	Scopes []string
	// Account is the account, read fresh from the Accounts store; nil for client_credentials.
	Account *Account
}

// WithClaims adds the claims fn returns to ID tokens and access tokens (asked at every
// token request: authorization_code, refresh_token, and client_credentials with a nil
// Account) and to the userinfo response (asked on every call). fn must be safe for
// concurrent use and quick: it runs inside the token request. An error from fn fails that
// token request with server_error (and userinfo with 500), and is logged.
//
// fn cannot change what Gatehouse sets: a returned claim named in ReservedClaims (iss, sub,
// aud, exp, iat, nbf, jti, auth_time, nonce, acr, amr, azp, at_hash, c_hash, sid, scope,
// client_id, email, email_verified, name, updated_at, …) is dropped, and each drop is
// logged as an error. The values must encode as JSON.
//
// Account.Claims of the Accounts store are not fn's business: the standard claims among
// them follow their scopes and the `claims` parameter (claims.go), the others go into
// userinfo and the ID token (as decided when the user authorized the client) when the
// `profile` scope is granted, under the same rule; fn's claims win over them.
func WithClaims(fn func(ctx context.Context, r ClaimsRequest) (map[string]any, error)) Option {
	return func(o *options) error {
		if fn == nil {
			return errors.New("provider: WithClaims(nil)")
		}
		o.claims = fn
		return nil
	}
}

// ReservedClaims are the claims Gatehouse sets or that carry protocol meaning: neither
// WithClaims nor Account.Claims can set them.
var ReservedClaims = []string{
	"iss", "sub", "aud", "exp", "iat", "nbf", "jti", "auth_time", "nonce", "acr", "amr", "azp",
	"at_hash", "c_hash", "s_hash", "sid", "scope", "client_id", "cnf", "act", "may_act", "rat",
	"email", "email_verified", "name", "updated_at", claimGrantID, claimIssuedMicros, claimUserinfoRequest,
}

// addClaims copies extra into dst, leaving out every reserved claim; each one left out is
// logged, naming source.
func addClaims(ctx context.Context, log *slog.Logger, dst, extra map[string]any, source string) {
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		if slices.Contains(ReservedClaims, name) {
			log.ErrorContext(ctx, "provider: a claim Gatehouse sets cannot be overridden; dropped", "claim", name, "source", source)
			continue
		}
		dst[name] = extra[name]
	}
}

// accountClaims adds the account's own claims (Account.Claims) to dst when the `profile`
// scope is granted. The standard claims among them are left to releaseStandardClaims,
// which releases them by their own scope, as it does for Gatehouse's own users.
func (p *Provider) accountClaims(ctx context.Context, dst map[string]any, user *publicauth.User, scopes fosite.Arguments) {
	if !scopes.Has("profile") || len(user.Claims) == 0 {
		return
	}
	own := make(map[string]any, len(user.Claims))
	for name, value := range user.Claims {
		if standardClaimScope(name) == "" || slices.Contains(ReservedClaims, name) {
			own[name] = value
		}
	}
	addClaims(ctx, p.log, dst, own, "Account.Claims")
}

// customClaims asks the WithClaims function, if any, for the claims of r and adds them to
// dst. An error is the function's, wrapped.
func (p *Provider) customClaims(ctx context.Context, dst map[string]any, r ClaimsRequest) error {
	if p.claims == nil {
		return nil
	}
	extra, err := p.claims(ctx, r)
	if err != nil {
		return fmt.Errorf("provider: WithClaims for %s: %w", r.Token, err)
	}
	addClaims(ctx, p.log, dst, extra, "WithClaims")
	return nil
}

// accountOf is the Account a User of publicauth stands for.
func accountOf(u *publicauth.User) *Account {
	return &Account{
		ID: u.ID, Email: u.Email, EmailVerified: u.EmailVerified, Name: u.Name,
		Disabled: u.Status != publicauth.StatusActive, RequirePIN: u.RequirePIN, Claims: u.Claims,
	}
}

// tokenClaimsKey carries a token request's tokenClaimer on its context to the strategies
// that sign the tokens: only they see the granted scopes (fosite grants a code's scopes
// while it issues the tokens), and fosite's authorization_code handler signs the ID token
// from the session stored at authorization, which the token endpoint cannot change.
type tokenClaimsKey struct{}

// tokenClaimer asks the WithClaims function for the claims of the tokens of one request.
type tokenClaimer struct {
	p                 *Provider
	clientID, subject string
	account           *Account
}

// claims returns the claims of the token (ClaimsAccessToken or ClaimsIDToken) issued with
// scopes, reserved claims left out.
func (c *tokenClaimer) claims(ctx context.Context, token string, scopes []string) (map[string]any, error) {
	extra := map[string]any{}
	err := c.p.customClaims(ctx, extra, ClaimsRequest{
		Token: token, ClientID: c.clientID, Subject: c.subject, Scopes: scopes, Account: c.account,
	})
	if err != nil {
		c.p.log.ErrorContext(ctx, "token request failed", "error", err)
		return nil, err
	}
	return extra, nil
}

// withTokenClaims checks the account of a user grant that ar is about to issue tokens for,
// and returns ctx carrying what the token strategies need to ask the WithClaims function
// for the claims of its tokens. The account is read when WithClaims needs it, and always
// with WithAccounts: the application may have disabled or deleted it without Gatehouse
// knowing, and then the grant ends (invalid_grant). Gatehouse's own users revoke their
// grants when that happens, so without WithClaims they cost no read. A failed lookup is
// server_error.
func (p *Provider) withTokenClaims(ctx context.Context, ar fosite.AccessRequester, session *Session) (context.Context, error) {
	own := p.auth.Abilities().OwnAccounts
	if p.claims == nil && (own || !session.UserBound) {
		return ctx, nil
	}
	c := &tokenClaimer{p: p, clientID: ar.GetClient().GetID(), subject: session.Subject}
	if session.UserBound {
		u, err := p.auth.UserByID(ctx, session.Subject)
		switch {
		case errors.Is(err, publicauth.ErrUserNotFound) || (err == nil && u.Status != publicauth.StatusActive):
			return nil, fosite.ErrInvalidGrant.WithHint("The account of this grant no longer exists or is disabled.")
		case err != nil:
			return nil, fosite.ErrServerError.WithWrap(err).WithDebug(err.Error())
		}
		c.account = accountOf(u)
	}
	if p.claims == nil {
		return ctx, nil
	}
	return context.WithValue(ctx, tokenClaimsKey{}, c), nil
}

// tokenClaimsFor returns the claims of the WithClaims function for the token issued by r,
// or none without WithClaims, and for an access token bound to a DPoP key its cnf claim.
// An error of the function is fosite's server_error.
func tokenClaimsFor(ctx context.Context, token string, r fosite.Requester) (map[string]any, error) {
	var extra map[string]any
	if c, _ := ctx.Value(tokenClaimsKey{}).(*tokenClaimer); c != nil {
		var err error
		if extra, err = c.claims(ctx, token, r.GetGrantedScopes()); err != nil {
			return nil, fosite.ErrServerError.WithWrap(err).WithDebug(err.Error())
		}
	}
	// An access token bound to a DPoP key confirms it (cnf, reserved: WithClaims cannot
	// set it).
	if cnf := confirmation(ctx); cnf != nil && token == ClaimsAccessToken {
		if extra == nil {
			extra = map[string]any{}
		}
		extra["cnf"] = cnf
	}
	return extra, nil
}
