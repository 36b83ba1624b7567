package provider_test

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestCodeFlow(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", Name: "Web App", FirstParty: true})
		rp := e.relyingParty(t, webapp)
		// signedIn keeps the session of the first subtest; first-party clients then get
		// their codes without any page.
		signedIn := e.browser(t)

		t.Run("hosted login then code with PKCE yields verified tokens", func(t *testing.T) {
			br := signedIn
			ar := rp.start()
			p := br.get(t, ar.String())
			if p.url.Path != "/login" || p.url.Query().Get("request") == "" {
				t.Fatalf("got %s, want the login page with a request token", p)
			}
			// A first-party client skips consent: the login ends at the redirect URI.
			code := wantCode(t, e, ar, callback(t, br.login(t, p, alice.Email), rpRedirectURI))
			tok := rp.exchange(t, ar, code)

			if tok.TokenType != "Bearer" {
				t.Errorf("token_type: got %q, want Bearer", tok.TokenType)
			}
			if tok.RefreshToken == "" {
				t.Errorf("got no refresh token for scope offline_access")
			}
			if d := time.Until(tok.Expiry); d < 50*time.Minute || d > 61*time.Minute {
				t.Errorf("expires_in: got %v, want about an hour", d)
			}

			// The ID token.
			header, _ := decodeJWT(t, tok.rawIDToken)
			if got := header["alg"]; got != "RS256" {
				t.Errorf("ID token alg: got %v, want RS256", got)
			}
			if kid, _ := header["kid"].(string); !slices.Contains(kids(e.jwks(t)), kid) {
				t.Errorf("ID token kid %q is not in the JWKS", kid)
			}
			c := tok.claims
			for name, want := range map[string]any{
				"iss": e.issuer, "sub": alice.ID, "aud": webapp.ClientID, "azp": webapp.ClientID,
				"nonce": ar.nonce, "email": alice.Email, "email_verified": true, "name": "Alice Example",
			} {
				if got := c[name]; got != want {
					t.Errorf("ID token %s: got %#v, want %#v", name, got, want)
				}
			}
			wantRecent(t, c, "iat")
			wantRecent(t, c, "auth_time")
			if exp, iat := unixClaim(t, c, "exp"), unixClaim(t, c, "iat"); exp <= iat {
				t.Errorf("exp %d is not after iat %d", exp, iat)
			}
			if c["at_hash"] == nil {
				t.Errorf("ID token has no at_hash")
			}

			// The access token: an RFC 9068 JWT signed by a published key.
			ah, _ := decodeJWT(t, tok.AccessToken)
			if got := ah["typ"]; got != "at+jwt" {
				t.Errorf("access token typ: got %v, want at+jwt", got)
			}
			if ah["kid"] == nil {
				t.Errorf("access token has no kid")
			}
			ac := e.verifyJWT(t, tok.AccessToken)
			for name, want := range map[string]any{
				"iss": e.issuer, "sub": alice.ID, "aud": webapp.ClientID, "client_id": webapp.ClientID,
			} {
				if got := ac[name]; got != want {
					t.Errorf("access token %s: got %#v, want %#v", name, got, want)
				}
			}
			if got := strings.Fields(ac["scope"].(string)); !sameSet(got, []string{"openid", "profile", "email", "offline_access"}) {
				t.Errorf("access token scope: got %v, want openid profile email offline_access", got)
			}
			wantRecent(t, ac, "iat")
			if got := unixClaim(t, ac, "exp") - unixClaim(t, ac, "iat"); got < 3590 || got > 3601 {
				t.Errorf("access token exp - iat: got %ds, want the one-hour lifespan", got)
			}
			if jti, _ := ac["jti"].(string); jti == "" {
				t.Errorf("access token has no jti")
			}

			// UserInfo, three ways.
			want := map[string]any{"sub": alice.ID, "email": alice.Email, "email_verified": true, "name": "Alice Example"}
			info, err := rp.op.UserInfo(e.ctx, oauth2.StaticTokenSource(tok.Token))
			if err != nil {
				t.Fatalf("userinfo through go-oidc: %v", err)
			}
			var viaOIDC map[string]any
			if err := info.Claims(&viaOIDC); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				got  map[string]any
			}{
				{"GET with Bearer (go-oidc)", viaOIDC},
				{"POST with Bearer", e.call(t, http.MethodPost, "/api/oauth/userinfo", url.Values{}, bearer(tok.AccessToken)).body},
				{"POST with access_token in the body", e.call(t, http.MethodPost, "/api/oauth/userinfo", url.Values{"access_token": {tok.AccessToken}}, nil).body},
			} {
				for name, w := range want {
					if got := tc.got[name]; got != w {
						t.Errorf("userinfo %s: %s: got %#v, want %#v", tc.name, name, got, w)
					}
				}
			}
			// A refresh token is no bearer token, though fosite's introspection accepts it.
			if r := e.userinfo(t, tok.RefreshToken); r.status != http.StatusUnauthorized {
				t.Errorf("userinfo with the refresh token: got %s, want 401", r)
			}
		})

		t.Run("token response is Bearer JSON that no cache keeps", func(t *testing.T) {
			ar := rp.start()
			code := wantCode(t, e, ar, callback(t, signedIn.get(t, ar.String()), rpRedirectURI))
			r := e.token(t, webapp, url.Values{
				"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirectURI},
				"code_verifier": {ar.verifier},
			})
			if r.status != http.StatusOK {
				t.Fatalf("token: got %s, want 200", r)
			}
			if got := r.header.Get("Cache-Control"); !strings.Contains(got, "no-store") {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			if got := r.body["token_type"]; got != "Bearer" {
				t.Errorf("token_type: got %v, want Bearer", got)
			}
			for _, field := range []string{"access_token", "id_token", "refresh_token"} {
				if s, _ := r.body[field].(string); s == "" {
					t.Errorf("%s: got %#v, want a token", field, r.body[field])
				}
			}
			if n, ok := r.body["expires_in"].(float64); !ok || n <= 0 || n != float64(int64(n)) {
				t.Errorf("expires_in: got %#v, want a positive integer", r.body["expires_in"])
			}
		})

		t.Run("claims follow the granted scopes", func(t *testing.T) {
			narrow := e.relyingParty(t, webapp, "openid")
			_, tok := narrow.signIn(t, e, signedIn, alice.Email)
			for _, name := range []string{"email", "email_verified", "name"} {
				if _, ok := tok.claims[name]; ok {
					t.Errorf("ID token for scope openid carries %s", name)
				}
			}
			if tok.RefreshToken != "" {
				t.Errorf("got a refresh token without offline_access")
			}
			r := e.userinfo(t, tok.AccessToken)
			if r.status != http.StatusOK || r.body["sub"] != alice.ID {
				t.Fatalf("userinfo: got %s, want 200 with sub %s", r, alice.ID)
			}
			if _, ok := r.body["email"]; ok {
				t.Errorf("userinfo for scope openid carries email: %s", r.raw)
			}
		})

		t.Run("ES256 client gets ES256 ID tokens", func(t *testing.T) {
			es := e.client(t, provider.ClientSpec{ID: "es256-app", FirstParty: true, IDTokenAlg: provider.AlgES256})
			esRP := e.relyingParty(t, es)
			_, tok := esRP.signIn(t, e, signedIn, alice.Email) // verified by go-oidc through the JWKS
			header, _ := decodeJWT(t, tok.rawIDToken)
			if got := header["alg"]; got != "ES256" {
				t.Errorf("ID token alg: got %v, want ES256", got)
			}
			if kid, _ := header["kid"].(string); !slices.Contains(kids(e.jwks(t)), kid) {
				t.Errorf("ID token kid %q is not in the JWKS", kid)
			}
		})

		t.Run("client_secret_post authenticates a client registered for it", func(t *testing.T) {
			webpost := e.client(t, provider.ClientSpec{ID: "webpost", Name: "Web App (post)", FirstParty: true, AuthMethod: "client_secret_post"})
			postRP := e.relyingParty(t, webpost)
			postRP.config.Endpoint.AuthStyle = oauth2.AuthStyleInParams
			_, tok := postRP.signIn(t, e, signedIn, alice.Email)
			if tok.claims["sub"] != alice.ID {
				t.Errorf("sub: got %v, want %s", tok.claims["sub"], alice.ID)
			}
		})

		t.Run("public client uses PKCE without a secret", func(t *testing.T) {
			spa := e.client(t, provider.ClientSpec{ID: "spa", Public: true, FirstParty: true})
			if spa.ClientSecret != "" {
				t.Fatalf("public client got a secret")
			}
			_, tok := e.relyingParty(t, spa).signIn(t, e, signedIn, alice.Email)
			if tok.claims["aud"] != "spa" {
				t.Errorf("aud: got %v, want spa", tok.claims["aud"])
			}
		})

		t.Run("POSTed request without nonce and with unknown parameters succeeds", func(t *testing.T) {
			br := e.browser(t)
			ar := rp.start(oauth2.SetAuthURLParam("display", "page"), oauth2.SetAuthURLParam("ui_locales", "en"),
				oauth2.SetAuthURLParam("login_hint", alice.Email), oauth2.SetAuthURLParam("unknown_param", "ignored"))
			ar.set("nonce", "")
			ar.set("scope", "email openid")
			p := br.post(t, e.issuer+"/api/oauth/authorize", ar.url.Query())
			if p.url.Path != "/login" {
				t.Fatalf("got %s, want the login page", p)
			}
			if got := p.form(t).fields.Get("email"); got != alice.Email {
				t.Errorf("login form email: got %q, want the login_hint %q", got, alice.Email)
			}
			code := wantCode(t, e, ar, callback(t, br.login(t, p, alice.Email), rpRedirectURI))
			tok := rp.exchange(t, ar, code)
			if _, ok := tok.claims["nonce"]; ok {
				t.Errorf("ID token has a nonce the request did not send")
			}
		})
	})
}

