package provider

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v3"
	"github.com/go-jose/go-jose/v3/jwt"
	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/storage"
)

// Client authentication methods (RFC 6749 §2.3, OpenID Connect Core §9, RFC 7523 §2.2),
// advertised by discovery for the token, introspection, revocation and PAR endpoints.
var clientAuthMethods = []string{
	storage.AuthMethodSecretBasic, storage.AuthMethodSecretPost, storage.AuthMethodSecretJWT,
	storage.AuthMethodPrivateKeyJWT, storage.AuthMethodNone,
}

// introspectionAuthMethods are clientAuthMethods but none: introspection needs a
// confidential client.
var introspectionAuthMethods = []string{
	storage.AuthMethodSecretBasic, storage.AuthMethodSecretPost, storage.AuthMethodSecretJWT,
	storage.AuthMethodPrivateKeyJWT,
}

// Signing algorithms of client assertions: HMAC for client_secret_jwt, public keys for
// private_key_jwt. "none" is never accepted.
var (
	secretAssertionAlgs = []string{"HS256", "HS384", "HS512"}
	keyAssertionAlgs    = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
	// requestObjectAlgs are the algorithms fosite verifies request objects with.
	requestObjectAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
)

const (
	// clientAssertionType is the client_assertion_type of RFC 7523 §2.2.
	clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// assertionMaxLifetime is how far in the future a client assertion's exp may be. RFC 7523
	// asks for an expiry and leaves its bound to the server; an assertion is made for one
	// request, so a few minutes cover clock skew and a slow network, and bound how long its
	// jti is remembered.
	assertionMaxLifetime = 5 * time.Minute
	// assertionLeeway is the clock skew allowed on exp, nbf and iat.
	assertionLeeway = 30 * time.Second
	// assertionMaxBytes and assertionMaxJTI bound what a client may make the server parse
	// and store.
	assertionMaxBytes = 16 << 10
	assertionMaxJTI   = 256
)

// clientAuthenticator authenticates clients at the token, introspection, revocation, PAR
// and device authorization endpoints with the one method each client registered; any other method is
// invalid_client. Secrets are compared as keyed hashes; assertions (RFC 7523) are verified
// here rather than by fosite, whose handling skips keys without "use", pins one algorithm
// per client, accepts any exp and refuses HS256 (client_secret_jwt).
type clientAuthenticator struct {
	clients fosite.ClientManager
	hasher  fosite.Hasher
	// secrets opens the sealed secrets of client_secret_jwt clients.
	secrets sealer
	keySets *clientKeySets
	issuer  string
	now     func() time.Time
}

// presentedMethod is the authentication method a request uses, by its credentials.
func presentedMethod(r *http.Request, form url.Values) (method, clientID, secret string, err error) {
	if t := form.Get("client_assertion_type"); t != "" || form.Get("client_assertion") != "" {
		if t != clientAssertionType {
			return "", "", "", fosite.ErrInvalidRequest.WithHintf("client_assertion_type must be '%s'.", clientAssertionType)
		}
		if form.Get("client_assertion") == "" {
			return "", "", "", fosite.ErrInvalidRequest.WithHint("The client_assertion parameter is missing.")
		}
		if form.Get("client_secret") != "" {
			return "", "", "", fosite.ErrInvalidRequest.WithHint("The client authenticated twice: send a client_assertion or a client_secret, never both.")
		}
		return "assertion", form.Get("client_id"), "", nil
	}
	if id, pass, ok := r.BasicAuth(); ok {
		// RFC 6749 §2.3.1: both parts are form-urlencoded before Basic encoding.
		if clientID, err = url.QueryUnescape(id); err == nil {
			secret, err = url.QueryUnescape(pass)
		}
		if err != nil {
			return "", "", "", fosite.ErrInvalidRequest.WithHint("The HTTP Basic credentials could not be decoded from application/x-www-form-urlencoded.")
		}
		if id := form.Get("client_id"); id != "" && id != clientID {
			return "", "", "", fosite.ErrInvalidRequest.WithHint("The client_id of the form differs from the client of HTTP Basic.")
		}
		if secret == "" {
			// A public client naming itself in Basic with no password sends no secret.
			return storage.AuthMethodNone, clientID, "", nil
		}
		return storage.AuthMethodSecretBasic, clientID, secret, nil
	}
	if s := form.Get("client_secret"); s != "" {
		return storage.AuthMethodSecretPost, form.Get("client_id"), s, nil
	}
	return storage.AuthMethodNone, form.Get("client_id"), "", nil
}

