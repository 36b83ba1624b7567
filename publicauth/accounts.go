package publicauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Account is a user account as an Accounts store keeps it. Its ID is the `sub` of every
// token issued for it, and the key sessions, consents, PIN challenges, mailed links and
// permission records refer to it by: any non-empty string (a UUID, "42").
type Account struct {
	ID            string
	Email         string
	EmailVerified bool
	Name          string
	// Disabled refuses every login, session and token of the account.
	Disabled bool
	// RequirePIN turns the PIN gate on for the account: a password or magic-link login asks
	// for a one-time PIN sent by mail to Email before the session starts.
	RequirePIN bool
	// Claims are further claims of the account (for example "groups", "given_name"). The
	// OpenID Connect standard claims among them (given_name, locale, phone_number, address,
	// …) are released as Gatehouse's own users' are: by their scope (profile, phone,
	// address) at userinfo, and in the ID token only when the `claims` parameter asks. The
	// others go into the userinfo response and the ID token when the grant holds the
	// `profile` scope. A claim that Gatehouse sets itself (sub, iss, email, …) is dropped.
	// May be nil.
	Claims map[string]any
}

// Accounts is where the Service's accounts live: Gatehouse's own users table by default,
// or the embedding application's own user store (provider.WithAccounts). Every login,
// lookup, registration, password reset and email verification of the Service goes through
// it; rate limits, the login lockout, the PIN gate, sessions, mailed links and token
// revocation stay in the Service for every store.
//
// Implementations must be safe for concurrent use. A store may also implement
// AccountRegistrar, PasswordSetter and EmailVerifier; each enables the feature that needs
// it, and without it that feature answers 404 (see Describe).
type Accounts interface {
	// AccountByID returns the account with that id, or ErrAccountNotFound.
	AccountByID(ctx context.Context, id string) (*Account, error)
	// AccountByEmail returns the account with that email address, or ErrAccountNotFound.
	// email is trimmed and a syntactically valid address; comparing addresses is the
	// store's rule (Gatehouse's own store compares EmailKey).
	AccountByEmail(ctx context.Context, email string) (*Account, error)
	// Authenticate returns the account whose email and password these are, or
	// ErrBadCredentials for an unknown email, an account without a password or a wrong
	// password: one error for all three, so the answer tells nothing about which accounts
	// exist (the store should also take as long for each). A disabled account whose password
	// matched may be returned with Disabled set, or as ErrAccountDisabled; the Service
	// refuses both with 403. The Service counts attempts (the lockout) before calling it.
	Authenticate(ctx context.Context, email, password string) (*Account, error)
}

// RegisterRequest is an account to create: what POST /api/public/register and the hosted
// registration page were sent, already validated (Email a trimmed bare address, Password
// passing the password rule, Name trimmed and not empty). Password is the plaintext: it is
// handed only to the AccountRegistrar and the hook of Config.Registration, and never logged.
type RegisterRequest struct {
	Email    string
	Name     string
	Password string
}

// AccountRegistrar is an Accounts store that creates accounts: it enables registration
// (POST /api/public/register, the hosted page). Without it, registration answers 404.
type AccountRegistrar interface {
	// RegisterAccount creates the account r describes, its email not yet verified unless
	// the store knows better, and returns it; ErrEmailTaken when the email is in use.
	RegisterAccount(ctx context.Context, r RegisterRequest) (*Account, error)
}

// PasswordSetter is an Accounts store that changes passwords: it enables password reset
// (POST /api/public/request-password-reset, /api/public/reset-password and the hosted
// form). Without it, those answer 404.
type PasswordSetter interface {
	// SetPassword replaces the password of the account with that id by password (plaintext,
	// already checked against the password rule); ErrAccountNotFound for no such account.
	SetPassword(ctx context.Context, id, password string) error
}

// EmailVerifier is an Accounts store that records a verified address: it enables the
// verification mail of a registration, POST /api/public/resend-verification and the link
// it mails. Without it, no verification mail goes out and those answer 404; a magic link
// still logs in, it only records nothing.
type EmailVerifier interface {
	// MarkEmailVerified records that the account with that id proved its address;
	// ErrAccountNotFound for no such account.
	MarkEmailVerified(ctx context.Context, id string) error
}

