package provider

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// ErrClientNotFound: no client has that id.
var ErrClientNotFound = errors.New("client not found")

// ErrClientExists: a client with that id is already registered.
var ErrClientExists = errors.New("client already exists")

// ClientSpec describes a client to register.
type ClientSpec struct {
	// ID is generated (a UUID) when empty.
	ID string
	// Secret is generated (256 random bits) when empty; public clients have none.
	Secret string
	Name   string
	// RedirectURIs must be absolute URIs without fragment; at least one for clients that use
	// the authorization_code grant.
	RedirectURIs           []string
	PostLogoutRedirectURIs []string
	// Scopes defaults to "openid profile email offline_access".
	Scopes []string
	// GrantTypes defaults to authorization_code and refresh_token.
	GrantTypes []string
	// Public clients (SPAs, native apps) have no secret and rely on PKCE.
	Public bool
	// FirstParty clients skip the consent page.
	FirstParty bool
	// ResourceServer clients may introspect tokens issued to other clients when the token's
	// audience (its `aud`: the audience granted with it, or else the id of the client it
	// was issued to) contains this client's id. Any other client sees only its own tokens
	// as active. A resource server must be confidential: introspection needs a secret.
	ResourceServer bool
	// IDTokenAlg is "RS256" (default) or "ES256".
	IDTokenAlg string
}

// ClientInfo is the JSON view of a client. ClientSecret is set only by CreateClient: the
// secret is stored hashed and can never be shown again.
type ClientInfo struct {
	ClientID               string    `json:"client_id"`
	ClientSecret           string    `json:"client_secret,omitempty"`
	Name                   string    `json:"name"`
	RedirectURIs           []string  `json:"redirect_uris"`
	PostLogoutRedirectURIs []string  `json:"post_logout_redirect_uris"`
	Scopes                 []string  `json:"scopes"`
	GrantTypes             []string  `json:"grant_types"`
	Public                 bool      `json:"public"`
	FirstParty             bool      `json:"first_party"`
	ResourceServer         bool      `json:"resource_server"`
	IDTokenAlg             string    `json:"id_token_signed_response_alg"`
	CreatedAt              time.Time `json:"created_at"`
}

var grantTypesSupported = []string{"authorization_code", "refresh_token", "client_credentials"}

// CreateClient registers a client and returns it with its secret in clear, once.
func (p *Provider) CreateClient(ctx context.Context, spec ClientSpec) (ClientInfo, error) {
	c := &storage.Client{
		ID: spec.ID, Name: spec.Name, Public: spec.Public, FirstParty: spec.FirstParty,
		ResourceServer: spec.ResourceServer,
		RedirectURIs:   spec.RedirectURIs, PostLogoutRedirectURIs: spec.PostLogoutRedirectURIs,
		Scopes: spec.Scopes, GrantTypes: spec.GrantTypes, IDTokenAlg: spec.IDTokenAlg,
		ResponseTypes: []string{"code"},
	}
	if c.ID == "" {
		c.ID = uuid.NewString()
	}
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"openid", "profile", "email", "offline_access"}
	}
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	if c.IDTokenAlg == "" {
		c.IDTokenAlg = AlgRS256
	}
	if err := validateClient(c); err != nil {
		return ClientInfo{}, err
	}
	secret := spec.Secret
	if c.Public {
		if secret != "" {
			return ClientInfo{}, errors.New("a public client has no secret")
		}
	} else {
		if secret == "" {
			var err error
			if secret, err = randomToken(p.random); err != nil {
				return ClientInfo{}, err
			}
		}
		c.SecretHash, _ = secretHasher{key: deriveKey(p.cfg.Secret, "client-secrets")}.Hash(ctx, []byte(secret))
	}
	c.CreatedAt = p.now().UTC()
	c.UpdatedAt = c.CreatedAt
	if err := p.store.CreateClient(ctx, c); errors.Is(err, storage.ErrConflict) {
		return ClientInfo{}, fmt.Errorf("%w: %s", ErrClientExists, c.ID)
	} else if err != nil {
		return ClientInfo{}, err
	}
	info := clientInfo(c)
	info.ClientSecret = secret
	return info, nil
}