// authenticate is a fosite.ClientAuthenticationStrategy. It returns invalid_client for an
// unknown client, a method other than the registered one, a wrong secret and every failed
// assertion check; invalid_request for malformed credentials.
func (a *clientAuthenticator) authenticate(ctx context.Context, r *http.Request, form url.Values) (fosite.Client, error) {
	method, clientID, secret, err := presentedMethod(r, form)
	if err != nil {
		return nil, err
	}
	if method == "assertion" {
		return a.authenticateAssertion(ctx, r, form.Get("client_assertion"), clientID)
	}
	c, err := a.client(ctx, clientID)
	if err != nil {
		return nil, err
	}
	registered := c.AuthMethod()
	allowed := method == registered || (c.LegacyAuthMethod() && method == storage.AuthMethodSecretPost)
	if !allowed {
		return nil, wrongMethod(registered, method)
	}
	if method == storage.AuthMethodNone {
		return c, nil
	}
	if err := a.hasher.Compare(ctx, c.SecretHash, []byte(secret)); err != nil || len(c.SecretHash) == 0 {
		return nil, fosite.ErrInvalidClient.WithHint("The client secret does not match.")
	}
	return c, nil
}

func wrongMethod(registered, used string) error {
	return fosite.ErrInvalidClient.WithHintf("The client is registered for client authentication method '%s', but the request used '%s'.", registered, used)
}

// client loads the client named in the credentials; invalid_client when there is none.
func (a *clientAuthenticator) client(ctx context.Context, id string) (*storage.Client, error) {
	if id == "" {
		return nil, fosite.ErrInvalidClient.WithHint("Client authentication is required.")
	}
	fc, err := a.clients.GetClient(ctx, id)
	if errors.Is(err, fosite.ErrNotFound) {
		return nil, fosite.ErrInvalidClient.WithHint("The client does not exist.")
	} else if err != nil {
		return nil, err
	}
	c, ok := fc.(*storage.Client)
	if !ok {
		return nil, fosite.ErrServerError.WithDebug(fmt.Sprintf("unexpected client type %T", fc))
	}
	return c, nil
}

// assertionClaims are the claims RFC 7523 §3 requires of a client assertion.
type assertionClaims struct {
	jwt.Claims
}

