package publicauth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/gatehouse-id/gatehouse/events"
)

// UserInput is an account to create with Service.CreateUser.
type UserInput struct {
	// Email is required: a bare address, unique by EmailKey.
	Email string
	// Password is required and must pass the password rule.
	Password string
	// Name is optional for CreateUser (default: the email's local part); Register
	// requires it.
	Name string
	// Role is optional: RoleUser (the default when empty) or RoleAdmin.
	Role string
	// Verified is optional (default false): it marks the email address as already verified.
	Verified bool
	// RequirePIN is optional (default false): it turns the PIN gate on for the account.
	RequirePIN bool
}

// Registration is the outcome of Register.
type Registration struct {
	// User is the account: the one created, or the social-only account of the email.
	User *User
	// AccountLinking is true when the email belonged to a social-only account: no account
	// was created, the password goes to that account instead.
	AccountLinking bool
	// PasswordAdded is true when that account has the password now. AccountLinking without
	// it means a confirmation link was mailed and the account is unchanged until it is
	// opened (VerifyEmail).
	PasswordAdded bool
}

// Register handles the registration form (POST /api/public/register). The email is trimmed
// and must be a bare address, the password must pass the password rule and the name is
// trimmed and required; a refused value yields an *InputError. signedIn is the user of the
// request's public session, or nil.
//
// Registration needs an Accounts store that is an AccountRegistrar (else an
// *UnavailableError) and Config.Registration not RegistrationClosed (else
// ErrRegistrationClosed), whatever the email; both are checked first (RegistrationOffered).
// A new email creates an account through the AccountRegistrar; with RegistrationHook only
// once the hook accepts it (a *RefusedError, or the hook's own error). Gatehouse's own store creates a public user: role
// RoleUser, status StatusActive, email not yet verified, a random UUID v4 as id. An
// unverified account is then mailed an email verification link in the background, when
// the store is an EmailVerifier (a failure to issue or send it is logged and never fails
// the registration; ResendVerification sends another).
//
// The email of an active social-only account of Gatehouse's own store (no password) adds
// the password to that account (AccountLinking), behind proof that the registrant owns the
// address, so nobody attaches a password to someone else's account; the hook is not asked,
// as no account is created. When signedIn is that very account,
// its owner just signed in upstream, which proved the address: the password is set at once
// (PasswordAdded). Otherwise nothing changes yet: a link of PurposeLinkPassword carrying
// the password's hash, superseding older ones, is mailed in the background to the address,
// and opening it (VerifyEmail) adds the password. That mail counts against the
// per-account mail limit: over it, a *RateLimitError and no mail. Either way, adding the
// password ends every session of the account, the caller's too, and revokes its tokens
// and consents (addPassword).
//
// Any other email in use (an account with a password, or an inactive one) yields
// ErrEmailTaken. The name of an existing account is left as it is.
func (s *Service) Register(ctx context.Context, email, password, name string, signedIn *User) (Registration, error) {
	if err := s.RegistrationOffered(); err != nil {
		return Registration{}, err
	}
	req, err := s.checkRegistration(email, password, name)
	if err != nil {
		return Registration{}, err
	}
	existing, err := s.userForLogin(ctx, req.Email)
	switch {
	case err != nil:
		return Registration{}, err
	case existing != nil:
		return s.registerExisting(ctx, existing, req.Password, signedIn)
	}
	if err := s.allowRegistration(ctx, req); err != nil {
		return Registration{}, err
	}
	var u *User
	// The account and its user.registered record commit together.
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if u, err = s.users.register(ctx, req); err != nil {
			return err
		}
		return s.events.Emit(ctx, &events.UserRegistered{UserID: u.ID, Email: u.Email, Method: MethodPassword})
	})
	if err != nil {
		if errors.Is(err, ErrEmailTaken) {
			return Registration{}, ErrEmailTaken
		}
		return Registration{}, fmt.Errorf("publicauth: register account: %w", err)
	}
	if !u.EmailVerified && s.verifier != nil {
		s.mailLinkLater(ctx, u, PurposeVerifyEmail, Destination{})
	}
	return Registration{User: u}, nil
}

