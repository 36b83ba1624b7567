package provider_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestLogout is OpenID Connect RP-Initiated Logout 1.0. An id_token_hint of the session's
// user ends the session at once; anything else asks the user to confirm with a
// CSRF-protected POST, so a cross-site link cannot sign them out. The browser goes back to
// the client only for an exactly registered URI of the client the hint or client_id names.
func TestLogout(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true, PostLogoutRedirectURIs: []string{rpLogoutURI}})
		// other registered the same URI, so a redirect for a disagreeing client_id would show.
		e.client(t, provider.ClientSpec{ID: "other", FirstParty: true, PostLogoutRedirectURIs: []string{rpLogoutURI}})
		rp := e.relyingParty(t, webapp)
		const state = "st&te with spaces/+="

		for _, tc := range []struct {
			name  string
			query func(idToken string) url.Values
			// confirm: a confirmation page comes first and the session outlives it.
			confirm bool
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
				name: "no hint and no client_id: confirmation, then the logged-out page",
				query: func(string) url.Values {
					return url.Values{"post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
				},
				confirm: true,
			},
			{
				name: "client_id and its registered URI: confirmation, then a redirect with state",
				query: func(string) url.Values {
					return url.Values{"client_id": {"webapp"}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
				},
				confirm:      true,
				wantRedirect: rpLogoutURI + "?" + url.Values{"state": {state}}.Encode(),
			},
			{
				name: "client_id and an unregistered URI: confirmation, then the logged-out page",
				query: func(string) url.Values {
					return url.Values{"client_id": {"webapp"}, "post_logout_redirect_uri": {evilURI}, "state": {state}}
				},
				confirm: true,
			},
			{
				name: "hint and client_id that disagree: confirmation, then the logged-out page",
				query: func(id string) url.Values {
					return url.Values{"id_token_hint": {id}, "client_id": {"other"}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
				},
				confirm: true,
			},
			{
				name: "unsigned hint: confirmation, then the logged-out page",
				query: func(string) url.Values {
					hint := unsignedJWT(map[string]any{"iss": e.issuer, "sub": alice.ID, "aud": "webapp"})
					return url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
				},
				confirm: true,
			},
			{
				name:    "bare logout: confirmation, then the logged-out page",
				query:   func(string) url.Values { return url.Values{} },
				confirm: true,
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				br := e.browser(t)
				_, tok := rp.signIn(t, e, br, alice.Email)

				p := br.get(t, e.issuer+"/api/oauth/logout?"+tc.query(tok.rawIDToken).Encode())
				if tc.confirm {
					f := wantLogoutConfirmation(t, e, rp, br, p)
					p = br.post(t, f.action, f.fields)
				}
				wantLoggedOut(t, e, rp, br, p, tc.wantRedirect)
			})
		}

		t.Run("confirmation without its CSRF token is refused", func(t *testing.T) {
			br := e.browser(t)
			rp.signIn(t, e, br, alice.Email)
			query := url.Values{"client_id": {"webapp"}, "post_logout_redirect_uri": {rpLogoutURI}}
			f := wantLogoutConfirmation(t, e, rp, br, br.get(t, e.issuer+"/api/oauth/logout?"+query.Encode()))
			f.fields.Del("csrf_token")
			if p := br.post(t, f.action, f.fields); p.status != http.StatusForbidden || p.header.Get("Location") != "" {
				t.Errorf("got %s, want 403 without redirect", p)
			}
			if !sessionAlive(t, e, rp, br) {
				t.Error("the session ended without a valid CSRF token")
			}
		})

		t.Run("a valid hint of another user asks for confirmation", func(t *testing.T) {
			bob := e.user(t, "bob-logout@example.com", "Bob Example")
			_, bobTok := rp.signIn(t, e, e.browser(t), bob.Email)
			br := e.browser(t)
			rp.signIn(t, e, br, alice.Email)
			query := url.Values{"id_token_hint": {bobTok.rawIDToken}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
			f := wantLogoutConfirmation(t, e, rp, br, br.get(t, e.issuer+"/api/oauth/logout?"+query.Encode()))
			wantLoggedOut(t, e, rp, br, br.post(t, f.action, f.fields), rpLogoutURI+"?"+url.Values{"state": {state}}.Encode())
		})

		t.Run("a hint that has expired asks for confirmation", func(t *testing.T) {
			// Only a fresh ID token of the signed-in user skips the confirmation: relying
			// parties keep old ones, and any of them could sign the user out with a link.
			var offset atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			ce := newEnv(t, b, provider.Config{IDTokenLifespan: 5 * time.Minute}, provider.WithClock(clock))
			carol := ce.user(t, "carol-logout@example.com", "Carol Example")
			app := ce.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true, PostLogoutRedirectURIs: []string{rpLogoutURI}})
			crp := ce.relyingParty(t, app)
			br := ce.browser(t)
			_, tok := crp.signIn(t, ce, br, carol.Email)
			offset.Store(int64(10 * time.Minute))
			query := url.Values{"id_token_hint": {tok.rawIDToken}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
			f := wantLogoutConfirmation(t, ce, crp, br, br.get(t, ce.issuer+"/api/oauth/logout?"+query.Encode()))
			wantLoggedOut(t, ce, crp, br, br.post(t, f.action, f.fields), rpLogoutURI+"?"+url.Values{"state": {state}}.Encode())
		})

		t.Run("without a session there is nothing to confirm", func(t *testing.T) {
			query := url.Values{"client_id": {"webapp"}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
			p := e.browser(t).get(t, e.issuer+"/api/oauth/logout?"+query.Encode())
			want := rpLogoutURI + "?" + url.Values{"state": {state}}.Encode()
			if p.status != http.StatusSeeOther || p.header.Get("Location") != want {
				t.Errorf("got %s, want 303 to %s", p, want)
			}
		})
	})
}

