package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// Errors of the administration methods; match them with errors.Is.
var (
	// ErrNotFound: the client or user an administration method names does not exist. Every
	// such error matches it as well as the specific ErrClientNotFound or ErrUserNotFound.
	ErrNotFound = errors.New("not found")
	// ErrClientNotFound: no client has that id. It matches ErrNotFound.
	ErrClientNotFound = fmt.Errorf("client %w", ErrNotFound)
	// ErrUserNotFound: no user has that id or email (publicauth.ErrUserNotFound). The
	// errors the administration methods return for it match ErrNotFound too.
	ErrUserNotFound = publicauth.ErrUserNotFound
	// ErrClientExists: CreateClient was given the id of a registered client.
	ErrClientExists = errors.New("client already exists")
	// ErrEmailTaken: CreateUser was given an email another user has, compared by
	// publicauth.EmailKey (publicauth.ErrEmailTaken).
	ErrEmailTaken = publicauth.ErrEmailTaken
	// ErrPublicClient: a public client has no secret: RotateClientSecret named one, or
	// CreateClient was given a secret for one.
	ErrPublicClient = errors.New("a public client has no secret")
)

// notFoundError is a domain's not-found error that also matches ErrNotFound.
type notFoundError struct{ err error }

func (e notFoundError) Error() string   { return e.err.Error() }
func (e notFoundError) Unwrap() []error { return []error{e.err, ErrNotFound} }

// userNotFound makes an error that matches publicauth.ErrUserNotFound match ErrNotFound too;
// any other error is returned as it is.
func userNotFound(err error) error {
	if errors.Is(err, publicauth.ErrUserNotFound) {
		return notFoundError{err}
	}
	return err
}

// clientNotFound maps storage.ErrNotFound to ErrClientNotFound; any other error is returned
// as it is.
func clientNotFound(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return ErrClientNotFound
	}
	return err
}

// ClientSpec describes a client to register (CreateClient).
type ClientSpec struct {
	// ID is optional: a generated UUID when empty.
	ID string
	// Secret is optional for a confidential client: 256 random bits when empty. A public
	// client must leave it empty.
	Secret string
	// Name is optional (default empty): the display name on the consent page.
	Name string
	// RedirectURIs must be absolute URIs without fragment. Required (at least one) for a
	// client with the authorization_code grant; otherwise optional (default none).
	RedirectURIs []string
	// PostLogoutRedirectURIs is optional (default none): where RP-initiated logout may
	// return to; absolute URIs without fragment.
	PostLogoutRedirectURIs []string
	// Scopes is optional: the scopes the client may ask for, by default "openid profile
	// email offline_access".
	Scopes []string
	// GrantTypes is optional: by default authorization_code and refresh_token; also
	// client_credentials (confidential clients only).
	GrantTypes []string
	// Audience is optional (default none): the audiences the client may ask tokens for
	// with the `audience` or RFC 8707 `resource` parameter, e.g. "https://api.acme.example"
	// or a resource server's client id, compared exactly. A token asked for some of them
	// carries those as its `aud`; a token asked for none has the client's id.
	Audience []string
	// Public is optional (default false, confidential). Public clients (SPAs, native apps)
	// have no secret and rely on PKCE. Fixed at creation.
	Public bool
	// FirstParty is optional (default false): first-party clients skip the consent page.
	FirstParty bool
	// ResourceServer is optional (default false). Resource servers may introspect tokens
	// issued to other clients when the token's audience (its `aud`: the audience granted
	// with it, or else the id of the client it was issued to) contains this client's id.
	// Any other client sees only its own tokens as active. A resource server must be
	// confidential: introspection needs a secret.
	ResourceServer bool
	// IDTokenAlg is optional: "RS256" (the default when empty), "ES256" or "EdDSA"
	// (Ed25519; at_hash then hashes with SHA-512, as OpenID Connect Core §3.1.3.6 with its
	// errata asks of this algorithm).
	IDTokenAlg string
	// RequirePAR is optional (default false): the client must push every authorization
	// request to /api/oauth/par (RFC 9126); the authorization endpoint answers
	// invalid_request to one without a pushed request_uri. Config.RequirePAR requires it
	// of every client.
	RequirePAR bool
	// RequireDPoP is optional (default false): every token request of the client must carry
	// a DPoP proof (RFC 9449), so all its access tokens are bound to its key; one without is
	// refused with invalid_dpop_proof. Clients without it may still use DPoP.
	RequireDPoP bool
	// BackchannelLogoutURI is optional (default none): where the client receives a logout
	// token when a browser session it was issued tokens in ends (OpenID Connect Back-Channel
	// Logout 1.0). https, or http on a loopback host; no fragment.
	BackchannelLogoutURI string
	// BackchannelLogoutSessionRequired is optional (default false): the client requires
	// `sid` in logout tokens. Gatehouse always sends it.
	BackchannelLogoutSessionRequired bool
	// AuthMethod is optional: how the client authenticates at the token, introspection,
	// revocation and PAR endpoints; any other method is refused with invalid_client.
	// "client_secret_basic" (the default for a confidential client), "client_secret_post",
	// "client_secret_jwt" (an HS256/384/512 assertion made with the secret, RFC 7523; its
	// secret is also stored sealed under the system secret, and must be 32 bytes or more),
	// "private_key_jwt" (an assertion signed with a key of JWKSURI or JWKS; the client has
	// no secret) or "none" (the only method, and the default, of a public client).
	AuthMethod string
	// JWKSURI is optional (default none): where the client publishes its public keys, an
	// https URI (http only on a loopback host). The set is fetched with a 5 s timeout, at
	// most 64 KiB, cached as its Cache-Control max-age says (1 minute to 1 day; 1 hour
	// without one) and refetched for an unknown kid at most once a minute. It verifies
	// private_key_jwt assertions and request objects. Exclusive with JWKS. A client created
	// here may name any address; one that registered itself (RFC 7591) is held to public
	// addresses (Config.InsecureAllowPrivateClientURLs).
	JWKSURI string
	// JWKS is optional (default none): the client's JSON Web Key Set document, public keys
	// only (a private or symmetric key is refused), each within dpop.CheckPublicKey's
	// bounds (RSA of 2048 to 8192 bits, EC on P-256 or larger, Ed25519), as the keys at
	// JWKSURI must be too. Exclusive with JWKSURI.
	JWKS []byte
	// RequestObjectAlg is optional (default empty: any of RS256/384/512, PS256/384/512,
	// ES256/384/512): the only algorithm the client's request objects (RFC 9101) may be
	// signed with. It needs JWKSURI or JWKS. Unsigned request objects are always refused.
	RequestObjectAlg string
	// LogoURI, PolicyURI and TOSURI are optional (default none): the client's logo, privacy
	// policy and terms of service (RFC 7591 §2), absolute https URLs.
	LogoURI, PolicyURI, TOSURI string
}