// Errors of an Accounts store. They are the Service's own sentinels under the names the
// Accounts contract uses, so errors.Is matches either name.
var (
	// ErrAccountNotFound: no account has that id or email.
	ErrAccountNotFound = ErrUserNotFound
	// ErrBadCredentials: an unknown email, no password, or a wrong password.
	ErrBadCredentials = ErrInvalidCredentials
)

// Features an Accounts store may lack (UnavailableError.Feature).
const (
	FeatureRegistration      = "registration"
	FeaturePasswordReset     = "password reset"
	FeatureEmailVerification = "email verification"
)

// UnavailableError answers a request for a feature that the Accounts store does not
// support (it lacks AccountRegistrar, PasswordSetter or EmailVerifier): 404 Not Found,
// "<feature> is not available".
type UnavailableError struct {
	Feature string
}

func (e *UnavailableError) Error() string { return e.Feature + " is not available" }

// RegistrationMode says who may create an account (Config.Registration).
type RegistrationMode string

// Registration modes.
const (
	// RegistrationOpen: anyone may register (the default).
	RegistrationOpen RegistrationMode = "open"
	// RegistrationClosed: nobody may; registration answers 403 Forbidden whatever the email
	// (adding a password to a social-only account included), the hosted pages offer no link
	// to it, and a social or upstream login creates no account (it still links to an
	// existing account with the same verified email).
	RegistrationClosed RegistrationMode = "closed"
	// RegistrationHook: a registration is created only when the hook given with
	// WithBeforeRegister accepts it.
	RegistrationHook RegistrationMode = "hook"
)