// wantLogoutConfirmation asserts that p asks to confirm the logout with a CSRF-protected
// form, and that the session is still alive; it returns the form.
func wantLogoutConfirmation(t *testing.T, e *env, rp *relyingParty, br *browser, p page) htmlForm {
	t.Helper()
	if p.status != http.StatusOK || p.header.Get("Location") != "" {
		t.Fatalf("got %s, want a confirmation page", p)
	}
	wantHostedPageHeaders(t, p)
	f := p.form(t)
	if f.method != http.MethodPost || f.fields.Get("csrf_token") == "" {
		t.Fatalf("confirmation form: got %s %s with %v, want a POST with a csrf_token", f.method, f.action, f.fields)
	}
	if !sessionAlive(t, e, rp, br) {
		t.Fatal("the session ended before the user confirmed")
	}
	return f
}

// wantLoggedOut asserts that p redirects to wantRedirect (or, when "", is the logged-out
// page) and that the session is gone.
func wantLoggedOut(t *testing.T, e *env, rp *relyingParty, br *browser, p page, wantRedirect string) {
	t.Helper()
	if wantRedirect != "" {
		if p.status != http.StatusSeeOther || p.header.Get("Location") != wantRedirect {
			t.Errorf("got %s, want 303 to %s", p, wantRedirect)
		}
	} else if p.status != http.StatusOK || p.header.Get("Location") != "" || !strings.Contains(p.body, "signed out") {
		t.Errorf("got %s, want the logged-out page without redirect", p)
	}
	if sessionAlive(t, e, rp, br) {
		t.Error("the session outlived the logout")
	}
}

// sessionAlive reports whether br's session still answers a prompt=none request.
func sessionAlive(t *testing.T, e *env, rp *relyingParty, br *browser) bool {
	t.Helper()
	ar := rp.start(oauth2.SetAuthURLParam("prompt", "none"))
	return callback(t, br.get(t, ar.String()), rp.config.RedirectURL).Get("code") != ""
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
