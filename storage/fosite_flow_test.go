package storage_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/handler/pkce"
	"github.com/ory/fosite/token/jwt"
)

// flow drives fosite's authorization code, PKCE, OpenID Connect and refresh handlers with the
// store as their storage, the way the provider composes them.
type flow struct {
	t        *testing.T
	store    *storage.Store
	provider fosite.OAuth2Provider
	strategy *oauth2.HMACSHAStrategy
}

const (
	flowClient   = "spa"
	flowRedirect = "https://app.example/callback"
	flowVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXkdBjftJeZ4CVP-mB92K27uhbUJU1p1r"
)

func newFlow(t *testing.T, store *storage.Store) *flow {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	config := &fosite.Config{
		GlobalSecret:          []byte("0123456789abcdef0123456789abcdef"),
		IDTokenIssuer:         "https://issuer.example",
		AccessTokenLifespan:   time.Hour,
		RefreshTokenLifespan:  24 * time.Hour,
		AuthorizeCodeLifespan: 10 * time.Minute,
		IDTokenLifespan:       time.Hour,
		EnforcePKCE:           true,
		RefreshTokenScopes:    []string{"offline_access"},
	}
	hmac := compose.NewOAuth2HMACStrategy(config)
	idTokens := compose.NewOpenIDConnectStrategy(func(context.Context) (any, error) { return key, nil }, config)
	code := &oauth2.AuthorizeExplicitGrantHandler{
		AccessTokenStrategy: hmac, RefreshTokenStrategy: hmac, AuthorizeCodeStrategy: hmac,
		CoreStorage: store, TokenRevocationStorage: store, Config: config,
	}
	refresh := &oauth2.RefreshTokenGrantHandler{
		AccessTokenStrategy: hmac, RefreshTokenStrategy: hmac, TokenRevocationStorage: store, Config: config,
	}
	pkceHandler := &pkce.Handler{AuthorizeCodeStrategy: hmac, Storage: store, Config: config}
	oidc := &openid.OpenIDConnectExplicitHandler{
		OpenIDConnectRequestStorage:   store,
		IDTokenHandleHelper:           &openid.IDTokenHandleHelper{IDTokenStrategy: idTokens},
		OpenIDConnectRequestValidator: openid.NewOpenIDConnectRequestValidator(idTokens.Signer, config),
		Config:                        config,
	}
	config.AuthorizeEndpointHandlers = fosite.AuthorizeEndpointHandlers{code, pkceHandler, oidc}
	config.TokenEndpointHandlers = fosite.TokenEndpointHandlers{code, refresh, pkceHandler, oidc}

	err = store.CreateClient(context.Background(), &storage.Client{
		ID: flowClient, Public: true, RedirectURIs: []string{flowRedirect},
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
		Scopes:        []string{"openid", "offline_access"},
	})
	if err != nil {
		t.Fatalf("CreateClient: %v", err)
	}
	return &flow{t: t, store: store, provider: fosite.NewOAuth2Provider(store, config), strategy: hmac}
}

// authorize runs an authorization request for user-1 and returns the code.
func (f *flow) authorize() string {
	f.t.Helper()
	ctx := context.Background()
	sum := sha256.Sum256([]byte(flowVerifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {flowClient},
		"redirect_uri":          {flowRedirect},
		"scope":                 {"openid offline_access"},
		"state":                 {"state-0123456789"},
		"nonce":                 {"nonce-0123456789"},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
	}
	ar, err := f.provider.NewAuthorizeRequest(ctx, httptest.NewRequest(http.MethodGet, "/authorize?"+q.Encode(), nil))
	if err != nil {
		f.t.Fatalf("NewAuthorizeRequest: %v", fosite.ErrorToRFC6749Error(err).WithExposeDebug(true).GetDescription())
	}
	ar.GrantScope("openid")
	ar.GrantScope("offline_access")
	now := time.Now().UTC().Round(time.Second)
	session := &openid.DefaultSession{
		Claims:  &jwt.IDTokenClaims{Subject: "user-1", AuthTime: now, RequestedAt: now},
		Headers: &jwt.Headers{},
		Subject: "user-1",
	}
	resp, err := f.provider.NewAuthorizeResponse(ctx, ar, session)
	if err != nil {
		f.t.Fatalf("NewAuthorizeResponse: %v", fosite.ErrorToRFC6749Error(err).WithExposeDebug(true).GetDescription())
	}
	return resp.GetParameters().Get("code")
}

// token posts form to the token endpoint and returns the response, or the error.
func (f *flow) token(form url.Values) (fosite.AccessResponder, error) {
	f.t.Helper()
	ctx := context.Background()
	form.Set("client_id", flowClient)
	r := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req, err := f.provider.NewAccessRequest(ctx, r, &openid.DefaultSession{})
	if err != nil {
		return nil, err
	}
	return f.provider.NewAccessResponse(ctx, req)
}

func (f *flow) exchange(code string) (fosite.AccessResponder, error) {
	f.t.Helper()
	return f.token(url.Values{
		"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {flowRedirect}, "code_verifier": {flowVerifier},
	})
}

func (f *flow) refresh(refreshToken string) (fosite.AccessResponder, error) {
	f.t.Helper()
	return f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

// mustTokens fails unless resp carries an access token and a refresh token.
func (f *flow) mustTokens(resp fosite.AccessResponder, err error) (access, refresh string) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("token request: %v", fosite.ErrorToRFC6749Error(err).WithExposeDebug(true).GetDescription())
	}
	refresh, _ = resp.GetExtra("refresh_token").(string)
	if resp.GetAccessToken() == "" || refresh == "" {
		f.t.Fatalf("token request: got access token %q, refresh token %q, want both", resp.GetAccessToken(), refresh)
	}
	return resp.GetAccessToken(), refresh
}