// RegistrationOffered reports whether registration is offered at all: an *UnavailableError
// when the Accounts store is no AccountRegistrar (404), ErrRegistrationClosed when
// Config.Registration is RegistrationClosed (403), else nil. The JSON API and the hosted
// registration page ask it before reading the form.
func (s *Service) RegistrationOffered() error {
	switch {
	case s.registrar == nil:
		return &UnavailableError{Feature: FeatureRegistration}
	case s.registration == RegistrationClosed:
		return ErrRegistrationClosed
	}
	return nil
}

// PasswordResetOffered reports whether password reset is offered: an *UnavailableError
// when the Accounts store is no PasswordSetter (404), else nil.
func (s *Service) PasswordResetOffered() error {
	if s.passwords == nil {
		return &UnavailableError{Feature: FeaturePasswordReset}
	}
	return nil
}

// checkRegistration validates a registration: a bare address, a password that passes the
// password rule (also against the address) and a name.
func (s *Service) checkRegistration(email, password, name string) (RegisterRequest, error) {
	email, err := normalizeEmail(email)
	if err != nil {
		return RegisterRequest{}, err
	}
	if err := checkAccountPassword(password, email); err != nil {
		return RegisterRequest{}, err
	}
	name, err = normalizeName(name)
	if err != nil {
		return RegisterRequest{}, err
	}
	return RegisterRequest{Email: email, Name: name, Password: password}, nil
}

// allowRegistration asks the hook of RegistrationHook about a new account: a *RefusedError
// passes through, any other error is wrapped (an internal error). Other modes allow it.
func (s *Service) allowRegistration(ctx context.Context, req RegisterRequest) error {
	switch s.registration {
	case RegistrationHook:
		err := s.beforeRegister(ctx, req)
		var refused *RefusedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &refused):
			return refused
		}
		return fmt.Errorf("publicauth: registration hook: %w", err)
	}
	return nil
}

// registerExisting is Register for an email that names the account u: the password goes
// to u when u is an active account of Gatehouse's own store and has none, at once when
// signedIn is u, else once the mailed link is opened.
func (s *Service) registerExisting(ctx context.Context, u *User, password string, signedIn *User) (Registration, error) {
	if u.HasPassword() || u.Status != StatusActive {
		return Registration{}, ErrEmailTaken
	}
	hash, err := s.newPasswordHash(ctx, password)
	if err != nil {
		return Registration{}, err
	}
	if signedIn == nil || signedIn.ID != u.ID {
		if err := s.prepareLink(ctx, u, PurposeLinkPassword, Destination{}, hash); err != nil {
			return Registration{}, err
		}
		return Registration{User: u, AccountLinking: true}, nil
	}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		// Load again inside the transaction: the password may have come meanwhile.
		current, err := s.store.UserByID(ctx, u.ID)
		if err != nil {
			return fmt.Errorf("publicauth: load user: %w", err)
		}
		u = current
		return s.addPassword(ctx, u, hash)
	})
	if errors.Is(err, errHasPassword) {
		return Registration{}, ErrEmailTaken
	}
	if err != nil {
		return Registration{}, err
	}
	return Registration{User: u, AccountLinking: true, PasswordAdded: true}, nil
}

// errHasPassword: addPassword found the account already has a password.
var errHasPassword = errors.New("publicauth: the account already has a password")

// addPassword gives u, which must have no password yet (else errHasPassword), the password
// hash and marks its address verified: both ways of adding a password prove the address.
// Like every credential change it ends the user's sessions and revokes their tokens and
// consents (revokeAccess); run it inside a transaction.
func (s *Service) addPassword(ctx context.Context, u *User, hash string) error {
	if u.PasswordHash != "" {
		return errHasPassword
	}
	if _, _, _, err := decodePHC(hash); err != nil {
		return fmt.Errorf("publicauth: password hash to add: %w", err)
	}
	verified := true
	changed, err := s.store.ChangeUser(ctx, u.ID, UserChange{PasswordHash: &hash, EmailVerified: &verified})
	if err != nil {
		return fmt.Errorf("publicauth: update user: %w", err)
	}
	*u = *changed
	if err := s.events.Emit(ctx, &events.PasswordAdded{UserID: u.ID}); err != nil {
		return err
	}
	return s.revokeAccess(ctx, u.ID, events.ReasonPasswordAdded)
}

