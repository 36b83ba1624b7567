package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse-id/gatehouse/storage"
)

// ErrNoClientSecret: RotateClientSecret named a private_key_jwt client, which authenticates
// with its keys and has no secret.
var ErrNoClientSecret = errors.New("a private_key_jwt client has no secret")

// minJWTSecretBytes is the shortest secret a client_secret_jwt client may have: HS256 keys
// shorter than the hash add nothing to guess (RFC 7518 §3.2).
const minJWTSecretBytes = 32

// checkClientAuthentication validates how c authenticates (ClientSpec.AuthMethod and the
// keys): an empty method stays empty (a client registered before the methods existed).
func checkClientAuthentication(c *storage.Client) []error {
	var errs []error
	method := c.TokenEndpointAuthMethod
	switch {
	case method == "":
	case !slices.Contains(clientAuthMethods, method):
		errs = append(errs, fmt.Errorf("client authentication method %q is not supported (use %s)", method, strings.Join(clientAuthMethods, ", ")))
	case c.Public && method != storage.AuthMethodNone:
		errs = append(errs, fmt.Errorf("a public client authenticates with none, not %s", method))
	case !c.Public && method == storage.AuthMethodNone:
		errs = append(errs, errors.New("a confidential client cannot authenticate with none: create a public client"))
	}
	if c.JWKSURI != "" && len(c.JWKS) > 0 {
		errs = append(errs, errors.New("register either a JWKS URI or a JWKS document, not both"))
	}
	if c.JWKSURI != "" {
		if err := checkJWKSURI(c.JWKSURI); err != nil {
			errs = append(errs, err)
		}
	}
	if len(c.JWKS) > 0 {
		if _, err := parseClientJWKS(c.JWKS); err != nil {
			errs = append(errs, fmt.Errorf("JWKS: %w", err))
		}
	}
	hasKeys := c.JWKSURI != "" || len(c.JWKS) > 0
	if method == storage.AuthMethodPrivateKeyJWT && !hasKeys {
		errs = append(errs, errors.New("a private_key_jwt client needs a JWKS URI or a JWKS document"))
	}
	if alg := c.RequestObjectSigningAlg; alg != "" {
		if !slices.Contains(requestObjectAlgs, alg) {
			errs = append(errs, fmt.Errorf("request object algorithm %q is not supported (use %s)", alg, strings.Join(requestObjectAlgs, ", ")))
		}
		if !hasKeys {
			errs = append(errs, errors.New("a request object algorithm needs the client's keys: a JWKS URI or a JWKS document"))
		}
	}
	return errs
}

// clientHasSecret reports whether a client authenticating with method has a secret at all.
func clientHasSecret(c *storage.Client) bool {
	return !c.Public && c.AuthMethod() != storage.AuthMethodPrivateKeyJWT
}

// setClientSecret stores secret on c: its keyed hash, and for client_secret_jwt also a
// sealed copy, since HS256 assertions are verified with the secret itself.
func (p *Provider) setClientSecret(ctx context.Context, c *storage.Client, secret string) error {
	c.SecretHash = p.hashClientSecret(ctx, secret)
	c.SecretSealed = nil
	if c.AuthMethod() != storage.AuthMethodSecretJWT {
		return nil
	}
	if len(secret) < minJWTSecretBytes {
		return fmt.Errorf("a client_secret_jwt secret must be at least %d bytes", minJWTSecretBytes)
	}
	sealed, err := newClientSecretSealer(p.cfg.Secret).seal(p.random, []byte(secret), sealedSecretAD(c.ID))
	if err != nil {
		return err
	}
	c.SecretSealed = sealed
	return nil
}

// reissueSecretFor brings the secret of c, whose method an update may have changed, in line
// with its method, in ctx's transaction: a private_key_jwt client loses its secret; a client
// whose method needs a secret it lacks (or a sealed copy, for client_secret_jwt) gets a new
// one, returned; a sealed copy no longer needed is dropped. It returns "" when it issued no
// secret.
func (p *Provider) reissueSecretFor(ctx context.Context, c *storage.Client) (string, error) {
	jwtMethod := c.AuthMethod() == storage.AuthMethodSecretJWT
	switch {
	case c.Public:
		return "", nil
	case !clientHasSecret(c):
		if len(c.SecretHash) == 0 && len(c.SecretSealed) == 0 {
			return "", nil
		}
		c.SecretHash, c.SecretSealed = nil, nil
		return "", p.store.SetClientSecret(ctx, c.ID, nil, nil)
	case len(c.SecretHash) == 0 || (jwtMethod && len(c.SecretSealed) == 0):
		secret, err := randomToken(p.random)
		if err != nil {
			return "", err
		}
		if err := p.setClientSecret(ctx, c, secret); err != nil {
			return "", err
		}
		return secret, p.store.SetClientSecret(ctx, c.ID, c.SecretHash, c.SecretSealed)
	case !jwtMethod && len(c.SecretSealed) > 0:
		c.SecretSealed = nil
		return "", p.store.SetClientSecret(ctx, c.ID, c.SecretHash, nil)
	}
	return "", nil
}