// ClientInfo is the JSON view of a client. ClientSecret is set only by CreateClient: the
// secret is stored hashed and can never be shown again.
type ClientInfo struct {
	ClientID               string   `json:"client_id"`
	ClientSecret           string   `json:"client_secret,omitempty"`
	Name                   string   `json:"name"`
	RedirectURIs           []string `json:"redirect_uris"`
	PostLogoutRedirectURIs []string `json:"post_logout_redirect_uris"`
	Scopes                 []string `json:"scopes"`
	GrantTypes             []string `json:"grant_types"`
	Audience               []string `json:"audience"`
	Public                 bool     `json:"public"`
	FirstParty             bool     `json:"first_party"`
	ResourceServer         bool     `json:"resource_server"`
	IDTokenAlg             string   `json:"id_token_signed_response_alg"`
	// AuthMethod is the registered client authentication method; a confidential client
	// registered before the methods existed shows "client_secret_basic" here and still
	// accepts client_secret_post too, until an update sets its method.
	AuthMethod       string          `json:"token_endpoint_auth_method"`
	JWKSURI          string          `json:"jwks_uri,omitempty"`
	JWKS             json.RawMessage `json:"jwks,omitempty"`
	RequestObjectAlg string          `json:"request_object_signing_alg,omitempty"`
	RequirePAR       bool            `json:"require_pushed_authorization_requests"`
	RequireDPoP      bool            `json:"dpop_bound_access_tokens"`
	LogoURI          string          `json:"logo_uri,omitempty"`
	PolicyURI        string          `json:"policy_uri,omitempty"`
	TOSURI           string          `json:"tos_uri,omitempty"`
	CreatedAt        time.Time       `json:"created_at"`

	BackchannelLogoutURI             string `json:"backchannel_logout_uri"`
	BackchannelLogoutSessionRequired bool   `json:"backchannel_logout_session_required"`
}

