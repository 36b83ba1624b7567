package publicauth

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/uuid"

	"github.com/gatehouse-id/gatehouse/events"
)

// Identity is an account at a social or upstream OpenID Connect provider, as that provider
// reported it after a successful login.
type Identity struct {
	// Provider names the provider: "google", "facebook" or "oidc:<name>". It becomes a login
	// method of the linked user (User.SocialProviders, loginMethods).
	Provider string
	// Subject is the provider's stable id of the account (`sub`, Google's and Facebook's id).
	Subject string
	// Email is the address the provider reported; EmailVerified whether the provider says
	// the account holder proved it.
	Email         string
	EmailVerified bool
	// Name is the display name the provider reported; it may be empty.
	Name string
	// Profile is what the provider reported of the standard profile (given and family
	// name, nickname, picture, locale, …). It fills the empty fields of the account's
	// profile when the identity is first linked or creates the account, never overwriting
	// what the user set; a value that fails the profile's rules is dropped.
	Profile Profile
}

// IdentityStore persists the links between provider identities and users.
type IdentityStore interface {
	// UserByIdentity returns the user linked to (provider, subject), or ErrIdentityNotFound.
	UserByIdentity(ctx context.Context, provider, subject string) (*User, error)
	// CreateUserWithIdentity inserts u and links id to it in one transaction: either both
	// exist afterwards or neither. It returns ErrIdentityTaken when (id.Provider,
	// id.Subject) is already linked (the unique key decides between concurrent first
	// logins) and ErrEmailTaken when u's email is in use.
	CreateUserWithIdentity(ctx context.Context, u *User, id Identity) error
	// LinkIdentity links id to the user with that id and adds id.Provider to the user's
	// SocialProviders, in one transaction, and returns the user as stored afterwards. It
	// returns ErrUserNotFound for no such user and ErrIdentityTaken when (id.Provider,
	// id.Subject) is already linked to any user.
	LinkIdentity(ctx context.Context, userID string, id Identity) (*User, error)
}

// Errors of logging in with a provider identity. The social package maps them to its pages.
var (
	// ErrIdentityNotFound: no user is linked to that (provider, subject).
	ErrIdentityNotFound = errors.New("identity not linked to any user")
	// ErrIdentityTaken: that (provider, subject) is already linked to a user.
	ErrIdentityTaken = errors.New("identity already linked")
	// ErrEmailUnverifiedUpstream: the provider reported no email address, or one it has not
	// verified; such an identity can neither create nor join an account.
	ErrEmailUnverifiedUpstream = errors.New("the identity provider has not verified the email address")
	// ErrLinkRefused: an account with the identity's email exists, but its own email is not
	// verified, so nothing proves that its owner and the identity's are the same person.
	ErrLinkRefused = errors.New("an account with this email exists and cannot be linked automatically")
)

// IdentityLogin is the outcome of Identities.Login.
type IdentityLogin struct {
	// User is the account the identity logs in to.
	User *User
	// Created is true when the login created User; Linked when it linked the identity to an
	// account that existed before.
	Created, Linked bool
}

// Identities logs users in with provider identities: it finds, links or creates the
// account an identity belongs to. It is safe for concurrent use.
type Identities struct {
	s     *Service
	store IdentityStore
}

// Identities returns the identity login of s over store. It leaves s unchanged.
func (s *Service) Identities(store IdentityStore) *Identities {
	return &Identities{s: s, store: store}
}

// maxLoginAttempts bounds Login's retries after losing a race with a concurrent first login.
const maxLoginAttempts = 3

// Login decides which account id logs in to. signedIn is the user of the request's current
// public session, or nil; it never receives an identity of another email. The provider must have verified the email (else
// ErrEmailUnverifiedUpstream). Then, in this order:
//
//   - an identity already linked logs in to its user;
//   - an account whose email has the identity's EmailKey (the keys equal exactly, so a
//     Unicode look-alike never matches) gets the identity linked when that account's email
//     is verified, or when signedIn is that account (its owner proved the password first);
//     else the login is refused with ErrLinkRefused and nothing changes;
//   - otherwise a new social-only account is created: no password, email verified, role
//     user, the provider as its one login method; unless Config.Registration is
//     RegistrationClosed (ErrRegistrationClosed), or is RegistrationHook and the hook,
//     asked with the identity's email and name and an empty password, refuses it.
//
// Identities work on Gatehouse's own users table only (provider.New refuses social login
// with WithAccounts).
//
// A disabled account yields ErrAccountDisabled, and an identity not yet linked to it stays
// unlinked. Two concurrent first logins of the same
// identity end with one account: the loser of the race finds the winner's link and logs in
// to it.
func (ids *Identities) Login(ctx context.Context, id Identity, signedIn *User) (IdentityLogin, error) {
	if id.Provider == "" || id.Subject == "" {
		return IdentityLogin{}, errors.New("publicauth: identity login: empty provider or subject")
	}
	if !id.EmailVerified || strings.TrimSpace(id.Email) == "" {
		return IdentityLogin{}, ErrEmailUnverifiedUpstream
	}
	email, err := normalizeEmail(id.Email)
	if err != nil {
		// An address we cannot use is as good as none.
		return IdentityLogin{}, ErrEmailUnverifiedUpstream
	}
	id.Email = email
	var lost error
	for range maxLoginAttempts {
		res, err := ids.login(ctx, id, signedIn)
		if errors.Is(err, ErrIdentityTaken) || (errors.Is(err, ErrEmailTaken) && res.Created) {
			lost = err // a concurrent login linked or created first: decide again
			continue
		}
		if err != nil {
			return IdentityLogin{}, err
		}
		if res.User.Status != StatusActive {
			return IdentityLogin{}, ErrAccountDisabled
		}
		return res, nil
	}
	return IdentityLogin{}, fmt.Errorf("publicauth: identity login kept losing races: %w", lost)
}