func TestConsent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		bob := e.user(t, "bob@example.com", "Bob Example")
		third := e.client(t, provider.ClientSpec{ID: "third-party", Name: "Third Party App"})
		rp := e.relyingParty(t, third)
		br := e.browser(t)

		t.Run("consent page is shown and allow yields a code", func(t *testing.T) {
			ar := rp.start()
			p := br.login(t, br.get(t, ar.String()), alice.Email)
			if p.status != http.StatusOK || p.url.Path != "/consent" {
				t.Fatalf("got %s, want the consent page", p)
			}
			if !strings.Contains(p.body, "Third Party App") {
				t.Errorf("consent page does not name the client:\n%s", p.body)
			}
			code := wantCode(t, e, ar, callback(t, br.consent(t, p, "allow"), rpRedirectURI))
			if tok := rp.exchange(t, ar, code); tok.claims["sub"] != alice.ID {
				t.Errorf("sub: got %v, want %s", tok.claims["sub"], alice.ID)
			}
		})

		t.Run("consent is remembered", func(t *testing.T) {
			ar := rp.start()
			wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
		})

		t.Run("prompt=consent asks again", func(t *testing.T) {
			ar := rp.start(oauth2.SetAuthURLParam("prompt", "consent"))
			p := br.get(t, ar.String())
			wantCode(t, e, ar, callback(t, br.consent(t, p, "allow"), rpRedirectURI))
		})

		t.Run("deny redirects access_denied", func(t *testing.T) {
			other := e.browser(t)
			ar := rp.start()
			p := other.login(t, other.get(t, ar.String()), bob.Email)
			wantAuthError(t, e, ar, callback(t, other.consent(t, p, "deny"), rpRedirectURI), "access_denied")

			// Nothing was remembered: bob is asked again.
			ar = rp.start()
			if p := other.get(t, ar.String()); p.url.Path != "/consent" {
				t.Errorf("after deny: got %s, want the consent page again", p)
			}
		})
	})
}