func validateClient(c *storage.Client) error {
	var errs []error
	for _, g := range c.GrantTypes {
		if !slices.Contains(grantTypesSupported, g) {
			errs = append(errs, fmt.Errorf("grant type %q is not supported (use %s)", g, strings.Join(grantTypesSupported, ", ")))
		}
	}
	if c.Public && slices.Contains(c.GrantTypes, "client_credentials") {
		errs = append(errs, errors.New("a public client cannot use client_credentials"))
	}
	if c.Public && c.ResourceServer {
		errs = append(errs, errors.New("a public client cannot be a resource server: introspection needs a client secret"))
	}
	if slices.Contains(c.GrantTypes, "authorization_code") && len(c.RedirectURIs) == 0 {
		errs = append(errs, errors.New("at least one redirect URI is required for authorization_code"))
	}
	for _, list := range [][]string{c.RedirectURIs, c.PostLogoutRedirectURIs} {
		for _, raw := range list {
			u, err := url.Parse(raw)
			web := err == nil && (u.Scheme == "http" || u.Scheme == "https")
			if err != nil || !u.IsAbs() || u.Fragment != "" || (web && u.Host == "") {
				errs = append(errs, fmt.Errorf("redirect URI %q must be absolute and without fragment", raw))
			}
		}
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			errs = append(errs, fmt.Errorf("scope %q is not a valid scope token", s))
		}
	}
	if c.IDTokenAlg != AlgRS256 && c.IDTokenAlg != AlgES256 {
		errs = append(errs, fmt.Errorf("ID token algorithm %q is not RS256 or ES256", c.IDTokenAlg))
	}
	return errors.Join(errs...)
}

func clientInfo(c *storage.Client) ClientInfo {
	nonNil := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return ClientInfo{
		ClientID: c.ID, Name: c.Name, RedirectURIs: nonNil(c.RedirectURIs),
		PostLogoutRedirectURIs: nonNil(c.PostLogoutRedirectURIs), Scopes: nonNil(c.Scopes),
		GrantTypes: nonNil(c.GrantTypes), Public: c.Public, FirstParty: c.FirstParty,
		ResourceServer: c.ResourceServer,
		IDTokenAlg:     c.IDTokenAlg, CreatedAt: c.CreatedAt.UTC(),
	}
}

// ClientByID returns one client, or ErrClientNotFound.
func (p *Provider) ClientByID(ctx context.Context, id string) (ClientInfo, error) {
	c, err := p.store.ClientByID(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return ClientInfo{}, ErrClientNotFound
	} else if err != nil {
		return ClientInfo{}, err
	}
	return clientInfo(c), nil
}

// ListClients returns every client, oldest first.
func (p *Provider) ListClients(ctx context.Context) ([]ClientInfo, error) {
	cs, err := p.store.ListClients(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ClientInfo, 0, len(cs))
	for _, c := range cs {
		out = append(out, clientInfo(c))
	}
	return out, nil
}

// DeleteClient removes a client with its codes, tokens and consents; ErrClientNotFound when
// there is none.
func (p *Provider) DeleteClient(ctx context.Context, id string) error {
	if err := p.store.DeleteClient(ctx, id); errors.Is(err, storage.ErrNotFound) {
		return ErrClientNotFound
	} else if err != nil {
		return err
	}
	return nil
}

// UserSpec describes a user the admin CLI creates.
type UserSpec struct {
	Email, Password, Name string
	// Role is "user" (default) or "admin".
	Role string
	// Verified marks the email as verified.
	Verified bool
	// RequirePIN turns the PIN gate on for the user.
	RequirePIN bool
}