// login is one attempt of Login. A lost race comes back as ErrIdentityTaken, or as
// ErrEmailTaken with Created set.
func (ids *Identities) login(ctx context.Context, id Identity, signedIn *User) (IdentityLogin, error) {
	u, err := ids.store.UserByIdentity(ctx, id.Provider, id.Subject)
	switch {
	case err == nil:
		return IdentityLogin{User: u}, nil
	case !errors.Is(err, ErrIdentityNotFound):
		return IdentityLogin{}, fmt.Errorf("publicauth: look up identity: %w", err)
	}
	u, err = ids.s.store.UserByEmail(ctx, id.Email)
	switch {
	case err == nil && u.Status != StatusActive:
		// Refused before linking: a sign-in the account may not make leaves nothing behind.
		return IdentityLogin{}, ErrAccountDisabled
	case err == nil && (u.EmailVerified || (signedIn != nil && signedIn.ID == u.ID)):
		return ids.link(ctx, u.ID, id)
	case err == nil:
		return IdentityLogin{}, ErrLinkRefused
	case !errors.Is(err, ErrUserNotFound):
		return IdentityLogin{}, fmt.Errorf("publicauth: look up user by email: %w", err)
	}
	u, err = ids.newSocialUser(id)
	if err != nil {
		return IdentityLogin{}, err
	}
	if ids.s.registration == RegistrationClosed {
		return IdentityLogin{}, ErrRegistrationClosed
	}
	if err := ids.s.allowRegistration(ctx, RegisterRequest{Email: u.Email, Name: u.Name}); err != nil {
		return IdentityLogin{}, err
	}
	if err := ids.store.CreateUserWithIdentity(ctx, u, id); err != nil {
		if errors.Is(err, ErrIdentityTaken) || errors.Is(err, ErrEmailTaken) {
			return IdentityLogin{Created: true}, err
		}
		return IdentityLogin{}, fmt.Errorf("publicauth: create social user: %w", err)
	}
	ids.s.events.Emit(ctx, &events.UserRegistered{UserID: u.ID, Email: u.Email, Method: id.Provider})
	return IdentityLogin{User: u, Created: true}, nil
}

func (ids *Identities) link(ctx context.Context, userID string, id Identity) (IdentityLogin, error) {
	var u *User
	err := ids.s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if u, err = ids.store.LinkIdentity(ctx, userID, id); err != nil {
			return err
		}
		filled := fillProfile(u.Profile, id.Profile, ids.s.now())
		if reflect.DeepEqual(filled, u.Profile) {
			return nil
		}
		u, err = ids.s.store.ChangeUser(ctx, userID, UserChange{Profile: &filled})
		return err
	})
	if err != nil {
		if errors.Is(err, ErrIdentityTaken) {
			return IdentityLogin{}, err
		}
		return IdentityLogin{}, fmt.Errorf("publicauth: link identity: %w", err)
	}
	return IdentityLogin{User: u, Linked: true}, nil
}

// newSocialUser builds the account a first login with id creates. A missing or unusable
// name falls back to the local part of the email.
func (ids *Identities) newSocialUser(id Identity) (*User, error) {
	name, err := normalizeName(id.Name)
	if err != nil {
		name, _, _ = strings.Cut(id.Email, "@")
	}
	uid, err := uuid.NewRandomFromReader(ids.s.random)
	if err != nil {
		return nil, fmt.Errorf("publicauth: new user id: %w", err)
	}
	now := ids.s.now()
	return &User{
		ID:              uid.String(),
		Email:           id.Email,
		EmailVerified:   true,
		Name:            name,
		Role:            RoleUser,
		Status:          StatusActive,
		SocialProviders: []string{id.Provider},
		Profile:         fillProfile(Profile{}, id.Profile, now),
		CreatedAt:       now,
		UpdatedAt:       now,
	}, nil
}