// authenticateAssertion verifies a client_secret_jwt or private_key_jwt assertion (RFC 7523
// §3, OpenID Connect Core §9): signed with an algorithm of the client's method; iss and sub
// the client id (and client_id, when the form names one); aud the issuer, the token endpoint
// or the endpoint called; exp present, not past and at most assertionMaxLifetime ahead; nbf
// and iat not in the future; jti present and never seen before, remembered in the database
// until exp so no replica accepts it twice.
func (a *clientAuthenticator) authenticateAssertion(ctx context.Context, r *http.Request, assertion, formClientID string) (fosite.Client, error) {
	if len(assertion) > assertionMaxBytes {
		return nil, fosite.ErrInvalidClient.WithHint("The client_assertion is too large.")
	}
	tok, err := jwt.ParseSigned(assertion)
	if err != nil || len(tok.Headers) != 1 {
		return nil, fosite.ErrInvalidClient.WithHint("The client_assertion is not a signed JWT in compact serialization.")
	}
	header := tok.Headers[0]
	var unverified assertionClaims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, fosite.ErrInvalidClient.WithHint("The client_assertion's claims could not be read.")
	}
	clientID := formClientID
	if clientID == "" {
		clientID = unverified.Subject
	}
	c, err := a.client(ctx, clientID)
	if err != nil {
		return nil, err
	}
	var keys []any
	switch method := c.AuthMethod(); method {
	case storage.AuthMethodSecretJWT:
		if !slices.Contains(secretAssertionAlgs, header.Algorithm) {
			return nil, fosite.ErrInvalidClient.WithHintf("A client_secret_jwt assertion must be signed with one of %s.", strings.Join(secretAssertionAlgs, ", "))
		}
		secret, err := a.secrets.open(c.SecretSealed, sealedSecretAD(c.ID))
		if err != nil || len(c.SecretSealed) == 0 {
			return nil, fosite.ErrInvalidClient.WithHint("The client has no secret to verify its assertion: rotate its secret.")
		}
		keys = []any{secret}
	case storage.AuthMethodPrivateKeyJWT:
		if !slices.Contains(keyAssertionAlgs, header.Algorithm) {
			return nil, fosite.ErrInvalidClient.WithHintf("A private_key_jwt assertion must be signed with one of %s.", strings.Join(keyAssertionAlgs, ", "))
		}
		if keys, err = a.verificationKeys(ctx, c, header); err != nil {
			return nil, err
		}
	default:
		return nil, wrongMethod(method, "client assertion ("+storage.AuthMethodSecretJWT+" or "+storage.AuthMethodPrivateKeyJWT+")")
	}
	var claims assertionClaims
	verified := false
	for _, key := range keys {
		if tok.Claims(key, &claims) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, fosite.ErrInvalidClient.WithHint("The client_assertion's signature does not verify with the client's keys.")
	}
	if err := a.checkAssertionClaims(r, c.ID, claims); err != nil {
		return nil, err
	}
	// Recorded only once everything else holds, so nobody without the client's key can
	// spend its jti values.
	// It is remembered past exp by the leeway that still accepts it.
	jtiKey := fmt.Sprintf("client-assertion:%d:%s:%s", len(c.ID), c.ID, claims.ID)
	if err := a.clients.SetClientAssertionJWT(ctx, jtiKey, claims.Expiry.Time().Add(assertionLeeway)); errors.Is(err, fosite.ErrJTIKnown) {
		return nil, fosite.ErrInvalidClient.WithHint("The client_assertion's jti has been used before: an assertion authenticates one request.")
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// checkAssertionClaims applies RFC 7523 §3 to a verified assertion of clientID.
func (a *clientAuthenticator) checkAssertionClaims(r *http.Request, clientID string, claims assertionClaims) error {
	now := a.now()
	switch {
	case claims.Issuer != clientID || claims.Subject != clientID:
		return fosite.ErrInvalidClient.WithHint("The client_assertion's iss and sub must both be the client id.")
	case !a.audienceMatches(r, claims.Audience):
		return fosite.ErrInvalidClient.WithHintf("The client_assertion's aud must contain the issuer '%s' or the URL of the endpoint called.", a.issuer)
	case claims.Expiry == nil:
		return fosite.ErrInvalidClient.WithHint("The client_assertion has no exp.")
	case claims.Expiry.Time().After(now.Add(assertionMaxLifetime + assertionLeeway)):
		return fosite.ErrInvalidClient.WithHintf("The client_assertion's exp is more than %s ahead: assertions must be short-lived.", assertionMaxLifetime)
	case claims.ID == "":
		return fosite.ErrInvalidClient.WithHint("The client_assertion has no jti.")
	case len(claims.ID) > assertionMaxJTI:
		return fosite.ErrInvalidClient.WithHintf("The client_assertion's jti is longer than %d characters.", assertionMaxJTI)
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Time: now}, assertionLeeway); err != nil {
		return fosite.ErrInvalidClient.WithHintf("The client_assertion is not valid now: %s.", strings.TrimPrefix(err.Error(), "go-jose/go-jose/jwt: "))
	}
	return nil
}