var grantTypesSupported = []string{"authorization_code", "refresh_token", "client_credentials", GrantTypeDeviceCode}

// CreateClient registers a client and returns it with its secret in clear, once (a
// private_key_jwt client has none).
func (p *Provider) CreateClient(ctx context.Context, spec ClientSpec) (ClientInfo, error) {
	c := clientFromSpec(spec)
	if err := checkClient(c); err != nil {
		return ClientInfo{}, err
	}
	secret := spec.Secret
	switch {
	case c.Public && secret != "":
		return ClientInfo{}, ErrPublicClient
	case !c.Public && !clientHasSecret(c) && secret != "":
		return ClientInfo{}, ErrNoClientSecret
	case clientHasSecret(c):
		if secret == "" {
			var err error
			if secret, err = randomToken(p.random); err != nil {
				return ClientInfo{}, err
			}
		}
		if err := p.setClientSecret(ctx, c, secret); err != nil {
			return ClientInfo{}, err
		}
	}
	c.CreatedAt = p.now().UTC()
	c.UpdatedAt = c.CreatedAt
	if err := p.inTxRecording(ctx, &events.ClientChanged{ClientID: c.ID, Action: events.ClientCreated}, func(ctx context.Context) error {
		return p.store.CreateClient(ctx, c)
	}); errors.Is(err, storage.ErrConflict) {
		return ClientInfo{}, fmt.Errorf("%w: %s", ErrClientExists, c.ID)
	} else if err != nil {
		return ClientInfo{}, err
	}
	info := clientInfo(c)
	info.ClientSecret = secret
	return info, nil
}

// clientFromSpec is the client spec describes, with its id (a new UUID when spec has none)
// and authentication method defaulted, not yet checked.
func clientFromSpec(spec ClientSpec) *storage.Client {
	c := &storage.Client{
		ID: spec.ID, Name: spec.Name, Public: spec.Public, FirstParty: spec.FirstParty,
		ResourceServer: spec.ResourceServer,
		RedirectURIs:   spec.RedirectURIs, PostLogoutRedirectURIs: spec.PostLogoutRedirectURIs,
		Scopes: spec.Scopes, GrantTypes: spec.GrantTypes, Audience: spec.Audience, IDTokenAlg: spec.IDTokenAlg,
		ResponseTypes: []string{"code"}, RequirePAR: spec.RequirePAR, RequireDPoP: spec.RequireDPoP,
		BackchannelLogoutURI:             spec.BackchannelLogoutURI,
		BackchannelLogoutSessionRequired: spec.BackchannelLogoutSessionRequired,
		ClientAuthentication: storage.ClientAuthentication{
			TokenEndpointAuthMethod: spec.AuthMethod, JWKSURI: spec.JWKSURI, JWKS: spec.JWKS,
			RequestObjectSigningAlg: spec.RequestObjectAlg,
		},
		ClientRegistration: storage.ClientRegistration{LogoURI: spec.LogoURI, PolicyURI: spec.PolicyURI, TOSURI: spec.TOSURI},
	}
	if c.TokenEndpointAuthMethod == "" {
		c.TokenEndpointAuthMethod = storage.AuthMethodSecretBasic
		if c.Public {
			c.TokenEndpointAuthMethod = storage.AuthMethodNone
		}
	}
	if c.ID == "" {
		c.ID = uuid.NewString()
	}
	return c
}

// hashClientSecret is how a client secret is stored: its HMAC under a key derived from the
// system secret (secretHasher), which the token endpoint compares.
func (p *Provider) hashClientSecret(ctx context.Context, secret string) []byte {
	hash, _ := secretHasher{key: deriveKey(p.cfg.Secret, "client-secrets")}.Hash(ctx, []byte(secret))
	return hash
}