// CreateUser creates an account with the given role and verification state, for operators
// (the admin CLI). It validates like Register, except that an empty name defaults to the
// email's local part (the text before its last "@"); it refuses a role other than RoleUser
// or RoleAdmin with an *InputError, and returns ErrEmailTaken for an email already in use.
func (s *Service) CreateUser(ctx context.Context, in UserInput) (*User, error) {
	if strings.TrimSpace(in.Name) == "" {
		if email, err := normalizeEmail(in.Email); err == nil {
			in.Name = email[:strings.LastIndex(email, "@")]
		}
	}
	var u *User
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if u, err = s.createUser(ctx, in); err != nil {
			return err
		}
		return s.events.Emit(ctx, &events.UserRegistered{UserID: u.ID, Email: u.Email, Method: events.MethodOperator})
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// DeleteUser deletes the account with that id and revokes everything of it in one
// transaction (UserStore.DeleteUser): its tokens stop working at once, its sessions end,
// and its email address is free to register again. ErrUserNotFound for no such user.
func (s *Service) DeleteUser(ctx context.Context, userID string) error {
	return s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.DeleteUser(ctx, userID); err != nil {
			return fmt.Errorf("publicauth: delete user: %w", err)
		}
		return s.grantsRevoked(ctx, userID, events.ReasonUserDeleted)
	})
}

func (s *Service) createUser(ctx context.Context, in UserInput) (*User, error) {
	u, err := s.newUser(ctx, in)
	if err != nil {
		return nil, err
	}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return nil, fmt.Errorf("publicauth: create user: %w", err)
	}
	return u, nil
}

// newUser validates in and builds the account it describes, its password hashed, without
// storing it.
func (s *Service) newUser(ctx context.Context, in UserInput) (*User, error) {
	email, err := normalizeEmail(in.Email)
	if err != nil {
		return nil, err
	}
	if err := checkAccountPassword(in.Password, email); err != nil {
		return nil, err
	}
	name, err := normalizeName(in.Name)
	if err != nil {
		return nil, err
	}
	role, err := normalizeRole(in.Role)
	if err != nil {
		return nil, err
	}
	hash, err := s.newPasswordHash(ctx, in.Password)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewRandomFromReader(s.random)
	if err != nil {
		return nil, fmt.Errorf("publicauth: new user id: %w", err)
	}
	now := s.now()
	u := &User{
		ID:            id.String(),
		Email:         email,
		EmailVerified: in.Verified,
		Name:          name,
		PasswordHash:  hash,
		Role:          role,
		Status:        StatusActive,
		RequirePIN:    in.RequirePIN,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	return u, nil
}

// Authenticate checks an email and password with the Accounts store and returns the
// account they belong to. It verifies credentials only; it starts no session.
//
// With Gatehouse's own store:
// An unknown email, an account without a password or with an unusable stored hash, and a
// wrong password all yield ErrInvalidCredentials, and all cost one argon2id verification (an
// unknown account is verified against a fixed dummy hash), so neither the answer nor its
// timing tells whether the account exists. ErrAccountDisabled is returned for an account
// that is not active, and only once the password matched.
//
// Every attempt counts against the lockout of the email (its EmailKey, whether or not an
// account has it) before the password is checked; once Config.Limits.Lockout is reached,
// Authenticate answers a *RateLimitError without checking the password, until the window
// ends. A successful login clears the count, so only failures add up.
func (s *Service) Authenticate(ctx context.Context, email, password string) (*User, error) {
	if err := s.reserveLoginAttempt(ctx, email); err != nil {
		s.loginFailed(ctx, MethodPassword, nil, err)
		return nil, err
	}
	u, err := s.users.authenticate(ctx, strings.TrimSpace(email), password)
	if err != nil {
		s.loginFailed(ctx, MethodPassword, u, err)
		return nil, err
	}
	s.clearFailedLogins(ctx, email)
	return u, nil
}

// verifyCredentials is Authenticate of Gatehouse's own store, without the lockout. With
// ErrInvalidCredentials and ErrAccountDisabled it also returns the account the email
// names, if any.
func (s *Service) verifyCredentials(ctx context.Context, email, password string) (*User, error) {
	u, err := s.userForLogin(ctx, email)
	if err != nil {
		return nil, err
	}
	if u == nil || u.PasswordHash == "" {
		if err := s.spendDummyVerification(ctx, password); err != nil {
			return nil, err
		}
		return nil, ErrInvalidCredentials
	}
	ok, err := s.passwordMatches(ctx, password, u.PasswordHash)
	switch {
	case errors.Is(err, errMalformedHash):
		// An unusable hash fails before any argon2id work: spend it here, so this answer
		// takes as long as the others.
		if err := s.spendDummyVerification(ctx, password); err != nil {
			return nil, err
		}
		s.logger.ErrorContext(ctx, "publicauth: stored password hash is unusable", "user_id", u.ID, "error", err)
		return u, ErrInvalidCredentials
	case err != nil:
		return nil, err
	case !ok:
		return u, ErrInvalidCredentials
	}
	if u.Status != StatusActive {
		return u, ErrAccountDisabled
	}
	return u, nil
}

// userForLogin looks the account up by email. It returns nil and no error when the email is
// not a valid address or names no account, and an error only when the store fails.
func (s *Service) userForLogin(ctx context.Context, email string) (*User, error) {
	email, err := normalizeEmail(email)
	if err != nil {
		return nil, nil
	}
	u, err := s.users.userByEmail(ctx, email)
	if errors.Is(err, ErrUserNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("publicauth: look up user by email: %w", err)
	}
	return u, nil
}

// UserByID returns the account with that id from the Accounts store, or ErrUserNotFound.
func (s *Service) UserByID(ctx context.Context, id string) (*User, error) {
	u, err := s.users.userByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("publicauth: load user: %w", err)
	}
	return u, nil
}