// accessRevoked reports whether a revocation rule matches an access token issued at issued
// for the grant of refreshToken (access tokens have no rows: DESIGN.md §3).
func (f *flow) accessRevoked(refreshToken string, issued time.Time) bool {
	f.t.Helper()
	ctx := context.Background()
	r, err := f.store.GetRefreshTokenSession(ctx, f.strategy.RefreshTokenSignature(ctx, refreshToken), &openid.DefaultSession{})
	if r == nil {
		f.t.Fatalf("refresh token's grant: %v", err)
	}
	revoked, err := f.store.AccessTokenRevoked(ctx, storage.AccessTokenRef{GrantID: r.GetID(), IssuedAt: issued})
	if err != nil {
		f.t.Fatal(err)
	}
	return revoked
}

func (f *flow) refreshErr(token string) error {
	_, err := f.store.GetRefreshTokenSession(context.Background(), f.strategy.RefreshTokenSignature(context.Background(), token), &openid.DefaultSession{})
	return err
}

func checkIs(t *testing.T, what string, err, want error) {
	t.Helper()
	if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

// TestFositeFlows runs fosite's real handlers on the store: code exchange with PKCE and an
// ID token, refresh rotation, refresh-token reuse and code reuse.
func TestFositeFlows(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Run("code, refresh, refresh reuse revokes the family", func(t *testing.T) {
				f := newFlow(t, b.Open(t))
				resp, err := f.exchange(f.authorize())
				_, rt1 := f.mustTokens(resp, err)
				if idToken, _ := resp.GetExtra("id_token").(string); idToken == "" {
					t.Errorf("got no id_token, want one")
				}
				_, rt2 := f.mustTokens(f.refresh(rt1))
				issued := time.Now()
				checkIs(t, "rotated refresh token", f.refreshErr(rt1), fosite.ErrInactiveToken)
				if f.accessRevoked(rt2, issued) {
					t.Errorf("access tokens of the grant revoked before any reuse")
				}

				if _, err := f.refresh(rt1); !errors.Is(err, fosite.ErrInvalidGrant) {
					t.Errorf("reusing a rotated refresh token: got error %v, want %v", err, fosite.ErrInvalidGrant)
				}
				checkIs(t, "newest refresh token after reuse", f.refreshErr(rt2), fosite.ErrInactiveToken)
				if !f.accessRevoked(rt2, issued) {
					t.Errorf("access tokens of the grant after reuse: not revoked")
				}
				if _, err := f.refresh(rt2); err == nil {
					t.Errorf("refresh with a revoked family: got no error, want one")
				}
			})
			t.Run("code reuse revokes the tokens it produced", func(t *testing.T) {
				f := newFlow(t, b.Open(t))
				code := f.authorize()
				_, rt := f.mustTokens(f.exchange(code))
				issued := time.Now()
				if _, err := f.exchange(code); !errors.Is(err, fosite.ErrInvalidGrant) {
					t.Errorf("second exchange: got error %v, want %v", err, fosite.ErrInvalidGrant)
				}
				if !f.accessRevoked(rt, issued) {
					t.Errorf("access tokens after code reuse: not revoked")
				}
				checkIs(t, "refresh token after code reuse", f.refreshErr(rt), fosite.ErrInactiveToken)
			})
		})
	}
}