// checkClient fills the defaults of c's empty settings (scopes, grant types, ID token
// algorithm) and validates it: the one check of CreateClient and UpdateClient.
func checkClient(c *storage.Client) error {
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"openid", "profile", "email", "offline_access"}
	}
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	if c.IDTokenAlg == "" {
		c.IDTokenAlg = AlgRS256
	}
	return validateClient(c)
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
		if !validScopeToken(s) {
			errs = append(errs, fmt.Errorf("scope %q is not a valid scope token", s))
		}
	}
	for _, a := range c.Audience {
		if !validScopeToken(a) {
			// The `audience` parameter is space-separated, so an audience holds no space.
			errs = append(errs, fmt.Errorf("audience %q must be non-empty printable ASCII without space, quote or backslash", a))
		}
	}
	if !slices.Contains(supportedAlgs, c.IDTokenAlg) {
		errs = append(errs, fmt.Errorf("ID token algorithm %q is not RS256, ES256 or EdDSA", c.IDTokenAlg))
	}
	if c.BackchannelLogoutURI != "" {
		if err := checkBackchannelLogoutURI(c.BackchannelLogoutURI); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, checkClientAuthentication(c)...)
	errs = append(errs, checkClientRegistration(c)...)
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
		GrantTypes: nonNil(c.GrantTypes), Audience: nonNil(c.Audience), Public: c.Public, FirstParty: c.FirstParty,
		ResourceServer: c.ResourceServer,
		IDTokenAlg:     c.IDTokenAlg, CreatedAt: c.CreatedAt.UTC(), RequirePAR: c.RequirePAR, RequireDPoP: c.RequireDPoP,
		AuthMethod: c.AuthMethod(), JWKSURI: c.JWKSURI, JWKS: json.RawMessage(c.JWKS),
		RequestObjectAlg: c.RequestObjectSigningAlg,
		LogoURI:          c.LogoURI, PolicyURI: c.PolicyURI, TOSURI: c.TOSURI,
		BackchannelLogoutURI: c.BackchannelLogoutURI, BackchannelLogoutSessionRequired: c.BackchannelLogoutSessionRequired,
	}
}

// ClientByID returns one client, or ErrClientNotFound (matching ErrNotFound).
func (p *Provider) ClientByID(ctx context.Context, id string) (ClientInfo, error) {
	c, err := p.store.ClientByID(ctx, id)
	if err != nil {
		return ClientInfo{}, clientNotFound(err)
	}
	return clientInfo(c), nil
}

// ClientUpdate is what UpdateClient changes on a client: each field that is not nil, so a
// caller changes one setting without resending the others. Every field is optional (nil
// keeps the stored value). A list set to an empty slice is written as empty, except that
// empty Scopes or GrantTypes mean their defaults, as at creation (ClientSpec); an empty
// IDTokenAlg means RS256. The client's id and whether it is public or confidential are
// fixed at creation and cannot be changed: delete the client and create it again.
type ClientUpdate struct {
	// Name replaces the display name.
	Name *string
	// RedirectURIs replaces the redirect URIs. Unused authorization codes bound to a URI
	// removed here stop working at once.
	RedirectURIs *[]string
	// PostLogoutRedirectURIs replaces the post-logout redirect URIs.
	PostLogoutRedirectURIs *[]string
	// Scopes replaces the scopes the client may ask for.
	Scopes *[]string
	// GrantTypes replaces the grant types.
	GrantTypes *[]string
	// Audience replaces the audiences the client may ask tokens for (ClientSpec.Audience).
	// Refresh tokens granted for an audience removed here stop refreshing.
	Audience *[]string
	// FirstParty turns skipping the consent page on or off.
	FirstParty *bool
	// ResourceServer turns the resource-server role on or off (confidential clients only).
	ResourceServer *bool
	// IDTokenAlg replaces the ID token algorithm: "RS256", "ES256" or "EdDSA".
	IDTokenAlg *string
	// RequirePAR turns the pushed-authorization-request requirement on or off
	// (ClientSpec.RequirePAR). A flow already past the authorization endpoint completes.
	RequirePAR *bool
	// RequireDPoP turns the DPoP requirement on or off (ClientSpec.RequireDPoP).
	RequireDPoP *bool
	// BackchannelLogoutURI replaces the back-channel logout URI ("" removes it).
	BackchannelLogoutURI *string
	// BackchannelLogoutSessionRequired replaces backchannel_logout_session_required.
	BackchannelLogoutSessionRequired *bool
	// AuthMethod replaces the client authentication method (ClientSpec.AuthMethod) of a
	// confidential client. A change to a method that needs a secret the client lacks (any
	// secret method after private_key_jwt; client_secret_jwt, whose secret must also be
	// stored sealed) issues a new secret, returned once in ClientInfo.ClientSecret; a change
	// to private_key_jwt deletes the secret.
	AuthMethod *string
	// JWKSURI replaces the JWKS URI ("" removes it).
	JWKSURI *string
	// JWKS replaces the JWKS document (empty removes it).
	JWKS *[]byte
	// RequestObjectAlg replaces the request object algorithm ("" allows any supported).
	RequestObjectAlg *string
	// LogoURI, PolicyURI and TOSURI replace the client's logo, policy and terms-of-service
	// URLs ("" removes one).
	LogoURI, PolicyURI, TOSURI *string
}