// SetRequirePIN turns the PIN gate of the user on or off (the CLI's and the admin API's
// switch) and returns the updated account, or ErrUserNotFound.
func (s *Service) SetRequirePIN(ctx context.Context, userID string, on bool) (*User, error) {
	return s.ChangeAccount(ctx, userID, AccountChange{RequirePIN: &on})
}

// AccountChange is what an operator changes on an account (the admin API, the CLI): each
// field that is not nil.
type AccountChange struct {
	// RequirePIN turns the user's PIN gate on or off.
	RequirePIN *bool
	// Status is StatusActive or StatusDisabled.
	Status *string
}

// ChangeAccount applies c to the user in one transaction and returns the updated account;
// ErrUserNotFound for no such user, an *InputError for a Status other than StatusActive or
// StatusDisabled. Disabling an active account also ends its sessions and revokes its tokens
// and consents (revokeAccess), in the same transaction; enabling it again revokes nothing.
func (s *Service) ChangeAccount(ctx context.Context, userID string, c AccountChange) (*User, error) {
	if c.Status != nil && *c.Status != StatusActive && *c.Status != StatusDisabled {
		return nil, &InputError{Field: "status", Reason: "must be " + StatusActive + " or " + StatusDisabled}
	}
	var u *User
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if u, err = s.store.UserByID(ctx, userID); err != nil {
			return fmt.Errorf("publicauth: load user: %w", err)
		}
		var change UserChange
		if c.RequirePIN != nil && *c.RequirePIN != u.RequirePIN {
			change.RequirePIN = c.RequirePIN
		}
		if c.Status != nil && *c.Status != u.Status {
			change.Status = c.Status
		}
		if change == (UserChange{}) {
			return nil
		}
		if u, err = s.store.ChangeUser(ctx, userID, change); err != nil {
			return fmt.Errorf("publicauth: update user: %w", err)
		}
		if change.Status != nil && *change.Status == StatusDisabled {
			return s.revokeAccess(ctx, userID, events.ReasonUserDisabled)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// PINRequired reports whether a login of u must pass the PIN gate: the user's own flag or
// the deployment switch Config.RequirePIN.
func (s *Service) PINRequired(u *User) bool {
	return u.RequirePIN || s.requirePIN
}
