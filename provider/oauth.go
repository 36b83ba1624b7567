package provider

import (
	"context"
	"maps"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/handler/pkce"
	fositestorage "github.com/ory/fosite/storage"
	"github.com/ory/fosite/token/hmac"

	"github.com/gatehouse-id/gatehouse/storage"
)

// idTokenStrategy signs each client's ID tokens with the algorithm it registered (RS256
// unless `client create --id-token-alg ES256|EdDSA`).
type idTokenStrategy struct {
	byAlg map[string]*openid.DefaultStrategy // one per supported algorithm
}

// GenerateIDToken signs the ID token of r, with the claims WithClaims gave the request
// (withTokenClaims) added to the session's for this token only: they never replace one
// the session holds, and fosite's standard claims override any.
func (s *idTokenStrategy) GenerateIDToken(ctx context.Context, lifespan time.Duration, r fosite.Requester) (string, error) {
	extra, err := tokenClaimsFor(ctx, ClaimsIDToken, r)
	if err != nil {
		return "", err
	}
	if len(extra) > 0 {
		if sess, ok := r.GetSession().(openid.Session); ok && sess.IDTokenClaims() != nil {
			c := sess.IDTokenClaims()
			stored := c.Extra
			merged := maps.Clone(stored)
			if merged == nil {
				merged = map[string]any{}
			}
			for name, value := range extra {
				if _, set := merged[name]; !set {
					merged[name] = value
				}
			}
			c.Extra = merged
			defer func() { c.Extra = stored }()
		}
	}
	alg := AlgRS256
	if c, ok := r.GetClient().(*storage.Client); ok && s.byAlg[c.IDTokenAlg] != nil {
		alg = c.IDTokenAlg
	}
	if sess, ok := r.GetSession().(openid.Session); ok && alg == AlgEdDSA && sess.IDTokenClaims() != nil {
		fixEdDSAAccessTokenHash(ctx, sess.IDTokenClaims())
	}
	return s.byAlg[alg].GenerateIDToken(ctx, lifespan, r)
}

// fositeStore is everything fosite's handlers need from storage.
type fositeStore interface {
	fosite.Storage
	oauth2.CoreStorage
	oauth2.TokenRevocationStorage
	openid.OpenIDConnectRequestStorage
	pkce.PKCERequestStorage
	// fosite begins its transactions through this (storage.MaybeBeginTx); the refresh
	// grant's refreshStore must keep it.
	fositestorage.Transactional
}

