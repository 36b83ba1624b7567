package storage

import (
	"time"

	"github.com/ory/fosite"
)

// Client is a registered OAuth 2.0 / OpenID Connect client. It implements fosite.Client,
// fosite.ResponseModeClient and fosite.OpenIDConnectClient (client_oidc.go), which fosite's
// request object (RFC 9101) handling reads the client's keys from.
type Client struct {
	ID string
	// SecretHash is HMAC-SHA-256 of the client secret under a key derived from the system
	// secret (see provider); empty for public clients.
	SecretHash             []byte
	Name                   string
	RedirectURIs           []string
	PostLogoutRedirectURIs []string
	GrantTypes             []string
	ResponseTypes          []string
	Scopes                 []string
	Audience               []string
	// Public clients have no secret and authenticate with "none" (PKCE protects the code).
	Public bool
	// FirstParty clients skip the consent page.
	FirstParty bool
	// ResourceServer clients may introspect the tokens whose audience names their id, not
	// only their own tokens.
	ResourceServer bool
	// IDTokenAlg is the JWS algorithm of this client's ID tokens: "RS256" (default), "ES256"
	// or "EdDSA".
	IDTokenAlg string
	// RequirePAR clients must push every authorization request (RFC 9126): the
	// authorization endpoint refuses them a request without a pushed request_uri.
	RequirePAR bool
	// RequireDPoP clients must send a DPoP proof (RFC 9449) with every token request, so
	// each of their access tokens is bound to their key.
	RequireDPoP bool
	// ClientAuthentication holds how the client authenticates (migration 12).
	ClientAuthentication
	// BackchannelLogoutURI is where the client receives logout tokens when a session it was
	// issued tokens in ends (OpenID Connect Back-Channel Logout 1.0); "" for none.
	BackchannelLogoutURI string
	// BackchannelLogoutSessionRequired is the client's registration that logout tokens carry
	// `sid`; Gatehouse's always do.
	BackchannelLogoutSessionRequired bool
	// ClientRegistration holds what dynamic client registration keeps (migration 21).
	ClientRegistration
	CreatedAt time.Time
	UpdatedAt time.Time
}

var (
	_ fosite.Client             = (*Client)(nil)
	_ fosite.ResponseModeClient = (*Client)(nil)
)

func (c *Client) GetID() string                   { return c.ID }
func (c *Client) GetHashedSecret() []byte         { return c.SecretHash }
func (c *Client) GetRedirectURIs() []string       { return c.RedirectURIs }
func (c *Client) GetGrantTypes() fosite.Arguments { return fosite.Arguments(c.GrantTypes) }
func (c *Client) GetScopes() fosite.Arguments     { return fosite.Arguments(c.Scopes) }
func (c *Client) IsPublic() bool                  { return c.Public }
func (c *Client) GetAudience() fosite.Arguments   { return fosite.Arguments(c.Audience) }
func (c *Client) GetResponseTypes() fosite.Arguments {
	if len(c.ResponseTypes) == 0 {
		return fosite.Arguments{"code"}
	}
	return fosite.Arguments(c.ResponseTypes)
}

// RequiresDPoP reports whether the client must send a DPoP proof with every token request.
func (c *Client) RequiresDPoP() bool { return c.RequireDPoP }

// GetResponseModes allows the query and form_post response modes (OAuth 2.0 Form Post
// Response Mode); fragment is never used with the code flow.
func (c *Client) GetResponseModes() []fosite.ResponseModeType {
	return []fosite.ResponseModeType{fosite.ResponseModeDefault, fosite.ResponseModeQuery, fosite.ResponseModeFormPost}
}

// SigningKey is one signing key of the provider's key set. The private key is sealed by the
// provider (AES-GCM under the system secret); storage never sees it in clear.
type SigningKey struct {
	KID string
	// Algorithm is the JWS algorithm the key signs with: "RS256" or "ES256".
	Algorithm string
	// Sealed is the encrypted PKCS#8 private key.
	Sealed    []byte
	CreatedAt time.Time
	// RetiredAt is when a newer key of the same algorithm replaced this one; nil while the
	// key is active. A retired key stays published until every token it signed has expired.
	RetiredAt *time.Time
}

// Consent records which scopes a user has granted a client, so the consent page is shown
// only for scopes not granted before.
type Consent struct {
	UserID    string
	ClientID  string
	Scopes    []string
	GrantedAt time.Time
}

// AuthRequest is an authorization request waiting for the user to log in (or consent). The
// browser holds the random request token; storage keys the row by its hash.
type AuthRequest struct {
	// IDHash is the hex SHA-256 of the request token.
	IDHash   string
	ClientID string
	// Form is the URL-encoded parameters of the original /api/oauth/authorize request.
	Form string
	// RequestedAt is when the authorization request first arrived; ID tokens compare
	// auth_time with it for prompt=login and max_age.
	RequestedAt time.Time
	ExpiresAt   time.Time
	// UserID and AuthTime are set when a login completes for this very request.
	UserID   string
	AuthTime *time.Time
}
