package provider_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestIntrospectionIsForTheTokensClient: only the client a token was issued to, or a client
// registered as a resource server whose id is in the token's audience, sees the token as
// active; every other client gets exactly {"active":false}. username (the email) appears
// only with the email scope. Access and refresh tokens follow the same rule.
func TestIntrospectionIsForTheTokensClient(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		appA := e.client(t, provider.ClientSpec{ID: "appA", FirstParty: true})
		appC := e.client(t, provider.ClientSpec{ID: "appC", FirstParty: true})
		api := e.client(t, provider.ClientSpec{ID: "api", ResourceServer: true, GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}})
		billing := e.client(t, provider.ClientSpec{ID: "billing", ResourceServer: true, GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}})
		svc := clientWithAudience(t, e, provider.ClientSpec{ID: "svc", GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}}, "api", "appC")

		br := e.browser(t)
		_, openidOnly := e.relyingParty(t, appA, "openid", "offline_access").signIn(t, e, br, alice.Email)
		_, withEmail := e.relyingParty(t, appA, "openid", "email", "offline_access").signIn(t, e, br, alice.Email)
		// svc's token is meant for api and appC: aud is both.
		svcToken := e.token(t, svc, url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}, "audience": {"api appC"}})
		svcAccess, _ := svcToken.body["access_token"].(string)
		if svcAccess == "" {
			t.Fatalf("client_credentials with audience: got %s", svcToken)
		}

		for _, tc := range []struct {
			name   string
			caller provider.ClientInfo
			token  string
			// want is the fields an active answer must have; nil means exactly {"active":false}.
			want map[string]any
			// username is whether an active answer names the user's email.
			username bool
		}{
			{name: "own access token, scope openid", caller: appA, token: openidOnly.AccessToken,
				want: map[string]any{"sub": alice.ID, "client_id": "appA", "aud": "appA", "iss": e.issuer, "scope": "openid offline_access", "token_type": "Bearer"}},
			{name: "own refresh token, scope openid", caller: appA, token: openidOnly.RefreshToken,
				want: map[string]any{"sub": alice.ID, "client_id": "appA", "aud": "appA", "scope": "openid offline_access"}},
			{name: "own access token, scope email", caller: appA, token: withEmail.AccessToken,
				want: map[string]any{"sub": alice.ID, "client_id": "appA"}, username: true},
			{name: "own refresh token, scope email", caller: appA, token: withEmail.RefreshToken,
				want: map[string]any{"sub": alice.ID, "client_id": "appA"}, username: true},
			{name: "another client's access token", caller: appC, token: withEmail.AccessToken},
			{name: "another client's refresh token", caller: appC, token: withEmail.RefreshToken},
			{name: "resource server not in the audience: access token", caller: api, token: withEmail.AccessToken},
			{name: "resource server not in the audience: refresh token", caller: api, token: withEmail.RefreshToken},
			{name: "resource server in the audience", caller: api, token: svcAccess,
				want: map[string]any{"sub": "svc", "client_id": "svc", "scope": "read", "aud": []any{"api", "appC"}, "token_type": "Bearer"}},
			{name: "resource server for another audience", caller: billing, token: svcAccess},
			{name: "client in the audience but no resource server", caller: appC, token: svcAccess},
			{name: "client token, own client", caller: svc, token: svcAccess,
				want: map[string]any{"sub": "svc", "client_id": "svc"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.call(t, http.MethodPost, "/api/oauth/introspect", url.Values{"token": {tc.token}}, basicAuth(tc.caller))
				if r.status != http.StatusOK {
					t.Fatalf("got %s, want 200", r)
				}
				if tc.want == nil {
					if got := strings.TrimSpace(r.raw); got != `{"active":false}` {
						t.Errorf(`got %s, want exactly {"active":false}`, got)
					}
					return
				}
				if r.body["active"] != true {
					t.Fatalf("got %s, want active", r.raw)
				}
				for name, want := range tc.want {
					if got := r.body[name]; !equalJSON(got, want) {
						t.Errorf("%s: got %#v, want %#v", name, got, want)
					}
				}
				for _, name := range []string{"exp", "iat"} {
					if _, ok := r.body[name].(float64); !ok {
						t.Errorf("%s: got %#v, want a time", name, r.body[name])
					}
				}
				if got, ok := r.body["username"]; ok != tc.username || (ok && got != alice.Email) {
					t.Errorf("username: got %#v (present %v), want present %v", got, ok, tc.username)
				}
				if strings.Contains(r.raw, alice.Email) && !tc.username {
					t.Errorf("the email appears without the email scope: %s", r.raw)
				}
			})
		}

		t.Run("a public client cannot introspect, even its own tokens", func(t *testing.T) {
			spa := e.client(t, provider.ClientSpec{ID: "spa", Public: true})
			_, tok := e.relyingParty(t, spa).signIn(t, e, br, alice.Email)
			r := e.call(t, http.MethodPost, "/api/oauth/introspect", url.Values{"token": {tok.AccessToken}, "client_id": {"spa"}}, nil)
			wantOAuthError(t, r, http.StatusUnauthorized, "invalid_client")
		})

		t.Run("a public client cannot be a resource server", func(t *testing.T) {
			_, err := e.p.CreateClient(context.Background(), provider.ClientSpec{ID: "public-api", Public: true, ResourceServer: true, RedirectURIs: []string{rpRedirectURI}})
			if err == nil {
				t.Error("CreateClient: got no error, want a public resource server refused")
			}
		})
	})
}

