package publicauth

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// UserInput is an account to create with Service.CreateUser.
type UserInput struct {
	Email    string
	Password string
	Name     string
	// Role is RoleUser (the default when empty) or RoleAdmin.
	Role string
	// Verified marks the email address as already verified.
	Verified bool
	// RequirePIN turns the PIN gate on for the account.
	RequirePIN bool
}

// Register creates a public user from the registration form (POST /api/public/register):
// role RoleUser, status StatusActive, email not yet verified, a random UUID v4 as id. It
// then mails an email verification link in the background; a failure to issue or send it is
// logged and never fails the registration (ResendVerification sends another). The
// email is trimmed and must be a bare address, the password must pass the password rule and
// the name is trimmed and required; a refused value yields an *InputError. An email already
// used by another account, compared case-insensitively, yields ErrEmailTaken.
//
// An email that belongs to a social-only account (no password) also yields ErrEmailTaken:
// adding a password to such an account (isAccountLinking) comes with social login, behind
// proof that the registrant owns the address.
func (s *Service) Register(ctx context.Context, email, password, name string) (*User, error) {
	u, err := s.createUser(ctx, UserInput{Email: email, Password: password, Name: name, Role: RoleUser})
	if err != nil {
		return nil, err
	}
	s.mailLinkLater(ctx, u, PurposeVerifyEmail, Destination{})
	return u, nil
}

// CreateUser creates an account with the given role and verification state, for operators
// (the admin CLI). It validates like Register, refuses a role other than RoleUser or
// RoleAdmin with an *InputError, and returns ErrEmailTaken for an email already in use.
func (s *Service) CreateUser(ctx context.Context, in UserInput) (*User, error) {
	return s.createUser(ctx, in)
}

func (s *Service) createUser(ctx context.Context, in UserInput) (*User, error) {
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
	hash, err := hashPassword(in.Password, s.passwordParams, s.random)
	if err != nil {
		return nil, fmt.Errorf("publicauth: %w", err)
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
	if err := s.store.CreateUser(ctx, u); err != nil {
		return nil, fmt.Errorf("publicauth: create user: %w", err)
	}
	return u, nil
}

// Authenticate checks an email and password and returns the account they belong to. It
// verifies credentials only; it starts no session.
//
// An unknown email, an account without a password or with an unusable stored hash, and a
// wrong password all yield ErrInvalidCredentials, and all cost one argon2id verification (an
// unknown account is verified against a fixed dummy hash), so neither the answer nor its
// timing tells whether the account exists. ErrAccountDisabled is returned for an account
// that is not active, and only once the password matched.
//
// Each ErrInvalidCredentials counts a failed login of the email (lower-cased, whether or not
// an account has it); once Config.Limits.Lockout is reached, Authenticate answers a
// *RateLimitError without checking the password, until the window ends. A successful login
// clears the count.
func (s *Service) Authenticate(ctx context.Context, email, password string) (*User, error) {
	if err := s.checkLockout(ctx, email); err != nil {
		return nil, err
	}
	u, err := s.verifyCredentials(ctx, email, password)
	switch {
	case errors.Is(err, ErrInvalidCredentials):
		s.recordFailedLogin(ctx, email)
	case err == nil:
		s.clearFailedLogins(ctx, email)
	}
	return u, err
}

// verifyCredentials is Authenticate without the lockout.
func (s *Service) verifyCredentials(ctx context.Context, email, password string) (*User, error) {
	u, err := s.userForLogin(ctx, email)
	if err != nil {
		return nil, err
	}
	if u == nil || u.PasswordHash == "" {
		_, _ = verifyPassword(password, dummyPasswordHash)
		return nil, ErrInvalidCredentials
	}
	ok, err := verifyPassword(password, u.PasswordHash)
	if err != nil {
		// An unusable hash fails before any argon2id work: spend it here, so this answer
		// takes as long as the others.
		_, _ = verifyPassword(password, dummyPasswordHash)
		s.logger.ErrorContext(ctx, "publicauth: stored password hash is unusable", "user_id", u.ID, "err", err)
		return nil, ErrInvalidCredentials
	}
	if !ok {
		return nil, ErrInvalidCredentials
	}
	if u.Status != StatusActive {
		return nil, ErrAccountDisabled
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
	u, err := s.store.UserByEmail(ctx, email)
	if errors.Is(err, ErrUserNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("publicauth: look up user by email: %w", err)
	}
	return u, nil
}

// UserByID returns the account with that id, or ErrUserNotFound.
func (s *Service) UserByID(ctx context.Context, id string) (*User, error) {
	u, err := s.store.UserByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("publicauth: load user: %w", err)
	}
	return u, nil
}

// SetRequirePIN turns the PIN gate of the user on or off (the CLI's and the admin API's
// switch) and returns the updated account, or ErrUserNotFound.
func (s *Service) SetRequirePIN(ctx context.Context, userID string, on bool) (*User, error) {
	u, err := s.store.UserByID(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("publicauth: load user: %w", err)
	}
	if u.RequirePIN == on {
		return u, nil
	}
	u.RequirePIN = on
	if err := s.store.UpdateUser(ctx, u); err != nil {
		return nil, fmt.Errorf("publicauth: update user: %w", err)
	}
	return u, nil
}

// PINRequired reports whether a login of u must pass the PIN gate: the user's own flag or
// the deployment switch Config.RequirePIN.
func (s *Service) PINRequired(u *User) bool {
	return u.RequirePIN || s.requirePIN
}