func TestFormPost(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
		rp := e.relyingParty(t, webapp)
		br := e.browser(t)

		// formPost asserts that p is an auto-submitting form POST to the redirect URI and
		// returns its fields.
		formPost := func(t *testing.T, p page) url.Values {
			t.Helper()
			if p.status != http.StatusOK || p.header.Get("Location") != "" {
				t.Fatalf("got %s, want a 200 page without Location", p)
			}
			if got := p.header.Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
				t.Errorf("Content-Type: got %q, want text/html", got)
			}
			f := p.form(t)
			if f.action != rpRedirectURI || f.method != http.MethodPost {
				t.Errorf("form: got %s %s, want POST %s", f.method, f.action, rpRedirectURI)
			}
			wantSafeFormPost(t, p)
			return f.fields
		}

		t.Run("prompt=none without a session posts login_required", func(t *testing.T) {
			ar := rp.start(oauth2.SetAuthURLParam("response_mode", "form_post"), oauth2.SetAuthURLParam("prompt", "none"))
			wantAuthError(t, e, ar, formPost(t, br.get(t, ar.String())), "login_required")
		})

		t.Run("code, state and iss are posted", func(t *testing.T) {
			ar := rp.start(oauth2.SetAuthURLParam("response_mode", "form_post"))
			fields := formPost(t, br.login(t, br.get(t, ar.String()), alice.Email))
			tok := rp.exchange(t, ar, wantCode(t, e, ar, fields))
			if tok.claims["sub"] != alice.ID {
				t.Errorf("sub: got %v, want %s", tok.claims["sub"], alice.ID)
			}
		})
	})
}

