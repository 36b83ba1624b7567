package provider_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestPrompt follows one browser through prompt, max_age and id_token_hint, as the OpenID
// conformance modules oidcc-prompt-*, oidcc-max-age-* and oidcc-id-token-hint do.
func TestPrompt(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		bob := e.user(t, "bob@example.com", "Bob Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
		rp := e.relyingParty(t, webapp)
		br := e.browser(t)
		param := oauth2.SetAuthURLParam

		// silent asserts that ar completes without any page and returns the tokens.
		silent := func(t *testing.T, ar *authRequest) tokens {
			t.Helper()
			return rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI)))
		}
		// relogin asserts that ar shows the login form again and returns the tokens after it.
		relogin := func(t *testing.T, ar *authRequest) tokens {
			t.Helper()
			p := br.get(t, ar.String())
			if p.url.Path != "/login" {
				t.Fatalf("got %s, want the login form", p)
			}
			return rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.login(t, p, alice.Email), rpRedirectURI)))
		}

		t.Run("prompt=none without a session redirects login_required", func(t *testing.T) {
			ar := rp.start(param("prompt", "none"))
			ar.set("state", randomString(128))
			wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "login_required")
		})

		_, first := rp.signIn(t, e, br, alice.Email)
		firstAuth := unixClaim(t, first.claims, "auth_time")

		t.Run("prompt=none with a session is silent", func(t *testing.T) {
			tok := silent(t, rp.start(param("prompt", "none")))
			if tok.claims["sub"] != alice.ID || unixClaim(t, tok.claims, "auth_time") != firstAuth {
				t.Errorf("got sub %v auth_time %v, want %s and %d", tok.claims["sub"], tok.claims["auth_time"], alice.ID, firstAuth)
			}
		})

		t.Run("id_token_hint with prompt=none is silent", func(t *testing.T) {
			tok := silent(t, rp.start(param("prompt", "none"), param("id_token_hint", first.rawIDToken)))
			if tok.claims["sub"] != alice.ID || unixClaim(t, tok.claims, "auth_time") != firstAuth {
				t.Errorf("got sub %v auth_time %v, want %s and %d", tok.claims["sub"], tok.claims["auth_time"], alice.ID, firstAuth)
			}
		})

		t.Run("id_token_hint of another user with prompt=none is login_required", func(t *testing.T) {
			_, bobs := rp.signIn(t, e, e.browser(t), bob.Email)
			ar := rp.start(param("prompt", "none"), param("id_token_hint", bobs.rawIDToken))
			wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "login_required")
		})

		t.Run("id_token_hint we did not sign is invalid_request", func(t *testing.T) {
			ar := rp.start(param("prompt", "none"), param("id_token_hint", unsignedJWT(map[string]any{"iss": e.issuer, "sub": alice.ID, "aud": "webapp"})))
			wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "invalid_request")
		})

		secondAfter()
		var second int64
		t.Run("prompt=login shows the login form and yields a later auth_time", func(t *testing.T) {
			before := sessionCookie(t, e, br)
			tok := relogin(t, rp.start(param("prompt", "login")))
			second = unixClaim(t, tok.claims, "auth_time")
			if second <= firstAuth {
				t.Errorf("auth_time: got %d, want later than %d", second, firstAuth)
			}
			wantRecent(t, tok.claims, "auth_time")

			// The login replaced the session: the old cookie is dead on the server too.
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/public/session", nil)
			req.AddCookie(before)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("the session cookie from before the new login: got %d, want 401", resp.StatusCode)
			}
			if after := sessionCookie(t, e, br); after.Value == before.Value {
				t.Error("the new login kept the old session cookie")
			}
		})

		t.Run("max_age=10000 is silent and keeps auth_time", func(t *testing.T) {
			tok := silent(t, rp.start(param("max_age", "10000")))
			if got := unixClaim(t, tok.claims, "auth_time"); got != second {
				t.Errorf("auth_time: got %d, want %d", got, second)
			}
		})

		secondAfter()
		t.Run("max_age=1 after more than a second forces a new login", func(t *testing.T) {
			tok := relogin(t, rp.start(param("max_age", "1")))
			if got := unixClaim(t, tok.claims, "auth_time"); got <= second {
				t.Errorf("auth_time: got %d, want later than %d", got, second)
			}
			wantRecent(t, tok.claims, "auth_time")
		})
	})
}

// TestLogout is OpenID Connect RP-Initiated Logout 1.0: the session always ends; the browser
// goes back to the client only for a valid hint and an exactly registered URI.
func TestLogout(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true, PostLogoutRedirectURIs: []string{rpLogoutURI}})
		rp := e.relyingParty(t, webapp)
		const state = "st&te with spaces/+="

		for _, tc := range []struct {
			name  string
			query func(idToken string) url.Values
			// wantRedirect is the exact Location, or "" for the logged-out page.
			wantRedirect string
		}{
			{
				name: "valid hint and registered URI redirect there with state",
				query: func(id string) url.Values {
					return url.Values{"id_token_hint": {id}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
				},
				wantRedirect: rpLogoutURI + "?" + url.Values{"state": {state}}.Encode(),
			},
			{
				name: "valid hint, registered URI and client_id redirect without state",
				query: func(id string) url.Values {
					return url.Values{"id_token_hint": {id}, "post_logout_redirect_uri": {rpLogoutURI}, "client_id": {"webapp"}}
				},
				wantRedirect: rpLogoutURI,
			},
			{
				name: "unregistered URI shows the logged-out page",
				query: func(id string) url.Values {
					return url.Values{"id_token_hint": {id}, "post_logout_redirect_uri": {evilURI}, "state": {state}}
				},
			},
			{
				name: "registered URI with an added query shows the logged-out page",
				query: func(id string) url.Values {
					return url.Values{"id_token_hint": {id}, "post_logout_redirect_uri": {rpLogoutURI + "?foo=bar"}, "state": {state}}
				},
			},
			{
				name: "no hint shows the logged-out page",
				query: func(string) url.Values {
					return url.Values{"post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
				},
			},
			{
				name: "unsigned hint shows the logged-out page",
				query: func(string) url.Values {
					hint := unsignedJWT(map[string]any{"iss": e.issuer, "sub": alice.ID, "aud": "webapp"})
					return url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
				},
			},
			{
				name:  "bare logout shows the logged-out page",
				query: func(string) url.Values { return url.Values{} },
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				br := e.browser(t)
				_, tok := rp.signIn(t, e, br, alice.Email)

				p := br.get(t, e.issuer+"/api/oauth/logout?"+tc.query(tok.rawIDToken).Encode())
				if tc.wantRedirect != "" {
					if p.status != http.StatusSeeOther || p.header.Get("Location") != tc.wantRedirect {
						t.Errorf("got %s, want 303 to %s", p, tc.wantRedirect)
					}
				} else {
					if p.status != http.StatusOK || p.header.Get("Location") != "" || p.url.Path != "/api/oauth/logout" {
						t.Errorf("got %s, want the logged-out page without redirect", p)
					}
				}

				// The session is gone either way.
				ar := rp.start(oauth2.SetAuthURLParam("prompt", "none"))
				wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "login_required")
			})
		}
	})
}

// unsignedJWT is an alg "none" token with claims: what an attacker can forge.
func unsignedJWT(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// sessionCookie returns the browser's public-session cookie.
func sessionCookie(t *testing.T, e *env, br *browser) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(e.srv.URL)
	for _, c := range br.client.Jar.Cookies(u) {
		if c.Name == "public-session" {
			return c
		}
	}
	t.Fatal("the browser has no public-session cookie")
	return nil
}
