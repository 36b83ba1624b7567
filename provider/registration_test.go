package provider_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v3"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// registrationToken issues an initial access token allowing maxUses registrations for a day.
func registrationToken(t *testing.T, e *env, maxUses int) string {
	t.Helper()
	info, err := e.p.CreateRegistrationToken(context.Background(), provider.RegistrationTokenSpec{ExpiresIn: 24 * time.Hour, MaxUses: maxUses})
	if err != nil {
		t.Fatalf("CreateRegistrationToken: %v", err)
	}
	return info.Token
}

// sendBody sends method path with a JSON body and the Bearer token (none when empty).
func (e *env) sendBody(t *testing.T, method, path, token string, body any) jsonResponse {
	t.Helper()
	var reader *strings.Reader
	switch b := body.(type) {
	case nil:
		reader = strings.NewReader("")
	case string:
		reader = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		reader = strings.NewReader(string(raw))
	}
	req, err := http.NewRequest(method, e.issuer+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(t, req)
}

// registrationPath is the path of a client's registration_client_uri.
func registrationPath(clientID string) string {
	return "/api/oauth/register/" + url.PathEscape(clientID)
}

// wantInvalidToken asserts a 401 invalid_token with a Bearer challenge.
func wantInvalidToken(t *testing.T, r jsonResponse) {
	t.Helper()
	if r.status != http.StatusUnauthorized || r.body["error"] != "invalid_token" ||
		!strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer error="invalid_token"`) {
		t.Errorf("got %s (WWW-Authenticate %q), want 401 invalid_token with a Bearer challenge", r, r.header.Get("WWW-Authenticate"))
	}
}

// webAppMetadata is a confidential web application's registration.
func webAppMetadata() map[string]any {
	return map[string]any{
		"redirect_uris": []string{rpRedirectURI}, "client_name": "Dynamic App",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"scope": "openid profile email offline_access", "logo_uri": "https://rp.example.com/logo.png",
		"policy_uri": "https://rp.example.com/privacy", "tos_uri": "https://rp.example.com/tos",
		"post_logout_redirect_uris":           []string{"https://rp.example.com/bye"},
		"backchannel_logout_uri":              "https://rp.example.com/bcl",
		"backchannel_logout_session_required": true,
		"software_id":                         "ignored: unknown metadata are ignored",
	}
}

// TestDynamicRegistration registers a client with an initial access token (RFC 7591), signs
// a user in to it with a real OpenID Connect client through the consent page, and reads,
// replaces and deletes the registration with its registration access token (RFC 7592).
func TestDynamicRegistration(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		e.user(t, "alice@example.com", "Alice")
		doc := e.call(t, http.MethodGet, "/.well-known/openid-configuration", nil, nil)
		if got := doc.body["registration_endpoint"]; got != e.issuer+"/api/oauth/register" {
			t.Errorf("registration_endpoint: got %v, want %s/api/oauth/register", got, e.issuer)
		}

		r := e.sendBody(t, http.MethodPost, "/api/oauth/register", registrationToken(t, e, 0), webAppMetadata())
		if r.status != http.StatusCreated {
			t.Fatalf("register: got %s, want 201", r)
		}
		id, _ := r.body["client_id"].(string)
		secret, _ := r.body["client_secret"].(string)
		regToken, _ := r.body["registration_access_token"].(string)
		if id == "" || len(secret) < 43 || len(regToken) < 43 {
			t.Fatalf("register: got %s, want a client id, a secret and a registration access token", r)
		}
		if r.body["client_secret_expires_at"] != float64(0) || r.body["client_id_issued_at"] == nil {
			t.Errorf("register: got %s, want client_secret_expires_at 0 and client_id_issued_at", r)
		}
		if got, want := r.body["registration_client_uri"], e.issuer+registrationPath(id); got != want {
			t.Errorf("registration_client_uri: got %v, want %s", got, want)
		}
		for name, want := range map[string]any{
			"client_name": "Dynamic App", "token_endpoint_auth_method": "client_secret_basic",
			"logo_uri": "https://rp.example.com/logo.png", "tos_uri": "https://rp.example.com/tos",
			"policy_uri": "https://rp.example.com/privacy", "scope": "openid profile email offline_access",
			"id_token_signed_response_alg": "RS256", "backchannel_logout_uri": "https://rp.example.com/bcl",
			"backchannel_logout_session_required": true,
		} {
			if r.body[name] != want {
				t.Errorf("%s: got %v, want %v", name, r.body[name], want)
			}
		}
		if _, ok := r.body["software_id"]; ok {
			t.Errorf("register: got %s, want unknown metadata ignored, not stored", r)
		}
		stored, err := e.p.ClientByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if stored.FirstParty || stored.ResourceServer {
			t.Errorf("registered client: got first_party %v resource_server %v, want neither", stored.FirstParty, stored.ResourceServer)
		}

		// The client signs a user in with go-oidc and x/oauth2; the consent page is shown.
		client := provider.ClientInfo{ClientID: id, ClientSecret: secret, RedirectURIs: []string{rpRedirectURI}}
		rp := e.relyingParty(t, client)
		br := e.browser(t)
		ar := rp.start()
		p := br.login(t, br.get(t, ar.String()), "alice@example.com")
		if p.url.Path != "/consent" {
			t.Fatalf("after login: got %s, want the consent page of a dynamically registered client", p)
		}
		p = br.consent(t, p, "allow")
		tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
		if !slices.Contains(tok.idToken.Audience, id) {
			t.Errorf("ID token aud: got %v, want %s", tok.idToken.Audience, id)
		}

		// Read.
		path := registrationPath(id)
		r = e.sendBody(t, http.MethodGet, path, regToken, nil)
		if r.status != http.StatusOK || r.body["client_id"] != id || r.body["client_name"] != "Dynamic App" {
			t.Fatalf("read: got %s, want 200 with the registration", r)
		}
		if _, ok := r.body["client_secret"]; ok {
			t.Errorf("read: got %s, want no client_secret (stored hashed)", r)
		}
		if _, ok := r.body["registration_access_token"]; ok {
			t.Errorf("read: got %s, want no registration_access_token", r)
		}

		// Tokens that are missing, wrong, or of another client reveal nothing.
		other := e.sendBody(t, http.MethodPost, "/api/oauth/register", registrationToken(t, e, 1), webAppMetadata())
		otherToken, _ := other.body["registration_access_token"].(string)
		admin := e.client(t, provider.ClientSpec{ID: "admin-made"})
		for name, call := range map[string]struct{ path, token string }{
			"no token":                         {path, ""},
			"a wrong token":                    {path, "not-the-token"},
			"another client's token":           {path, otherToken},
			"an unknown client":                {registrationPath("no-such-client"), regToken},
			"a client an admin registered":     {registrationPath(admin.ClientID), regToken},
			"its own token on an admin client": {registrationPath(admin.ClientID), ""},
		} {
			t.Run(name, func(t *testing.T) {
				wantInvalidToken(t, e.sendBody(t, http.MethodGet, call.path, call.token, nil))
			})
		}

		// Replace.
		update := webAppMetadata()
		update["client_id"] = id
		update["client_name"] = "Renamed App"
		update["redirect_uris"] = []string{rpRedirectURI, "http://127.0.0.1:8400/cb"}
		delete(update, "logo_uri")
		for name, change := range map[string]map[string]any{
			"another client_id":   {"client_id": "someone-else"},
			"a wrong secret":      {"client_secret": "wrong"},
			"public from private": {"token_endpoint_auth_method": "none"},
		} {
			body := map[string]any{}
			for k, v := range update {
				body[k] = v
			}
			for k, v := range change {
				body[k] = v
			}
			if r := e.sendBody(t, http.MethodPut, path, regToken, body); r.status != http.StatusBadRequest || r.body["error"] != "invalid_client_metadata" {
				t.Errorf("update with %s: got %s, want 400 invalid_client_metadata", name, r)
			}
		}
		update["client_secret"] = secret
		r = e.sendBody(t, http.MethodPut, path, regToken, update)
		if r.status != http.StatusOK || r.body["client_name"] != "Renamed App" || r.body["logo_uri"] != nil {
			t.Fatalf("update: got %s, want 200 with the new metadata and no logo", r)
		}
		r = e.sendBody(t, http.MethodGet, path, regToken, nil)
		if got := anyStrings(r.body["redirect_uris"]); !slices.Equal(got, []string{rpRedirectURI, "http://127.0.0.1:8400/cb"}) {
			t.Errorf("redirect_uris after update: got %v", got)
		}
		// The secret still authenticates: the update changed no method.
		if r := e.refresh(t, client, tok.RefreshToken); r.status != http.StatusOK {
			t.Errorf("refresh after update: got %s, want 200", r)
		}

		// Delete: the registration and the client's tokens are gone.
		r = e.sendBody(t, http.MethodDelete, path, regToken, nil)
		if r.status != http.StatusNoContent {
			t.Fatalf("delete: got %s, want 204", r)
		}
		wantInvalidToken(t, e.sendBody(t, http.MethodGet, path, regToken, nil))
		if r := e.userinfo(t, tok.AccessToken); r.status != http.StatusUnauthorized {
			t.Errorf("userinfo with a deleted client's token: got %s, want 401", r)
		}
		if _, err := e.p.ClientByID(context.Background(), id); err == nil {
			t.Errorf("ClientByID after delete: got the client, want ErrNotFound")
		}
	})
}

// anyStrings converts a decoded JSON array of strings.
func anyStrings(v any) []string {
	list, _ := v.([]any)
	out := []string{}
	for _, s := range list {
		if str, ok := s.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

// TestDynamicRegistrationRefusesBadMetadata: each invalid registration is refused with 400
// and the RFC 7591 §3.2.2 error naming its fault, and registers nothing.
func TestDynamicRegistrationRefusesBadMetadata(t *testing.T) {
	t.Parallel()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	privateJWKS, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: priv, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	publicJWKS := jwksOf(t, newECKey(t, "k1"))
	const redirect, metadata = "invalid_redirect_uri", "invalid_client_metadata"
	cases := []struct {
		name   string
		change map[string]any
		want   string
	}{
		{"no redirect URI for the code grant", map[string]any{"redirect_uris": nil}, redirect},
		{"http redirect URI on a public host", map[string]any{"redirect_uris": []string{"http://rp.example.com/cb"}}, redirect},
		{"redirect URI with a fragment", map[string]any{"redirect_uris": []string{"https://rp.example.com/cb#x"}}, redirect},
		{"relative redirect URI", map[string]any{"redirect_uris": []string{"/cb"}}, redirect},
		{"custom-scheme redirect URI", map[string]any{"redirect_uris": []string{"com.example.app:/cb"}}, redirect},
		{"redirect URI with user info", map[string]any{"redirect_uris": []string{"https://user:pw@rp.example.com/cb"}}, redirect},
		{"redirect_uris not an array", map[string]any{"redirect_uris": "https://rp.example.com/cb"}, metadata},
		{"unknown grant type", map[string]any{"grant_types": []string{"password"}}, metadata},
		{"implicit response type", map[string]any{"response_types": []string{"token"}}, metadata},
		{"code response type without the code grant", map[string]any{"grant_types": []string{"client_credentials"}, "response_types": []string{"code"}}, metadata},
		{"code grant without the code response type", map[string]any{"response_types": []string{}}, metadata},
		{"refresh_token alone", map[string]any{"grant_types": []string{"refresh_token"}, "response_types": []string{}}, metadata},
		{"client_credentials for a public client", map[string]any{"token_endpoint_auth_method": "none",
			"grant_types": []string{"authorization_code", "client_credentials"}}, metadata},
		{"unknown auth method", map[string]any{"token_endpoint_auth_method": "tls_client_auth"}, metadata},
		{"private_key_jwt without keys", map[string]any{"token_endpoint_auth_method": "private_key_jwt"}, metadata},
		{"private_key_jwt with jwks and jwks_uri", map[string]any{"token_endpoint_auth_method": "private_key_jwt",
			"jwks": json.RawMessage(publicJWKS), "jwks_uri": "https://rp.example.com/jwks"}, metadata},
		{"private key in jwks", map[string]any{"token_endpoint_auth_method": "private_key_jwt", "jwks": json.RawMessage(privateJWKS)}, metadata},
		{"jwks not an object", map[string]any{"jwks": "keys"}, metadata},
		{"http jwks_uri", map[string]any{"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": "http://rp.example.com/jwks"}, metadata},
		{"unknown ID token algorithm", map[string]any{"id_token_signed_response_alg": "HS256"}, metadata},
		{"ID token algorithm none", map[string]any{"id_token_signed_response_alg": "none"}, metadata},
		{"request object algorithm without keys", map[string]any{"request_object_signing_alg": "RS256"}, metadata},
		{"unknown request object algorithm", map[string]any{"request_object_signing_alg": "none", "jwks": json.RawMessage(publicJWKS)}, metadata},
		{"http post-logout URI", map[string]any{"post_logout_redirect_uris": []string{"http://rp.example.com/bye"}}, metadata},
		{"post-logout URI with a fragment", map[string]any{"post_logout_redirect_uris": []string{"https://rp.example.com/bye#x"}}, metadata},
		{"http logo_uri", map[string]any{"logo_uri": "http://rp.example.com/logo.png"}, metadata},
		{"javascript policy_uri", map[string]any{"policy_uri": "javascript:alert(1)"}, metadata},
		{"relative tos_uri", map[string]any{"tos_uri": "/tos"}, metadata},
		{"client_name with control characters", map[string]any{"client_name": "App\u0000"}, metadata},
		{"overlong client_name", map[string]any{"client_name": strings.Repeat("a", 201)}, metadata},
		{"unknown scope", map[string]any{"scope": "openid admin"}, metadata},
		{"manage_permissions scope", map[string]any{"scope": "openid manage_permissions"}, metadata},
		{"http back-channel logout URI", map[string]any{"backchannel_logout_uri": "http://rp.example.com/bcl"}, metadata},
		{"back-channel logout URI with a fragment", map[string]any{"backchannel_logout_uri": "https://rp.example.com/bcl#x"}, metadata},
		{"back-channel logout session not a boolean", map[string]any{"backchannel_logout_session_required": "yes"}, metadata},
	}
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		token := registrationToken(t, e, 0)
		before, err := e.p.ListClients(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				body := webAppMetadata()
				for k, v := range c.change {
					if v == nil {
						delete(body, k)
					} else {
						body[k] = v
					}
				}
				r := e.sendBody(t, http.MethodPost, "/api/oauth/register", token, body)
				if r.status != http.StatusBadRequest || r.body["error"] != c.want || r.body["error_description"] == "" {
					t.Errorf("got %s, want 400 %s with a description", r, c.want)
				}
			})
		}
		t.Run("a body over the size limit", func(t *testing.T) {
			body := webAppMetadata()
			body["client_name"] = strings.Repeat("a", 70<<10)
			if r := e.sendBody(t, http.MethodPost, "/api/oauth/register", token, body); r.status != http.StatusRequestEntityTooLarge {
				t.Errorf("got %s, want 413", r)
			}
		})
		t.Run("a body that is not JSON", func(t *testing.T) {
			if r := e.sendBody(t, http.MethodPost, "/api/oauth/register", token, "{"); r.status != http.StatusBadRequest || r.body["error"] != metadata {
				t.Errorf("got %s, want 400 %s", r, metadata)
			}
		})
		after, err := e.p.ListClients(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("clients after refused registrations: got %d, want %d", len(after), len(before))
		}
	})
}

// TestRegistrationInitialAccessTokens: registration needs a live initial access token
// unless open registration is on; a token's uses are counted exactly under concurrency;
// admins issue tokens through the CLI's method and the admin API.
func TestRegistrationInitialAccessTokens(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		register := func(token string) jsonResponse {
			return e.sendBody(t, http.MethodPost, "/api/oauth/register", token, webAppMetadata())
		}
		t.Run("no token", func(t *testing.T) { wantInvalidToken(t, register("")) })
		t.Run("an unknown token", func(t *testing.T) { wantInvalidToken(t, register("made-up")) })
		t.Run("an expired token", func(t *testing.T) {
			const token = "an-expired-initial-access-token"
			sum := sha256.Sum256([]byte(token))
			err := e.store.CreateRegistrationToken(context.Background(), &storage.RegistrationToken{
				Hash: hex.EncodeToString(sum[:]), ExpiresAt: time.Now().Add(-time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			wantInvalidToken(t, register(token))
		})
		t.Run("a refused registration uses nothing", func(t *testing.T) {
			token := registrationToken(t, e.env, 1)
			bad := webAppMetadata()
			bad["redirect_uris"] = []string{"http://rp.example.com/cb"}
			if r := e.sendBody(t, http.MethodPost, "/api/oauth/register", token, bad); r.status != http.StatusBadRequest {
				t.Fatalf("bad registration: got %s, want 400", r)
			}
			if r := register(token); r.status != http.StatusCreated {
				t.Errorf("registration after a refused one: got %s, want 201", r)
			}
			wantInvalidToken(t, register(token))
		})
		t.Run("max uses hold under concurrency", func(t *testing.T) {
			token := registrationToken(t, e.env, 1)
			const n = 8
			statuses := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { statuses[i] = register(token).status })
			}
			wg.Wait()
			created := 0
			for _, s := range statuses {
				switch s {
				case http.StatusCreated:
					created++
				case http.StatusUnauthorized:
				default:
					t.Errorf("concurrent registration: got status %d, want 201 or 401", s)
				}
			}
			if created != 1 {
				t.Errorf("concurrent registrations with a one-use token: got %d created, want 1 (statuses %v)", created, statuses)
			}
		})
		t.Run("admin API", func(t *testing.T) {
			session := e.adminSession(t, e.admin.Email)
			r := e.sendJSON(t, http.MethodPost, "/api/admin/registration-tokens", `{"expiresIn": 3600, "maxUses": 2}`, session)
			token, _ := r.body["token"].(string)
			if r.status != http.StatusCreated || token == "" || r.body["maxUses"] != float64(2) || r.body["expiresAt"] == nil {
				t.Fatalf("admin API: got %s, want 201 with a token", r)
			}
			for i := range 2 {
				if r := register(token); r.status != http.StatusCreated {
					t.Errorf("registration %d with the admin's token: got %s, want 201", i+1, r)
				}
			}
			wantInvalidToken(t, register(token))
			for name, call := range map[string]struct {
				body   string
				auth   func(*http.Request)
				status int
			}{
				"without a session":  {`{"expiresIn": 3600}`, nil, http.StatusUnauthorized},
				"as a non-admin":     {`{"expiresIn": 3600}`, e.publicSession(t, e.alice.Email), http.StatusForbidden},
				"without an expiry":  {`{"maxUses": 1}`, session, http.StatusBadRequest},
				"with a long expiry": {`{"expiresIn": 99999999999}`, session, http.StatusBadRequest},
				"with negative uses": {`{"expiresIn": 60, "maxUses": -1}`, session, http.StatusBadRequest},
			} {
				if r := e.sendJSON(t, http.MethodPost, "/api/admin/registration-tokens", call.body, call.auth); r.status != call.status {
					t.Errorf("admin API %s: got %s, want %d", name, r, call.status)
				}
			}
			req, _ := http.NewRequest(http.MethodPost, e.issuer+"/api/admin/registration-tokens", strings.NewReader(`{"expiresIn": 60}`))
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("Origin", "https://evil.example.net")
			session(req)
			if r := e.send(t, req); r.status != http.StatusForbidden {
				t.Errorf("cross-origin admin API call: got %s, want 403", r)
			}
		})
	})
}

// TestOpenRegistration: with Config.OpenRegistration a client registers without a token,
// still never first-party.
func TestOpenRegistration(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{OpenRegistration: true})
		r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", map[string]any{
			"redirect_uris": []string{"http://localhost:8400/cb"}, "token_endpoint_auth_method": "none"})
		if r.status != http.StatusCreated {
			t.Fatalf("open registration: got %s, want 201", r)
		}
		if _, ok := r.body["client_secret"]; ok {
			t.Errorf("public client: got %s, want no client_secret", r)
		}
		c, err := e.p.ClientByID(context.Background(), r.body["client_id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if !c.Public || c.FirstParty || !slices.Equal(c.GrantTypes, []string{"authorization_code"}) {
			t.Errorf("open registration: got %+v, want a public, third-party authorization_code client", c)
		}
		// An admin cannot make it first-party either.
		on := true
		if _, err := e.p.UpdateClient(context.Background(), c.ClientID, provider.ClientUpdate{FirstParty: &on}); err == nil {
			t.Errorf("UpdateClient(FirstParty) of a registered client: got no error, want a refusal")
		}
	})
}

// TestDynamicRegistrationPrivateKeyJWT: a client registered with private_key_jwt and its
// JWKS gets no secret and authenticates with an assertion signed by its key.
func TestDynamicRegistrationPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{Scopes: []provider.Scope{{Name: "read", Registrable: true}}, AllowRegisteredClientCredentials: true})
		key := newECKey(t, "k1")
		r := e.sendBody(t, http.MethodPost, "/api/oauth/register", registrationToken(t, e, 1), map[string]any{
			"token_endpoint_auth_method": "private_key_jwt", "jwks": json.RawMessage(jwksOf(t, key)),
			"grant_types": []string{"client_credentials"}, "scope": "read", "id_token_signed_response_alg": "ES256",
		})
		if r.status != http.StatusCreated {
			t.Fatalf("register: got %s, want 201", r)
		}
		if _, ok := r.body["client_secret"]; ok {
			t.Errorf("register: got %s, want no secret for private_key_jwt", r)
		}
		if got := anyStrings(r.body["response_types"]); len(got) != 0 {
			t.Errorf("response_types without the code grant: got %v, want none", got)
		}
		id := r.body["client_id"].(string)
		assertion := signWith(t, key.alg, key.priv, key.kid, assertionClaims(id, e.issuer+"/api/oauth/token", time.Now()))
		r = e.call(t, http.MethodPost, "/api/oauth/token",
			assertionForm(url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}, assertion), nil)
		if r.status != http.StatusOK || r.body["access_token"] == nil {
			t.Fatalf("token with a private_key_jwt assertion: got %s, want 200", r)
		}
		// A secret-based attempt is refused: the client has none.
		r = e.call(t, http.MethodPost, "/api/oauth/token", url.Values{"grant_type": {"client_credentials"}},
			basicAuth(provider.ClientInfo{ClientID: id, ClientSecret: "guess"}))
		wantOAuthError(t, r, http.StatusUnauthorized, "invalid_client")
	})
}

// TestRegistrationRateLimited: registration attempts count against the per-IP limit; over
// it the answer is 429 slow_down with Retry-After, before the token is even looked at.
func TestRegistrationRateLimited(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{PublicAuth: provider.PublicAuthConfig{
			LoginRateLimit: provider.RateLimit{Limit: 2, Window: time.Hour}}})
		token := registrationToken(t, e, 0)
		for i := range 2 {
			if r := e.sendBody(t, http.MethodPost, "/api/oauth/register", token, webAppMetadata()); r.status != http.StatusCreated {
				t.Fatalf("registration %d: got %s, want 201", i+1, r)
			}
		}
		r := e.sendBody(t, http.MethodPost, "/api/oauth/register", token, webAppMetadata())
		if r.status != http.StatusTooManyRequests || r.body["error"] != "slow_down" || r.header.Get("Retry-After") == "" {
			t.Errorf("third registration: got %s, want 429 slow_down with Retry-After", r)
		}
	})
}

// TestRegistrationCannotSelfGrant: a client registering itself (openly or with an initial
// access token) cannot give itself a custom scope the operator did not mark registrable,
// nor the client_credentials grant unless the operator allows it, neither at registration
// nor by an RFC 7592 update; so a client token carrying an API's scope cannot be had by
// registering, and an embedder's RequireScopes route stays closed to it.
func TestRegistrationCannotSelfGrant(t *testing.T) {
	t.Parallel()
	scopes := []provider.Scope{{Name: "orders.admin"}, {Name: "orders.read", Registrable: true}}
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{OpenRegistration: true, Scopes: scopes})
		api := httptest.NewServer(e.p.RequireScopes("orders.admin")(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"orders":"all of them"}`)
		})))
		t.Cleanup(api.Close)

		// The attack: register a client_credentials client with the API's scope, take a
		// token and call the API.
		attack := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", map[string]any{
			"grant_types": []string{"client_credentials"}, "scope": "orders.admin"})
		if attack.status == http.StatusCreated {
			c := provider.ClientInfo{ClientID: attack.body["client_id"].(string), ClientSecret: attack.body["client_secret"].(string)}
			tok := e.token(t, c, url.Values{"grant_type": {"client_credentials"}, "scope": {"orders.admin"}})
			at, _ := tok.body["access_token"].(string)
			req, err := http.NewRequest(http.MethodGet, api.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			bearer(at)(req)
			t.Fatalf("self-registered client_credentials client with orders.admin: registered (%s), token %s, API answered %s; want the registration refused",
				attack, tok, e.send(t, req))
		}
		if attack.status != http.StatusBadRequest || attack.body["error"] != "invalid_client_metadata" {
			t.Errorf("client_credentials with orders.admin: got %s, want 400 invalid_client_metadata", attack)
		}

		token := registrationToken(t, e, 0)
		code := func(scope string) map[string]any {
			return map[string]any{"redirect_uris": []string{rpRedirectURI}, "scope": scope}
		}
		for _, c := range []struct {
			name, token string
			body        map[string]any
			mention     string // what the error_description must name
		}{
			{"a custom scope not marked registrable", "", code("openid orders.admin"), `"orders.admin"`},
			{"the same with an initial access token", token, code("openid orders.admin"), `"orders.admin"`},
			{"manage_permissions", token, code("openid manage_permissions"), `"manage_permissions"`},
			{"client_credentials, even with a registrable scope", "", map[string]any{
				"grant_types": []string{"client_credentials"}, "scope": "orders.read"}, "client_credentials"},
			{"client_credentials with an initial access token", token, map[string]any{
				"grant_types": []string{"client_credentials"}, "scope": "orders.read"}, "client_credentials"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.sendBody(t, http.MethodPost, "/api/oauth/register", c.token, c.body)
				desc, _ := r.body["error_description"].(string)
				if r.status != http.StatusBadRequest || r.body["error"] != "invalid_client_metadata" || !strings.Contains(desc, c.mention) {
					t.Errorf("got %s, want 400 invalid_client_metadata naming %s", r, c.mention)
				}
			})
		}

		// The standard OpenID Connect scopes and a registrable custom scope register.
		r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", code("openid profile email address phone offline_access orders.read"))
		if r.status != http.StatusCreated {
			t.Fatalf("registration with standard and registrable scopes: got %s, want 201", r)
		}
		id, regToken := r.body["client_id"].(string), r.body["registration_access_token"].(string)

		// RFC 7592 updates follow the same rules.
		for _, c := range []struct {
			name   string
			change map[string]any
		}{
			{"adding a scope not marked registrable", map[string]any{"scope": "openid orders.admin"}},
			{"adding client_credentials", map[string]any{"grant_types": []string{"authorization_code", "client_credentials"}}},
		} {
			t.Run("update "+c.name, func(t *testing.T) {
				body := code("openid orders.read")
				body["client_id"] = id
				for k, v := range c.change {
					body[k] = v
				}
				r := e.sendBody(t, http.MethodPut, registrationPath(id), regToken, body)
				if r.status != http.StatusBadRequest || r.body["error"] != "invalid_client_metadata" {
					t.Errorf("got %s, want 400 invalid_client_metadata", r)
				}
			})
		}
		c, err := e.p.ClientByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(c.Scopes, "orders.admin") || slices.Contains(c.GrantTypes, "client_credentials") {
			t.Errorf("client after refused updates: got scopes %v and grants %v", c.Scopes, c.GrantTypes)
		}
		// What an operator granted, the client keeps through its own updates.
		granted := []string{"openid", "orders.read", "orders.admin"}
		if _, err := e.p.UpdateClient(context.Background(), id, provider.ClientUpdate{Scopes: &granted}); err != nil {
			t.Fatal(err)
		}
		body := code("openid orders.admin")
		body["client_id"] = id
		if r := e.sendBody(t, http.MethodPut, registrationPath(id), regToken, body); r.status != http.StatusOK || r.body["scope"] != "openid orders.admin" {
			t.Errorf("update keeping a scope the operator granted: got %s, want 200", r)
		}

		// The operator may open client_credentials to registered clients; the scopes rule
		// still holds, and RequireUser keeps such a client's token off users' routes.
		open := newEnv(t, b, provider.Config{OpenRegistration: true, Scopes: scopes, AllowRegisteredClientCredentials: true})
		if r := open.sendBody(t, http.MethodPost, "/api/oauth/register", "", map[string]any{
			"grant_types": []string{"client_credentials"}, "scope": "orders.admin"}); r.status != http.StatusBadRequest {
			t.Errorf("client_credentials with orders.admin, client_credentials allowed: got %s, want 400", r)
		}
		r = open.sendBody(t, http.MethodPost, "/api/oauth/register", "", map[string]any{
			"grant_types": []string{"client_credentials"}, "scope": "orders.read"})
		if r.status != http.StatusCreated {
			t.Fatalf("client_credentials with orders.read, client_credentials allowed: got %s, want 201", r)
		}
		worker := provider.ClientInfo{ClientID: r.body["client_id"].(string), ClientSecret: r.body["client_secret"].(string)}
		tok := open.token(t, worker, url.Values{"grant_type": {"client_credentials"}, "scope": {"orders.read"}})
		at, _ := tok.body["access_token"].(string)
		userAPI := httptest.NewServer(open.p.RequireUser("orders.read")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
		t.Cleanup(userAPI.Close)
		req, err := http.NewRequest(http.MethodGet, userAPI.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		bearer(at)(req)
		wantOAuthError(t, open.send(t, req), http.StatusUnauthorized, "insufficient_user_authentication")
	})
}