// UpdateClient applies up to the client with that id and returns it, with the new secret
// when the change of authentication method issued one (ClientUpdate.AuthMethod); the result is
// validated by the same rules as CreateClient, with the same errors. ErrClientNotFound
// (matching ErrNotFound) for an unknown id. Tokens already issued keep their scopes until a
// refresh, which checks the new ones.
func (p *Provider) UpdateClient(ctx context.Context, id string, up ClientUpdate) (ClientInfo, error) {
	var c *storage.Client
	var secret string
	err := p.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if c, err = p.store.ClientByID(ctx, id); err != nil {
			return clientNotFound(err)
		}
		applyClientUpdate(c, up)
		if err := checkClient(c); err != nil {
			return err
		}
		if err := p.store.UpdateClient(ctx, c); err != nil {
			return clientNotFound(err)
		}
		if secret, err = p.reissueSecretFor(ctx, c); err != nil {
			return err
		}
		return p.events.Emit(ctx, &events.ClientChanged{ClientID: id, Action: events.ClientUpdated})
	})
	if err != nil {
		return ClientInfo{}, err
	}
	p.keySets.Forget(id) // its jwks_uri or keys may have changed
	info := clientInfo(c)
	info.ClientSecret = secret
	return info, nil
}

// set writes *v to *dst unless v is nil.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// RotateClientSecret gives the confidential client with that id a new secret of 256 random
// bits and returns it, once: it is stored only as its keyed hash. The old secret stops
// authenticating at once. ErrClientNotFound (matching ErrNotFound) for an unknown id,
// ErrPublicClient for a public client, ErrNoClientSecret for a private_key_jwt client. A
// client_secret_jwt client's new secret is also stored sealed.
func (p *Provider) RotateClientSecret(ctx context.Context, id string) (string, error) {
	c, err := p.store.ClientByID(ctx, id)
	if err != nil {
		return "", clientNotFound(err)
	}
	if c.Public {
		return "", ErrPublicClient
	}
	if !clientHasSecret(c) {
		return "", ErrNoClientSecret
	}
	secret, err := randomToken(p.random)
	if err != nil {
		return "", err
	}
	if err := p.setClientSecret(ctx, c, secret); err != nil {
		return "", err
	}
	if err := p.inTxRecording(ctx, &events.ClientChanged{ClientID: id, Action: events.ClientSecretRotated}, func(ctx context.Context) error {
		return clientNotFound(p.store.SetClientSecret(ctx, id, c.SecretHash, c.SecretSealed))
	}); err != nil {
		return "", err
	}
	return secret, nil
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

// DeleteClient removes a client with its codes, tokens and consents; ErrClientNotFound
// (matching ErrNotFound) when there is none.
func (p *Provider) DeleteClient(ctx context.Context, id string) error {
	err := p.inTxRecording(ctx, &events.ClientChanged{ClientID: id, Action: events.ClientDeleted}, func(ctx context.Context) error {
		return clientNotFound(p.store.DeleteClient(ctx, id))
	})
	if err == nil {
		p.keySets.Forget(id)
	}
	return err
}

// UserSpec describes a user to create (CreateUser).
type UserSpec struct {
	// Email is required: a bare address, unique by publicauth.EmailKey (else ErrEmailTaken).
	Email string
	// Password is required and must pass the password rule.
	Password string
	// Name is optional: the display name, by default the email's local part (the text
	// before its "@").
	Name string
	// Role is optional: "user" (the default when empty) or "admin".
	Role string
	// Verified is optional (default false): it marks the email as verified.
	Verified bool
	// RequirePIN is optional (default false): it turns the PIN gate on for the user.
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
	// Profile is the user's standard profile, under the OpenID Connect claim names.
	Profile Profile `json:"profile"`
}

func userInfo(u *publicauth.User) UserInfo {
	return UserInfo{
		ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Status: u.Status,
		EmailVerified: u.EmailVerified, RequirePIN: u.RequirePIN, LoginMethods: u.LoginMethods(),
		CreatedAt: u.CreatedAt.UTC(), Profile: u.Profile,
	}
}

// CreateUser creates a user with a password (the password rules apply); ErrEmailTaken when
// another user has the email.
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

// UserByEmail returns the user whose email has the same publicauth.EmailKey as email (case
// and an IDNA domain's forms do not matter); ErrUserNotFound (matching ErrNotFound) when
// none has.
func (p *Provider) UserByEmail(ctx context.Context, email string) (UserInfo, error) {
	u, err := p.store.UserByEmail(ctx, email)
	if err != nil {
		return UserInfo{}, userNotFound(err)
	}
	return userInfo(u), nil
}

// SetUserRequirePIN turns the PIN gate of an existing user on or off. user is the user's
// id or email address; ErrUserNotFound (matching ErrNotFound) when neither names a user.
func (p *Provider) SetUserRequirePIN(ctx context.Context, user string, on bool) (UserInfo, error) {
	return p.UpdateUser(ctx, user, UserUpdate{RequirePIN: &on})
}

// DisableUser disables an existing user: it can no longer log in, and its sessions, access
// tokens, refresh tokens and consents are revoked with the change (UserUpdate.Disabled).
// UpdateUser with Disabled false enables it again. user is the user's id or email address;
// ErrUserNotFound (matching ErrNotFound) when neither names a user.
func (p *Provider) DisableUser(ctx context.Context, user string) (UserInfo, error) {
	disabled := true
	return p.UpdateUser(ctx, user, UserUpdate{Disabled: &disabled})
}

// DeleteUser deletes an existing user and, in one transaction, everything of theirs: access
// and refresh tokens and unused codes issued to them (refused at once by introspection,
// userinfo and the token endpoint), consents, sessions, PIN challenges, one-time links,
// linked social identities and permission records. The permission audit log keeps its
// entries. The email address is free to register again. user is the user's id or email
// address; ErrUserNotFound (matching ErrNotFound) when neither names a user.
func (p *Provider) DeleteUser(ctx context.Context, user string) error {
	u, err := p.userByIDOrEmail(ctx, user)
	if err != nil {
		return err
	}
	return userNotFound(p.auth.DeleteUser(ctx, u.ID))
}

// userByIDOrEmail returns the user with the id user, or else with the email user.
func (p *Provider) userByIDOrEmail(ctx context.Context, user string) (*publicauth.User, error) {
	u, err := p.store.UserByID(ctx, user)
	if errors.Is(err, publicauth.ErrUserNotFound) {
		u, err = p.store.UserByEmail(ctx, user)
	}
	return u, userNotFound(err)
}

// UserUpdate is what UpdateUser changes on a user: each field that is not nil. Every field
// is optional (nil keeps the stored value).
type UserUpdate struct {
	// RequirePIN turns the user's PIN gate on or off.
	RequirePIN *bool
	// Disabled true disables the account: it can no longer log in, and its sessions,
	// access tokens, refresh tokens and consents are revoked in one transaction with the
	// change. False enables it again, and revokes nothing.
	Disabled *bool
	// Profile changes the user's name and standard profile (phone_number_verified
	// included); its zero value changes nothing. A refused value is an error naming the
	// field.
	Profile ProfileChange
}

// UpdateUser applies up to the user that user names by id or email address, in one
// transaction, and returns the user; ErrUserNotFound (matching ErrNotFound) when neither
// names a user.
func (p *Provider) UpdateUser(ctx context.Context, user string, up UserUpdate) (UserInfo, error) {
	u, err := p.userByIDOrEmail(ctx, user)
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
	err = p.store.InTx(ctx, func(ctx context.Context) error {
		if !up.Profile.IsZero() {
			if u, err = p.auth.ChangeProfile(ctx, u.ID, up.Profile, true); err != nil {
				return err
			}
		}
		if change != (publicauth.AccountChange{}) {
			u, err = p.auth.ChangeAccount(ctx, u.ID, change)
		}
		return err
	})
	if err != nil {
		return UserInfo{}, userNotFound(err)
	}
	return userInfo(u), nil
}

// RotateKeys adds a new RS256, ES256 and EdDSA key and returns the published set. Every
// replica publishes the new keys within Config.KeyReloadInterval; they sign from one and a
// half intervals after the rotation. The previous keys sign until then and stay published until
// every token they signed has expired.
func (p *Provider) RotateKeys(ctx context.Context) ([]KeyInfo, error) {
	if err := p.keys.rotate(ctx); err != nil {
		return nil, err
	}
	return p.keys.infos(), nil
}

// Keys returns the published signing keys.
func (p *Provider) Keys() []KeyInfo { return p.keys.infos() }