// audienceMatches accepts the issuer, the token endpoint (RFC 7523 §3 names it as the
// server's identity) and the URL of the endpoint the request was sent to.
func (a *clientAuthenticator) audienceMatches(r *http.Request, aud jwt.Audience) bool {
	accepted := []string{a.issuer, a.issuer + "/api/oauth/token"}
	for _, endpoint := range []string{"/api/oauth/introspect", "/api/oauth/revoke", "/api/oauth/par", "/api/oauth/device/code"} {
		if strings.HasSuffix(r.URL.Path, endpoint) {
			accepted = append(accepted, a.issuer+endpoint)
		}
	}
	for _, want := range accepted {
		if aud.Contains(want) {
			return true
		}
	}
	return false
}

// verificationKeys returns the client's public keys that may have signed a JWT with header:
// those of its kid (all, without one) whose type fits the algorithm. With a jwks_uri and no
// such key, it refetches the set once (clientKeySets bounds how often).
func (a *clientAuthenticator) verificationKeys(ctx context.Context, c *storage.Client, header jose.Header) ([]any, error) {
	if set := c.GetJSONWebKeys(); set != nil {
		if keys := matchingKeys(set, header); len(keys) > 0 {
			return keys, nil
		}
		return nil, fosite.ErrInvalidClient.WithHintf("No key of the client matches kid '%s' and algorithm '%s'.", header.KeyID, header.Algorithm)
	}
	if c.JWKSURI == "" {
		return nil, fosite.ErrInvalidClient.WithHint("The client has no JSON Web Keys registered.")
	}
	for _, refresh := range []bool{false, true} {
		set, err := a.keySets.ResolveClient(ctx, c, refresh)
		if err != nil {
			return nil, fosite.ErrInvalidClient.WithHint("The client's JSON Web Key Set could not be fetched.").WithWrap(err).WithDebug(err.Error())
		}
		if keys := matchingKeys(set, header); len(keys) > 0 {
			return keys, nil
		}
	}
	return nil, fosite.ErrInvalidClient.WithHintf("No key of the client matches kid '%s' and algorithm '%s'.", header.KeyID, header.Algorithm)
}

// matchingKeys returns the signing keys of set with the header's kid (every key when it has
// none) whose type can verify the header's algorithm and whose own alg, when set, is it.
// Both sources of sets (storage.Client.GetJSONWebKeys, parseClientJWKS) already left out
// the keys dpop.CheckPublicKey refuses.
func matchingKeys(set *jose.JSONWebKeySet, header jose.Header) []any {
	var out []any
	for _, k := range set.Keys {
		if header.KeyID != "" && k.KeyID != header.KeyID {
			continue
		}
		if k.Use != "" && k.Use != "sig" || k.Algorithm != "" && k.Algorithm != header.Algorithm {
			continue
		}
		if algs, ok := assertionKeyAlgs(k); ok && slices.Contains(algs, header.Algorithm) {
			out = append(out, k.Key)
		}
	}
	return out
}

// assertionKeyAlgs returns the algorithms a public key can verify.
func assertionKeyAlgs(k jose.JSONWebKey) ([]string, bool) {
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}, true
	case *ecdsa.PublicKey:
		switch key.Curve {
		case elliptic.P256():
			return []string{"ES256"}, true
		case elliptic.P384():
			return []string{"ES384"}, true
		case elliptic.P521():
			return []string{"ES512"}, true
		}
	case ed25519.PublicKey:
		return []string{"EdDSA"}, true
	}
	return nil, false
}

// sealedSecretAD binds a sealed client secret to its client, so it cannot be moved to
// another client's row.
func sealedSecretAD(clientID string) string { return "client-secret:" + clientID }

// newClientSecretSealer seals the secrets of client_secret_jwt clients (AES-256-GCM under a
// key derived from the system secret for this purpose alone).
func newClientSecretSealer(secret []byte) sealer {
	block, err := aes.NewCipher(deriveKey(secret, "client-secret-seal"))
	if err != nil {
		panic("provider: AES-256 with a 32-byte key: " + err.Error()) // cannot happen
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("provider: GCM over AES: " + err.Error()) // cannot happen
	}
	return sealer{aead: aead}
}

// assertionAlgs are the algorithms of client assertions, for discovery.
func assertionAlgs() []string {
	return slices.Concat(keyAssertionAlgs, secretAssertionAlgs)
}