// TestClientNamesCannotImpersonate: a registration (or its update) whose client_name or
// display URLs hold control or format characters (a right-to-left override, zero-width
// characters, …) is refused; the consent and device pages mark a self-registered client as
// unverified and show the host its answers go to, an internationalized one as its A-label.
func TestClientNamesCannotImpersonate(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{OpenRegistration: true})
		alice := e.user(t, "alice@example.com", "Alice")
		for _, c := range []struct{ name, field, value string }{
			{"right-to-left override", "client_name", "Gatehouse Admin\u202Egnp.exe"},
			{"zero-width space", "client_name", "Pay\u200BPal"},
			{"zero-width joiner", "client_name", "Pay\u200DPal"},
			{"byte order mark", "client_name", "\uFEFFPayPal"},
			{"left-to-right isolate", "client_name", "PayPal\u2066"},
			{"line separator", "client_name", "PayPal\u2028Official"},
			{"private use", "client_name", "PayPal \uE000"},
			{"override in logo_uri", "logo_uri", "https://rp.example.com/\u202Egnp.logo"},
		} {
			t.Run("register with a "+c.name, func(t *testing.T) {
				body := webAppMetadata()
				body[c.field] = c.value
				r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", body)
				if r.status != http.StatusBadRequest || r.body["error"] != "invalid_client_metadata" {
					t.Errorf("got %s, want 400 invalid_client_metadata", r)
				}
			})
		}
		look := "https://p\u0430ypal.example/callback" // a Cyrillic а
		reg := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", map[string]any{
			"client_name": "PayPal", "redirect_uris": []string{look}, "grant_types": []string{"authorization_code"}})
		if reg.status != http.StatusCreated {
			t.Fatalf("register: got %s, want 201", reg)
		}
		id, regToken := reg.body["client_id"].(string), reg.body["registration_access_token"].(string)
		t.Run("update with a format character", func(t *testing.T) {
			body := map[string]any{"client_id": id, "client_name": "Pay\u200BPal", "redirect_uris": []string{look}}
			if r := e.sendBody(t, http.MethodPut, registrationPath(id), regToken, body); r.status != http.StatusBadRequest || r.body["error"] != "invalid_client_metadata" {
				t.Errorf("got %s, want 400 invalid_client_metadata", r)
			}
		})

		const unverified = "This application registered itself"
		consentPage := func(t *testing.T, c provider.ClientInfo) page {
			t.Helper()
			br := e.browser(t)
			p := br.login(t, br.get(t, e.relyingParty(t, c).start().String()), alice.Email)
			if p.url.Path != "/consent" {
				t.Fatalf("after login: got %s, want the consent page", p)
			}
			return p
		}
		t.Run("consent page of a self-registered client", func(t *testing.T) {
			p := consentPage(t, provider.ClientInfo{ClientID: id, ClientSecret: reg.body["client_secret"].(string), RedirectURIs: []string{look}})
			for _, want := range []string{unverified, "Your answer goes to <strong>xn--pypal-4ve.example</strong>"} {
				if !strings.Contains(p.body, want) {
					t.Errorf("consent page lacks %q:\n%s", want, p.body)
				}
			}
		})
		t.Run("consent page of a client the operator created", func(t *testing.T) {
			p := consentPage(t, e.client(t, provider.ClientSpec{ID: "shop", Name: "Shop"}))
			if strings.Contains(p.body, unverified) || !strings.Contains(p.body, "Your answer goes to <strong>rp.example.com</strong>") {
				t.Errorf("consent page: want the host and no unverified mark:\n%s", p.body)
			}
		})
		t.Run("device page of a self-registered client", func(t *testing.T) {
			r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", map[string]any{
				"client_name": "Living Room TV", "token_endpoint_auth_method": "none", "redirect_uris": []string{"https://tv.example.com/cb"},
				"grant_types": []string{provider.GrantTypeDeviceCode}, "response_types": []string{}, "scope": "openid"})
			if r.status != http.StatusCreated {
				t.Fatalf("register: got %s, want 201", r)
			}
			codes := e.deviceCode(t, provider.ClientInfo{ClientID: r.body["client_id"].(string)}, "openid")
			br := e.browser(t)
			p := br.get(t, e.issuer+"/device")
			f := p.form(t)
			f.fields.Set("user_code", codes.body["user_code"].(string))
			if p = br.post(t, f.action, f.fields); p.url.Path == "/login" {
				p = br.login(t, p, alice.Email)
			}
			if p.url.Path != "/device/confirm" {
				t.Fatalf("got %s, want the device confirmation page", p)
			}
			for _, want := range []string{unverified, "It is registered at <strong>tv.example.com</strong>"} {
				if !strings.Contains(p.body, want) {
					t.Errorf("device page lacks %q:\n%s", want, p.body)
				}
			}
		})
	})
}