// equalJSON compares a decoded JSON value with want ([]any for arrays).
func equalJSON(got, want any) bool {
	if w, ok := want.([]any); ok {
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if g[i] != w[i] {
				return false
			}
		}
		return true
	}
	return got == want
}

// clientWithAudience registers spec and then lets it request tokens for audience. No
// command registers an audience yet, so the stored client is rewritten.
func clientWithAudience(t *testing.T, e *env, spec provider.ClientSpec, audience ...string) provider.ClientInfo {
	t.Helper()
	info := e.client(t, spec)
	ctx := context.Background()
	c, err := e.store.ClientByID(ctx, info.ClientID)
	if err != nil {
		t.Fatal(err)
	}
	c.Audience = audience
	if err := e.store.DeleteClient(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	return info
}

// TestClientAuthenticationRules: at the token, revocation and introspection endpoints a
// client authenticates once (RFC 6749 §2.3), a public client sends no secret, and a 401
// carries WWW-Authenticate: Basic (§5.2).
func TestClientAuthenticationRules(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true,
			GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"}, Scopes: []string{"openid", "read"}})
		spa := e.client(t, provider.ClientSpec{ID: "spa", Public: true})
		// Each client has one authentication method: webapp client_secret_basic (the
		// default), webpost client_secret_post.
		webpost := e.client(t, provider.ClientSpec{ID: "webpost", FirstParty: true, AuthMethod: "client_secret_post",
			GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"}, Scopes: []string{"openid", "read"}})
		wrong := webapp
		wrong.ClientSecret = "not the secret"

		endpoints := []struct {
			path string
			form url.Values
		}{
			{"/api/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}},
			{"/api/oauth/revoke", url.Values{"token": {"some-token"}}},
			{"/api/oauth/introspect", url.Values{"token": {"some-token"}}},
		}
		with := func(form url.Values, extra url.Values) url.Values {
			out := url.Values{}
			for k, v := range form {
				out[k] = v
			}
			for k, v := range extra {
				out[k] = v
			}
			return out
		}
		for _, ep := range endpoints {
			for _, tc := range []struct {
				name       string
				extra      url.Values
				auth       func(*http.Request)
				wantStatus int
				wantError  string
				wantBasic  bool
			}{
				{name: "Basic and a form secret is invalid_request",
					extra: url.Values{"client_id": {webapp.ClientID}, "client_secret": {webapp.ClientSecret}}, auth: basicAuth(webapp),
					wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
				{name: "public client with a form secret is invalid_client",
					extra:      url.Values{"client_id": {spa.ClientID}, "client_secret": {"anything"}},
					wantStatus: http.StatusUnauthorized, wantError: "invalid_client", wantBasic: true},
				{name: "public client with a Basic secret is invalid_client",
					auth:       func(r *http.Request) { r.SetBasicAuth(spa.ClientID, "anything") },
					wantStatus: http.StatusUnauthorized, wantError: "invalid_client", wantBasic: true},
				{name: "wrong Basic secret is invalid_client with a Basic challenge",
					auth:       basicAuth(wrong),
					wantStatus: http.StatusUnauthorized, wantError: "invalid_client", wantBasic: true},
			} {
				t.Run(ep.path+": "+tc.name, func(t *testing.T) {
					r := e.call(t, http.MethodPost, ep.path, with(ep.form, tc.extra), tc.auth)
					wantOAuthError(t, r, tc.wantStatus, tc.wantError)
					challenge := r.header.Get("WWW-Authenticate")
					if tc.wantBasic && challenge != `Basic realm="`+e.issuer+`"` {
						t.Errorf("WWW-Authenticate: got %q, want Basic with the issuer as realm", challenge)
					}
					if !tc.wantBasic && challenge != "" {
						t.Errorf("WWW-Authenticate on %d: got %q, want none", r.status, challenge)
					}
				})
			}
			t.Run(ep.path+": one authentication by the registered method is accepted", func(t *testing.T) {
				form := with(ep.form, url.Values{"client_id": {webpost.ClientID}, "client_secret": {webpost.ClientSecret}})
				if r := e.call(t, http.MethodPost, ep.path, form, nil); r.status != http.StatusOK {
					t.Errorf("client_secret_post: got %s, want 200", r)
				}
				if r := e.call(t, http.MethodPost, ep.path, ep.form, basicAuth(webapp)); r.status != http.StatusOK {
					t.Errorf("client_secret_basic: got %s, want 200", r)
				}
			})
		}
	})
}