// newOAuth2Provider assembles fosite from typed handlers: authorization code (with PKCE and
// OpenID Connect), refresh token, client credentials, introspection, revocation and pushed
// authorization requests (stored in access.store). Nothing else is enabled — no implicit or hybrid flow, no password grant. Access tokens are
// stateless: access verifies them, for the revocation endpoint among others.
func newOAuth2Provider(cfg Config, store fositeStore, access *accessTokenVerifier, keySets *clientKeySets) (*fosite.Fosite, *jwtSigner) {
	keys, now := access.keys, access.now
	fc := &fosite.Config{
		AccessTokenLifespan:            cfg.AccessTokenLifespan,
		RefreshTokenLifespan:           cfg.RefreshTokenLifespan,
		AuthorizeCodeLifespan:          cfg.AuthorizeCodeLifespan,
		IDTokenLifespan:                cfg.IDTokenLifespan,
		IDTokenIssuer:                  cfg.Issuer,
		AccessTokenIssuer:              cfg.Issuer,
		TokenURL:                       cfg.Issuer + "/api/oauth/token",
		ScopeStrategy:                  fosite.ExactScopeStrategy,
		AudienceMatchingStrategy:       matchAudience,
		EnforcePKCE:                    !cfg.AllowConfidentialWithoutPKCE,
		EnforcePKCEForPublicClients:    true,
		EnablePKCEPlainChallengeMethod: false,
		AllowedPromptValues:            []string{"none", "login", "consent", "select_account"},
		RefreshTokenScopes:             []string{"offline_access"},
		MinParameterEntropy:            fosite.MinParameterEntropy,
		SendDebugMessagesToClients:     false,
		UseLegacyErrorFormat:           false,
		ClientSecretsHasher:            secretHasher{key: deriveKey(cfg.Secret, "client-secrets")},
		GlobalSecret:                   deriveKey(cfg.Secret, "token-hmac"),
		TokenEntropy:                   32,
	}
	opaque := oauth2.NewHMACSHAStrategyUnPrefixed(&hmac.HMACStrategy{Config: fc}, fc)
	tokens := &tokenStrategy{
		HMACSHAStrategyUnPrefixed: opaque,
		signer:                    &jwtSigner{keys: keys, alg: cfg.AccessTokenAlg},
		issuer:                    cfg.Issuer,
		lifespan:                  cfg.AccessTokenLifespan,
		now:                       now,
	}
	// Verification looks keys up by kid, so either algorithm's signer verifies any token.
	idSigner := &jwtSigner{keys: keys, alg: AlgRS256}
	idStrategies := map[string]*openid.DefaultStrategy{}
	for _, alg := range supportedAlgs {
		idStrategies[alg] = &openid.DefaultStrategy{Signer: &jwtSigner{keys: keys, alg: alg}, Config: fc}
	}
	idStrategies[AlgRS256].Signer = idSigner
	idTokens := &openid.IDTokenHandleHelper{IDTokenStrategy: &idTokenStrategy{byAlg: idStrategies}}

	code := &oauth2.AuthorizeExplicitGrantHandler{
		AccessTokenStrategy:    tokens,
		RefreshTokenStrategy:   tokens,
		AuthorizeCodeStrategy:  tokens,
		CoreStorage:            store,
		TokenRevocationStorage: store,
		Config:                 fc,
	}
	refresh := &oauth2.RefreshTokenGrantHandler{
		AccessTokenStrategy:    tokens,
		RefreshTokenStrategy:   tokens,
		TokenRevocationStorage: refreshStore{fositeStore: store, store: access.store},
		Config:                 fc,
	}
	clientCredentials := &oauth2.ClientCredentialsGrantHandler{
		HandleHelper: &oauth2.HandleHelper{AccessTokenStrategy: tokens, AccessTokenStorage: store, Config: fc},
		Config:       fc,
	}
	oidcCode := &openid.OpenIDConnectExplicitHandler{
		OpenIDConnectRequestStorage:   store,
		OpenIDConnectRequestValidator: openid.NewOpenIDConnectRequestValidator(idTokenHintSigner{idSigner}, fc),
		Config:                        fc,
		IDTokenHandleHelper:           idTokens,
	}
	oidcRefresh := &openid.OpenIDConnectRefreshHandler{IDTokenHandleHelper: idTokens, Config: fc}
	pkceHandler := &pkce.Handler{AuthorizeCodeStrategy: tokens, Storage: store, Config: fc}
	introspection := &oauth2.CoreValidator{CoreStrategy: tokens, CoreStorage: store, Config: fc}
	revocation := &revocationHandler{access: access, refresh: &oauth2.TokenRevocationHandler{
		TokenRevocationStorage: store,
		RefreshTokenStrategy:   tokens,
		AccessTokenStrategy:    tokens,
	}}

	device := &deviceGrantHandler{fc: fc, store: store, devices: access.store, tokens: tokens, idTokens: idTokens, now: now}

	// The order follows fosite's compose: grant handlers first, OpenID Connect next, PKCE last.
	fc.AuthorizeEndpointHandlers = fosite.AuthorizeEndpointHandlers{code, oidcCode, pkceHandler}
	fc.TokenEndpointHandlers = fosite.TokenEndpointHandlers{code, clientCredentials, refresh, device, oidcCode, oidcRefresh, pkceHandler}
	fc.TokenIntrospectionHandlers = fosite.TokenIntrospectionHandlers{introspection}
	fc.RevocationHandlers = fosite.RevocationHandlers{revocation}
	fc.PushedAuthorizeEndpointHandlers = fosite.PushedAuthorizeEndpointHandlers{newPushedAuthorizeHandler(fc, access.store, now)}
	oauth := fosite.NewOAuth2Provider(store, fc)
	// Every endpoint that authenticates clients (token, introspection, revocation, PAR,
	// device authorization) goes through fosite's AuthenticateClient, so this one strategy
	// decides them all.
	fc.JWKSFetcherStrategy = keySets
	fc.ClientAuthenticationStrategy = singleClientAuthentication((&clientAuthenticator{
		clients: store, hasher: fc.ClientSecretsHasher, secrets: newClientSecretSealer(cfg.Secret),
		keySets: keySets, issuer: cfg.Issuer, now: now,
	}).authenticate)
	return oauth, idSigner
}