// RefusedError is a registration the hook of RegistrationHook refused: 403 Forbidden
// with Message shown to the user. Build it with RefuseRegistration.
type RefusedError struct {
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// RefuseRegistration returns the error a hook of RegistrationHook returns to refuse a
// registration with message, which the user is shown (403 Forbidden). Any other error of
// the hook is an internal error: logged, answered 500.
func RefuseRegistration(message string) error {
	return &RefusedError{Message: message}
}

// ErrRegistrationClosed: registration is RegistrationClosed (403 Forbidden).
var ErrRegistrationClosed = errors.New("registration is closed")

// ownAccounts is Gatehouse's own users table as Accounts: the default store. It hashes
// passwords with argon2id through the Service's hash pool. Besides the Accounts methods it
// hands the Service the stored users themselves (userStore), with the fields only Gatehouse
// keeps (role, password hash, linked providers), so the default path reads each user once.
type ownAccounts struct {
	s *Service
}

var (
	_ Accounts         = ownAccounts{}
	_ AccountRegistrar = ownAccounts{}
	_ PasswordSetter   = ownAccounts{}
	_ EmailVerifier    = ownAccounts{}
	_ userStore        = ownAccounts{}
)

func (o ownAccounts) AccountByID(ctx context.Context, id string) (*Account, error) {
	return accountOf(o.userByID(ctx, id))
}

func (o ownAccounts) AccountByEmail(ctx context.Context, email string) (*Account, error) {
	return accountOf(o.userByEmail(ctx, email))
}

func (o ownAccounts) Authenticate(ctx context.Context, email, password string) (*Account, error) {
	return accountOf(o.authenticate(ctx, email, password))
}

// RegisterAccount creates a user with role RoleUser, status StatusActive and a random UUID
// v4 as id.
func (o ownAccounts) RegisterAccount(ctx context.Context, r RegisterRequest) (*Account, error) {
	return accountOf(o.register(ctx, r))
}

// SetPassword hashes password and stores it on the user; it marks nothing verified.
func (o ownAccounts) SetPassword(ctx context.Context, id, password string) error {
	hash, err := o.s.newPasswordHash(ctx, password)
	if err != nil {
		return err
	}
	if _, err := o.s.store.ChangeUser(ctx, id, UserChange{PasswordHash: &hash}); err != nil {
		return fmt.Errorf("publicauth: set password: %w", err)
	}
	return nil
}

func (o ownAccounts) MarkEmailVerified(ctx context.Context, id string) error {
	verified := true
	if _, err := o.s.store.ChangeUser(ctx, id, UserChange{EmailVerified: &verified}); err != nil {
		return fmt.Errorf("publicauth: mark email verified: %w", err)
	}
	return nil
}

func (o ownAccounts) userByID(ctx context.Context, id string) (*User, error) {
	return o.s.store.UserByID(ctx, id)
}

func (o ownAccounts) userByEmail(ctx context.Context, email string) (*User, error) {
	return o.s.store.UserByEmail(ctx, email)
}

func (o ownAccounts) authenticate(ctx context.Context, email, password string) (*User, error) {
	return o.s.verifyCredentials(ctx, email, password)
}

func (o ownAccounts) register(ctx context.Context, r RegisterRequest) (*User, error) {
	return o.s.createUser(ctx, UserInput{Email: r.Email, Password: r.Password, Name: r.Name, Role: RoleUser})
}

// userStore is how the Service reads its accounts as Users: Gatehouse's own store hands
// over its rows (ownAccounts), any other Accounts store goes through accountUsers.
type userStore interface {
	userByID(ctx context.Context, id string) (*User, error)
	userByEmail(ctx context.Context, email string) (*User, error)
	authenticate(ctx context.Context, email, password string) (*User, error)
	register(ctx context.Context, r RegisterRequest) (*User, error)
}

// accountUsers reads the accounts of an Accounts store given with WithAccounts as Users:
// role RoleUser, status from Disabled, a password (the store's), no linked providers.
type accountUsers struct {
	accounts Accounts
	// registrar is accounts as an AccountRegistrar, or nil.
	registrar AccountRegistrar
}

func (a accountUsers) userByID(ctx context.Context, id string) (*User, error) {
	return userOf(a.accounts.AccountByID(ctx, id))
}

func (a accountUsers) userByEmail(ctx context.Context, email string) (*User, error) {
	return userOf(a.accounts.AccountByEmail(ctx, email))
}

func (a accountUsers) authenticate(ctx context.Context, email, password string) (*User, error) {
	u, err := userOf(a.accounts.Authenticate(ctx, email, password))
	switch {
	case errors.Is(err, ErrAccountNotFound):
		return nil, ErrBadCredentials
	case err != nil:
		return nil, err
	case u.Status != StatusActive:
		return u, ErrAccountDisabled // the account, for the LoginFailed event
	}
	return u, nil
}

func (a accountUsers) register(ctx context.Context, r RegisterRequest) (*User, error) {
	return userOf(a.registrar.RegisterAccount(ctx, r))
}

// accountOf is the Account of a stored user (passing an error through).
func accountOf(u *User, err error) (*Account, error) {
	if err != nil {
		return nil, err
	}
	return &Account{
		ID:            u.ID,
		Email:         u.Email,
		EmailVerified: u.EmailVerified,
		Name:          u.Name,
		Disabled:      u.Status != StatusActive,
		RequirePIN:    u.RequirePIN,
		Claims:        u.Claims,
	}, nil
}

// userOf is the User of an account of another store (passing an error through). A store
// that answers no account and no error is a bug of the store: it becomes an error.
func userOf(a *Account, err error) (*User, error) {
	if err != nil {
		return nil, err
	}
	if a == nil || strings.TrimSpace(a.ID) == "" {
		return nil, errors.New("publicauth: the Accounts store returned no account and no error")
	}
	status := StatusActive
	if a.Disabled {
		status = StatusDisabled
	}
	return &User{
		ID:            a.ID,
		Email:         a.Email,
		EmailVerified: a.EmailVerified,
		Name:          a.Name,
		Role:          RoleUser,
		Status:        status,
		RequirePIN:    a.RequirePIN,
		Claims:        a.Claims,
		external:      true,
	}, nil
}