// UserInfo is the JSON view of a user.
type UserInfo struct {
	ID            string    `json:"id"`
	Email         string    `json:"email"`
	Name          string    `json:"name"`
	Role          string    `json:"role"`
	Status        string    `json:"status"`
	EmailVerified bool      `json:"emailVerified"`
	RequirePIN    bool      `json:"requirePin"`
	LoginMethods  []string  `json:"loginMethods"`
	CreatedAt     time.Time `json:"createdAt"`
}

func userInfo(u *publicauth.User) UserInfo {
	return UserInfo{
		ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Status: u.Status,
		EmailVerified: u.EmailVerified, RequirePIN: u.RequirePIN, LoginMethods: u.LoginMethods(),
		CreatedAt: u.CreatedAt.UTC(),
	}
}

// ErrUserNotFound: no user has that id or email.
var ErrUserNotFound = publicauth.ErrUserNotFound

// CreateUser creates a user with a password (the password rules apply).
func (p *Provider) CreateUser(ctx context.Context, spec UserSpec) (UserInfo, error) {
	u, err := p.auth.CreateUser(ctx, publicauth.UserInput{
		Email: spec.Email, Password: spec.Password, Name: spec.Name, Role: spec.Role, Verified: spec.Verified,
		RequirePIN: spec.RequirePIN,
	})
	if err != nil {
		return UserInfo{}, err
	}
	return userInfo(u), nil
}

// SetUserRequirePIN turns the PIN gate of an existing user on or off. user is the user's
// id or email address; ErrUserNotFound when neither names a user.
func (p *Provider) SetUserRequirePIN(ctx context.Context, user string, on bool) (UserInfo, error) {
	return p.UpdateUser(ctx, user, UserUpdate{RequirePIN: &on})
}

// SetUserDisabled disables an existing user (disabled true) or enables it again; see
// UserUpdate.Disabled. user is the user's id or email address; ErrUserNotFound when
// neither names a user.
func (p *Provider) SetUserDisabled(ctx context.Context, user string, disabled bool) (UserInfo, error) {
	return p.UpdateUser(ctx, user, UserUpdate{Disabled: &disabled})
}

// UserUpdate is what UpdateUser changes on a user: each field that is not nil.
type UserUpdate struct {
	// RequirePIN turns the user's PIN gate on or off.
	RequirePIN *bool
	// Disabled true disables the account: it can no longer log in, and its sessions,
	// access tokens, refresh tokens and consents are revoked in one transaction with the
	// change. False enables it again, and revokes nothing.
	Disabled *bool
}

// UpdateUser applies up to the user that user names by id or email address, in one
// transaction, and returns the user; ErrUserNotFound when neither names a user.
func (p *Provider) UpdateUser(ctx context.Context, user string, up UserUpdate) (UserInfo, error) {
	u, err := p.store.UserByID(ctx, user)
	if errors.Is(err, publicauth.ErrUserNotFound) {
		u, err = p.store.UserByEmail(ctx, user)
	}
	if err != nil {
		return UserInfo{}, err
	}
	change := publicauth.AccountChange{RequirePIN: up.RequirePIN}
	if up.Disabled != nil {
		status := publicauth.StatusActive
		if *up.Disabled {
			status = publicauth.StatusDisabled
		}
		change.Status = &status
	}
	if u, err = p.auth.ChangeAccount(ctx, u.ID, change); err != nil {
		return UserInfo{}, err
	}
	return userInfo(u), nil
}

// RotateKeys adds a new RS256 and ES256 key and returns the published set. Every replica
// publishes the new keys within Config.KeyReloadInterval; they sign from one and a half
// intervals after the rotation. The previous keys sign until then and stay published until
// every token they signed has expired.
func (p *Provider) RotateKeys(ctx context.Context) ([]KeyInfo, error) {
	if err := p.keys.rotate(ctx); err != nil {
		return nil, err
	}
	return p.keys.infos(), nil
}

// Keys returns the published signing keys.
func (p *Provider) Keys() []KeyInfo { return p.keys.infos() }
