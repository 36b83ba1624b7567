package provider_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestIDTokenHintRefusesAccessTokens: an access token is signed by the same keys as an ID
// token, but it is no id_token_hint, at logout or at the authorize endpoint.
func TestIDTokenHintRefusesAccessTokens(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true, PostLogoutRedirectURIs: []string{rpLogoutURI}})
		rp := e.relyingParty(t, webapp)

		t.Run("logout does not redirect", func(t *testing.T) {
			br := e.browser(t)
			_, tok := rp.signIn(t, e, br, alice.Email)
			q := url.Values{"id_token_hint": {tok.AccessToken}, "post_logout_redirect_uri": {rpLogoutURI}}
			p := br.get(t, e.issuer+"/api/oauth/logout?"+q.Encode())
			if loc := p.header.Get("Location"); strings.HasPrefix(loc, rpLogoutURI) || p.url.Host != strings.TrimPrefix(e.issuer, "http://") {
				t.Errorf("got %s, want no redirect to the post-logout URI", p)
			}
		})

		t.Run("authorize with prompt=none is invalid_request", func(t *testing.T) {
			br := e.browser(t)
			_, tok := rp.signIn(t, e, br, alice.Email)
			ar := rp.start(oauth2.SetAuthURLParam("prompt", "none"), oauth2.SetAuthURLParam("id_token_hint", tok.AccessToken))
			wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "invalid_request")
		})

		t.Run("the ID token itself is still a hint", func(t *testing.T) {
			br := e.browser(t)
			_, tok := rp.signIn(t, e, br, alice.Email)
			q := url.Values{"id_token_hint": {tok.rawIDToken}, "post_logout_redirect_uri": {rpLogoutURI}}
			if p := br.get(t, e.issuer+"/api/oauth/logout?"+q.Encode()); p.status != http.StatusSeeOther || p.header.Get("Location") != rpLogoutURI {
				t.Errorf("got %s, want 303 to %s", p, rpLogoutURI)
			}
		})
	})
}