func TestClientCredentials(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		manager := e.client(t, provider.ClientSpec{ID: "manager", GrantTypes: []string{"client_credentials"},
			Scopes: []string{"manage_permissions"}})
		plain := e.client(t, provider.ClientSpec{ID: "plain", GrantTypes: []string{"client_credentials"},
			Scopes: []string{"profile"}})
		tokenURL := e.issuer + "/api/oauth/token"
		fetch := func(c provider.ClientInfo, scopes ...string) (*oauth2.Token, error) {
			cc := clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: tokenURL,
				Scopes: scopes, AuthStyle: oauth2.AuthStyleInHeader}
			return cc.Token(e.ctx)
		}

		t.Run("client token has the client as subject and manage_permissions when allowed", func(t *testing.T) {
			tok, err := fetch(manager, "manage_permissions")
			if err != nil {
				t.Fatalf("client_credentials: %v", err)
			}
			if tok.TokenType != "Bearer" {
				t.Errorf("token_type: got %q, want Bearer", tok.TokenType)
			}
			if tok.RefreshToken != "" {
				t.Errorf("client_credentials issued a refresh token")
			}
			c := e.verifyJWT(t, tok.AccessToken)
			for name, want := range map[string]any{"iss": e.issuer, "sub": "manager", "client_id": "manager", "scope": "manage_permissions"} {
				if got := c[name]; got != want {
					t.Errorf("%s: got %#v, want %#v", name, got, want)
				}
			}
			in := e.introspect(t, manager, tok.AccessToken)
			if in["active"] != true || in["sub"] != "manager" {
				t.Errorf("introspection: got %v, want active with sub manager", in)
			}
			// A client token speaks for no user.
			if r := e.userinfo(t, tok.AccessToken); r.status != http.StatusUnauthorized {
				t.Errorf("userinfo with a client token: got %s, want 401", r)
			}
		})

		t.Run("scope the client may not use is refused", func(t *testing.T) {
			_, err := fetch(plain, "manage_permissions")
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a token error", err)
			}
			if re.Response.StatusCode != http.StatusBadRequest || re.ErrorCode != "invalid_scope" {
				t.Errorf("got %d %s, want 400 invalid_scope", re.Response.StatusCode, re.ErrorCode)
			}
		})

		t.Run("token without requested scopes carries none", func(t *testing.T) {
			tok, err := fetch(manager)
			if err != nil {
				t.Fatalf("client_credentials: %v", err)
			}
			if got, _ := e.verifyJWT(t, tok.AccessToken)["scope"].(string); got != "" {
				t.Errorf("scope: got %q, want none", got)
			}
		})

		t.Run("wrong secret is invalid_client", func(t *testing.T) {
			wrong := manager
			wrong.ClientSecret = "not-the-secret"
			r := e.token(t, wrong, url.Values{"grant_type": {"client_credentials"}})
			wantOAuthError(t, r, http.StatusUnauthorized, "invalid_client")
		})
	})
}

// sameSet reports whether a and b hold the same strings in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
