package provider_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// wantSignedOutPage asserts that p is the logged-out page (200, no redirect) and that it
// says truthfully whether a session ended: "You have been signed out" only when one did.
func wantSignedOutPage(t *testing.T, p page, ended bool) {
	t.Helper()
	if p.status != http.StatusOK || p.header.Get("Location") != "" {
		t.Fatalf("got %s, want the logged-out page without redirect", p)
	}
	if claims := strings.Contains(p.body, "You have been signed out"); claims != ended {
		t.Errorf("the page claims a sign-out: %v, want %v:\n%s", claims, ended, p.body)
	}
	if !ended && !strings.Contains(p.body, "not signed in") {
		t.Errorf("the page of a logout that ended nothing does not say so:\n%s", p.body)
	}
}

// TestBackendLogout is a relying party's back-end logout, as oauth2-proxy's
// --backend-logout-url makes it: its server GETs the end_session_endpoint with the user's
// ID token as id_token_hint and without the browser's cookie. An unexpired hint whose sid
// names a live session ends that session on the server (its refresh tokens revoked, a
// logout token sent to each client with a back-channel logout URI), as Keycloak does, and
// the browser's next visit must sign in again. A logout that ended nothing (the same hint
// again, an expired hint, no hint) never says it signed anyone out.
func TestBackendLogout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newBCLEnv(t, b)
		proxy := e.client(t, provider.ClientSpec{ID: "proxy", FirstParty: true, BackchannelLogoutURI: e.rcv.uri()})
		rp := e.relyingParty(t, proxy)
		backend := func(t *testing.T, query url.Values) page {
			t.Helper()
			return e.browser(t).get(t, e.issuer+"/api/oauth/logout?"+query.Encode()) // a fresh jar: no cookie
		}

		t.Run("an unexpired hint ends its session", func(t *testing.T) {
			alice := e.user(t, "alice@example.com", "Alice Example")
			br := e.browser(t)
			_, tok := rp.signIn(t, e.env, br, alice.Email)
			wantSignedOutPage(t, backend(t, url.Values{"id_token_hint": {tok.rawIDToken}}), true)
			if sessionAlive(t, e.env, rp, br) {
				t.Error("the browser's session outlived the back-end logout")
			}
			if got := e.deliver(t); got != 1 {
				t.Fatalf("%d logout tokens delivered, want 1", got)
			}
			e.wantLogoutToken(t, e.rcv.received()[0], proxy.ClientID, tok.claims["sid"].(string), alice.ID)
			wantOAuthError(t, e.refresh(t, proxy, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")

			wantSignedOutPage(t, backend(t, url.Values{"id_token_hint": {tok.rawIDToken}}), false)
			if got := e.deliver(t); got != 0 {
				t.Errorf("the second logout sent %d more logout tokens, want 0", got)
			}
		})

		t.Run("without a hint or a session nothing ends", func(t *testing.T) {
			wantSignedOutPage(t, backend(t, url.Values{}), false)
			wantSignedOutPage(t, backend(t, url.Values{"client_id": {proxy.ClientID}}), false)
		})

		// Last: it moves the clock past the ID token's lifetime.
		t.Run("an expired hint ends nothing and says so", func(t *testing.T) {
			bob := e.user(t, "bob@example.com", "Bob Example")
			br := e.browser(t)
			_, tok := rp.signIn(t, e.env, br, bob.Email)
			e.advance(provider.DefaultIDTokenLifespan + time.Minute)
			wantSignedOutPage(t, backend(t, url.Values{"id_token_hint": {tok.rawIDToken}}), false)
			if !sessionAlive(t, e.env, rp, br) {
				t.Error("an expired hint ended the session")
			}
		})
	})
}
