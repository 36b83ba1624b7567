package provider_test

import (
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// selfRegistered registers a web client through open registration, as anyone may, with
// rpRedirectURI and rpLogoutURI, and returns what a relying party needs of it.
func selfRegistered(t *testing.T, e *env) provider.ClientInfo {
	t.Helper()
	r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", map[string]any{
		"client_name": "Self-registered", "redirect_uris": []string{rpRedirectURI},
		"post_logout_redirect_uris": []string{rpLogoutURI}, "scope": "openid profile email offline_access",
	})
	if r.status != http.StatusCreated {
		t.Fatalf("open registration: got %s, want 201", r)
	}
	return provider.ClientInfo{ClientID: r.body["client_id"].(string), ClientSecret: r.body["client_secret"].(string),
		RedirectURIs: []string{rpRedirectURI}, PostLogoutRedirectURIs: []string{rpLogoutURI}}
}

// wantNoRedirectPage asserts that p is a page of the provider (status), not a redirect.
func wantNoRedirectPage(t *testing.T, p page, status int) {
	t.Helper()
	if p.status != status || p.header.Get("Location") != "" {
		t.Errorf("got %s, want a %d page without redirect", p, status)
	}
}

// TestSelfRegisteredClientsRedirectOnlyAfterTheUser: with open registration anyone can
// register any redirect and post-logout URI, so a link to the authorization or logout
// endpoint naming such a client would be an open redirector (RFC 9700 §4.11.2). For a
// self-registered client, an authorization error shows the error page until the user has
// signed in, and a logout without the browser's own session ends on a confirmation page
// whose button leads on; an operator-created client is redirected to at once, as before.
func TestSelfRegisteredClientsRedirectOnlyAfterTheUser(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{OpenRegistration: true})
		alice := e.user(t, "alice@example.com", "Alice Example")
		self := e.relyingParty(t, selfRegistered(t, e))
		// First-party: sessionAlive asks it with prompt=none, which the self-registered client
		// would answer with an error page whenever the browser has no session.
		operator := e.relyingParty(t, e.client(t, provider.ClientSpec{ID: "operator", FirstParty: true, PostLogoutRedirectURIs: []string{rpLogoutURI}}))
		plainPKCE := func(rp *relyingParty) *authRequest {
			ar := rp.start()
			return ar.set("code_challenge", ar.verifier).set("code_challenge_method", "plain")
		}
		promptNone := func(rp *relyingParty) *authRequest { return rp.start(oauth2.SetAuthURLParam("prompt", "none")) }

		t.Run("authorization errors before sign-in", func(t *testing.T) {
			for name, start := range map[string]func(*relyingParty) *authRequest{"invalid_request": plainPKCE, "login_required": promptNone} {
				br := e.browser(t)
				wantNoRedirectPage(t, br.get(t, start(self).String()), http.StatusBadRequest)
				ar := start(operator)
				wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), name)
			}
		})

		t.Run("authorization errors after sign-in are redirected", func(t *testing.T) {
			br := e.browser(t)
			self.signIn(t, e, br, alice.Email)
			ar := plainPKCE(self)
			wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "invalid_request")

			// bob has not consented to the client yet, and refuses.
			bob := e.user(t, "bob@example.com", "Bob Example")
			denied := e.browser(t)
			ar = self.start()
			p := denied.login(t, denied.get(t, ar.String()), bob.Email)
			wantAuthError(t, e, ar, callback(t, denied.consent(t, p, "deny"), rpRedirectURI), "access_denied")
		})

		const state = "st&te"
		back := rpLogoutURI + "?" + url.Values{"state": {state}}.Encode()
		logout := func(rp *relyingParty, hint string) string {
			q := url.Values{"client_id": {rp.client.ClientID}, "post_logout_redirect_uri": {rpLogoutURI}, "state": {state}}
			if hint != "" {
				q.Set("id_token_hint", hint)
			}
			return e.issuer + "/api/oauth/logout?" + q.Encode()
		}

		t.Run("logout without a session confirms before leaving", func(t *testing.T) {
			br := e.browser(t)
			p := br.get(t, logout(self, ""))
			wantNoRedirectPage(t, p, http.StatusOK)
			f := p.form(t)
			if f.method != http.MethodPost || f.fields.Get("csrf_token") == "" {
				t.Fatalf("confirmation form: got %s %s with %v, want a POST with a csrf_token", f.method, f.action, f.fields)
			}
			if p := br.post(t, f.action, f.fields); p.status != http.StatusSeeOther || p.header.Get("Location") != back {
				t.Errorf("confirmed: got %s, want 303 to %s", p, back)
			}
			if p := e.browser(t).get(t, logout(operator, "")); p.status != http.StatusSeeOther || p.header.Get("Location") != back {
				t.Errorf("operator's client: got %s, want 303 to %s at once", p, back)
			}
		})

		t.Run("a hint without the browser's session still confirms", func(t *testing.T) {
			// Anyone can register a client and sign in to it: their own fresh ID token
			// must not turn the logout into a redirect for someone else's browser.
			attacker := e.browser(t)
			_, tok := self.signIn(t, e, attacker, alice.Email)
			p := e.browser(t).get(t, logout(self, tok.rawIDToken))
			wantNoRedirectPage(t, p, http.StatusOK)
			if sessionAlive(t, e, operator, attacker) {
				t.Error("the hint's session outlived the logout")
			}
		})

		t.Run("logout of the browser's own session leaves at once", func(t *testing.T) {
			br := e.browser(t)
			_, tok := self.signIn(t, e, br, alice.Email)
			if p := br.get(t, logout(self, tok.rawIDToken)); p.status != http.StatusSeeOther || p.header.Get("Location") != back {
				t.Errorf("got %s, want 303 to %s", p, back)
			}
			if sessionAlive(t, e, operator, br) {
				t.Error("the session outlived the logout")
			}
		})
	})
}
