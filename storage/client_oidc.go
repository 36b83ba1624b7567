package storage

import (
	"encoding/json"

	"github.com/go-jose/go-jose/v3"
	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/dpop"
)

// The client authentication methods of RFC 6749 §2.3, OpenID Connect Core §9 and RFC 7523.
const (
	AuthMethodSecretBasic   = "client_secret_basic"
	AuthMethodSecretPost    = "client_secret_post"
	AuthMethodSecretJWT     = "client_secret_jwt"
	AuthMethodPrivateKeyJWT = "private_key_jwt"
	AuthMethodNone          = "none"
)

// ClientAuthentication is how a client authenticates and the keys it signs with. Storage
// keeps the values as they are given; the provider validates them.
type ClientAuthentication struct {
	// TokenEndpointAuthMethod is one of the AuthMethod constants. Empty on clients
	// registered before migration 12: client_secret_basic or client_secret_post for a
	// confidential client, none for a public one (see AuthMethod).
	TokenEndpointAuthMethod string
	// JWKSURI is where the client publishes its JSON Web Key Set; empty for none.
	JWKSURI string
	// JWKS is the client's JSON Web Key Set document (public keys only); empty for none.
	JWKS []byte
	// SecretSealed is the client secret sealed by the provider, kept for client_secret_jwt
	// clients only (HS256 needs the secret itself); nil otherwise.
	SecretSealed []byte
	// RequestObjectSigningAlg is the only JWS algorithm the client's request objects may
	// use; empty allows any algorithm the provider supports (never "none").
	RequestObjectSigningAlg string
}

// AuthMethod is the client's registered authentication method, with the default of a client
// registered before migration 12: "none" for a public client, client_secret_basic for a
// confidential one (LegacyAuthMethod tells such a client apart).
func (c *Client) AuthMethod() string {
	switch {
	case c.TokenEndpointAuthMethod != "":
		return c.TokenEndpointAuthMethod
	case c.Public:
		return AuthMethodNone
	default:
		return AuthMethodSecretBasic
	}
}

// LegacyAuthMethod reports a confidential client registered before migration 12 and not
// updated since: it may use client_secret_basic or client_secret_post, as it could then.
func (c *Client) LegacyAuthMethod() bool { return c.TokenEndpointAuthMethod == "" && !c.Public }

var _ fosite.OpenIDConnectClient = (*Client)(nil)

// GetRequestURIs is empty: the provider never fetches a request_uri; it accepts only those
// its own pushed authorization request endpoint issued.
func (c *Client) GetRequestURIs() []string { return nil }

// GetJSONWebKeys returns the client's registered key set, or nil when it has none (or it
// does not parse, which registration prevents). A key without "use" is marked "sig", as
// fosite looks only at signing keys and RFC 7517 §4.2 leaves "use" optional. A key outside
// the bounds every verifying key has (dpop.CheckPublicKey: RSA of 2048 to 8192 bits, EC on
// P-256 or larger) is left out, so one registered before registration refused it never
// verifies a request object.
func (c *Client) GetJSONWebKeys() *jose.JSONWebKeySet {
	if len(c.JWKS) == 0 {
		return nil
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(c.JWKS, &set); err != nil {
		return nil
	}
	keys := set.Keys[:0]
	for _, k := range set.Keys {
		if dpop.CheckPublicKey(k.Key) != nil {
			continue
		}
		if k.Use == "" {
			k.Use = "sig"
		}
		keys = append(keys, k)
	}
	set.Keys = keys
	return &set
}

// GetJSONWebKeysURI returns the client's registered JWKS URI, or "".
func (c *Client) GetJSONWebKeysURI() string { return c.JWKSURI }

// GetRequestObjectSigningAlgorithm returns the algorithm the client's request objects must
// use, or "" for any.
func (c *Client) GetRequestObjectSigningAlgorithm() string { return c.RequestObjectSigningAlg }

// GetTokenEndpointAuthMethod returns AuthMethod.
func (c *Client) GetTokenEndpointAuthMethod() string { return c.AuthMethod() }

// GetTokenEndpointAuthSigningAlgorithm is "": the provider checks client assertions itself
// and accepts every algorithm it advertises.
func (c *Client) GetTokenEndpointAuthSigningAlgorithm() string { return "" }
