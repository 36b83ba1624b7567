package provider_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestTwoProviders: two providers in one process, with different issuers and stores but
// the same secret and the same client and user names, share nothing (STYLE rule 9).
func TestTwoProviders(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		envs := []*env{newEnv(t, b, provider.Config{}), newEnv(t, b, provider.Config{})}
		type side struct {
			e      *env
			client provider.ClientInfo
			user   provider.UserInfo
			rp     *relyingParty
		}
		sides := make([]*side, len(envs))
		for i, e := range envs {
			c := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
			sides[i] = &side{e: e, client: c, user: e.user(t, "alice@example.com", "Alice Example"), rp: e.relyingParty(t, c)}
		}
		a, bb := sides[0], sides[1]
		if a.e.issuer == bb.e.issuer {
			t.Fatalf("both providers have issuer %s", a.e.issuer)
		}

		t.Run("concurrent flows each see their own issuer and keys", func(t *testing.T) {
			for i, s := range sides {
				t.Run([]string{"first", "second"}[i], func(t *testing.T) {
					t.Parallel()
					br := s.e.browser(t)
					for range 3 { // one login, then silent authorizations
						_, tok := s.rp.signIn(t, s.e, br, s.user.Email)
						if tok.claims["iss"] != s.e.issuer || tok.claims["sub"] != s.user.ID {
							t.Errorf("got iss %v sub %v, want %s and %s", tok.claims["iss"], tok.claims["sub"], s.e.issuer, s.user.ID)
						}
					}
				})
			}
		})

		t.Run("keys, secrets and tokens do not cross over", func(t *testing.T) {
			for _, kid := range kids(a.e.jwks(t)) {
				if slices.Contains(kids(bb.e.jwks(t)), kid) {
					t.Errorf("kid %s is published by both providers", kid)
				}
			}
			// The first provider's secret does not authenticate the same client id at the second.
			r := bb.e.token(t, a.client, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}})
			wantOAuthError(t, r, http.StatusUnauthorized, "invalid_client")

			_, tok := a.rp.signIn(t, a.e, a.e.browser(t), a.user.Email)
			if r := bb.e.userinfo(t, tok.AccessToken); r.status != http.StatusUnauthorized {
				t.Errorf("the first provider's access token at the second: got %s, want 401", r)
			}
			if r := bb.e.call(t, http.MethodPost, "/api/oauth/introspect", url.Values{"token": {tok.AccessToken}}, basicAuth(bb.client)); r.body["active"] != false {
				t.Errorf("the first provider's access token introspected at the second: got %s, want inactive", r)
			}
		})

		t.Run("a session at one provider is no session at the other", func(t *testing.T) {
			// Cookies ignore ports: the browser sends the first provider's session cookie
			// to the second one too.
			br := a.e.browser(t)
			a.rp.signIn(t, a.e, br, a.user.Email)
			ar := bb.rp.start(oauth2.SetAuthURLParam("prompt", "none"))
			wantAuthError(t, bb.e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "login_required")
		})

		t.Run("closing one leaves the other serving", func(t *testing.T) {
			if err := a.e.p.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			_, tok := bb.rp.signIn(t, bb.e, bb.e.browser(t), bb.user.Email)
			if tok.claims["iss"] != bb.e.issuer {
				t.Errorf("iss: got %v, want %s", tok.claims["iss"], bb.e.issuer)
			}
		})
	})
}
