package provider_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestStatelessAccessTokens: access tokens are ES256 JWTs typed at+jwt carrying their grant
// (gid) and their issue time to the microsecond (iat_us); no row is stored for them, and
// each way of revoking one takes effect at once through a revocation rule, refused alike by
// introspection, userinfo and VerifyAccessToken.
func TestStatelessAccessTokens(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		ctx := context.Background()
		accepted := func(t *testing.T, token string) bool {
			t.Helper()
			_, err := e.p.VerifyAccessToken(ctx, token)
			if err != nil && !errors.Is(err, provider.ErrInvalidToken) {
				t.Fatalf("VerifyAccessToken: %v", err)
			}
			active := e.introspect(t, e.app, token)["active"] == true
			if active != (err == nil) {
				t.Errorf("introspection active %v, but VerifyAccessToken: %v", active, err)
			}
			return err == nil
		}
		refused := func(t *testing.T, what, token string) {
			t.Helper()
			if accepted(t, token) {
				t.Errorf("%s: accepted, want refused", what)
			}
			if r := e.userinfo(t, token); r.status != http.StatusUnauthorized {
				t.Errorf("%s: userinfo got %s, want 401", what, r)
			}
		}

		t.Run("an ES256 JWT with its grant and issue time", func(t *testing.T) {
			tok := e.userToken(t, e.browser(t), e.app, e.alice.Email)
			h, c := decodeJWT(t, tok.AccessToken)
			if h["alg"] != "ES256" || h["typ"] != "at+jwt" {
				t.Errorf("header: got alg %v typ %v, want ES256 at+jwt", h["alg"], h["typ"])
			}
			gid, _ := c["gid"].(string)
			us, _ := c["iat_us"].(float64)
			iat, _ := c["iat"].(float64)
			if gid == "" || us < iat*1e6 || us >= (iat+1)*1e6 {
				t.Errorf("got gid %q, iat_us %v, iat %v; want a grant id and iat_us within iat's second", gid, us, iat)
			}
			// The refreshed token belongs to the same grant.
			r := e.refresh(t, e.app, tok.RefreshToken)
			if _, c2 := decodeJWT(t, tokenSetOf(r).access); c2["gid"] != gid {
				t.Errorf("refreshed token's gid: got %v, want %q", c2["gid"], gid)
			}
			if h, _ := decodeJWT(t, tok.rawIDToken); h["alg"] != "RS256" {
				t.Errorf("ID token alg: got %v, want RS256", h["alg"])
			}
		})

		t.Run("each refresh revokes the grant's earlier access tokens, not the new one", func(t *testing.T) {
			tok := e.userToken(t, e.browser(t), e.app, e.alice.Email)
			access, refresh := tok.AccessToken, tok.RefreshToken
			issued := []string{access}
			// Several refreshes in a row: most fall in the second of the previous one.
			for i := range 4 {
				r := e.refresh(t, e.app, refresh)
				if r.status != http.StatusOK {
					t.Fatalf("refresh %d: got %s", i, r)
				}
				next := tokenSetOf(r)
				if !accepted(t, next.access) {
					t.Errorf("refresh %d: the new access token is refused", i)
				}
				if r := e.userinfo(t, next.access); r.status != http.StatusOK {
					t.Errorf("refresh %d: userinfo with the new token got %s", i, r)
				}
				for j, old := range issued {
					if accepted(t, old) {
						t.Errorf("refresh %d: access token %d of the grant still accepted", i, j)
					}
				}
				issued = append(issued, next.access)
				refresh = next.refresh
			}
		})

		t.Run("a reused code revokes the access tokens it produced", func(t *testing.T) {
			rp := e.relyingParty(t, e.app)
			br := e.browser(t)
			rp.signIn(t, e.env, br, e.alice.Email) // consent given; the next one is silent
			ar := rp.start()
			code := wantCode(t, e.env, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
			tok := rp.exchange(t, ar, code)
			if !accepted(t, tok.AccessToken) {
				t.Fatal("the fresh token is refused")
			}
			wantOAuthError(t, e.token(t, e.app, url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {rpRedirectURI}, "code_verifier": {ar.verifier}}), http.StatusBadRequest, "invalid_grant")
			refused(t, "the code's access token after reuse", tok.AccessToken)
		})

		t.Run("the revocation endpoint revokes one access token", func(t *testing.T) {
			br := e.browser(t)
			tok := e.userToken(t, br, e.app, e.alice.Email)
			sibling := e.userToken(t, br, e.app, e.alice.Email)
			if r := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {tok.AccessToken}}, basicAuth(e.app)); r.status != http.StatusOK {
				t.Fatalf("revoke: got %s, want 200", r)
			}
			refused(t, "the revoked token", tok.AccessToken)
			if !accepted(t, sibling.AccessToken) {
				t.Error("another grant's token of the same user is refused")
			}
			// Revoking again, or once revoked, is still 200.
			if r := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {tok.AccessToken}, "token_type_hint": {"access_token"}}, basicAuth(e.app)); r.status != http.StatusOK {
				t.Errorf("revoke again: got %s, want 200", r)
			}
		})

		t.Run("the revocation endpoint revokes a refresh token's grant", func(t *testing.T) {
			tok := e.userToken(t, e.browser(t), e.app, e.alice.Email)
			if r := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {tok.RefreshToken}}, basicAuth(e.app)); r.status != http.StatusOK {
				t.Fatalf("revoke: got %s, want 200", r)
			}
			refused(t, "the grant's access token", tok.AccessToken)
			wantOAuthError(t, e.refresh(t, e.app, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
		})

		t.Run("another client cannot revoke a client token", func(t *testing.T) {
			tok := e.clientToken(t, e.app)
			wantOAuthError(t, e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {tok}}, basicAuth(e.other)),
				http.StatusBadRequest, "unauthorized_client")
			if !accepted(t, tok) {
				t.Error("the token is refused after another client's revocation request")
			}
		})

		t.Run("a disabled user's access tokens are refused", func(t *testing.T) {
			carol := e.user(t, "carol@example.com", "Carol Example")
			tok := e.userToken(t, e.browser(t), e.app, carol.Email)
			if _, err := e.p.DisableUser(ctx, carol.ID); err != nil {
				t.Fatal(err)
			}
			refused(t, "a token issued before the user was disabled", tok.AccessToken)
		})

		t.Run("a deleted client's tokens are refused", func(t *testing.T) {
			gone := e.client(t, provider.ClientSpec{ID: "gone", GrantTypes: []string{"client_credentials"}, Scopes: []string{"profile"}})
			tok := e.clientToken(t, gone)
			if _, err := e.p.VerifyAccessToken(ctx, tok); err != nil {
				t.Fatalf("the fresh token: %v", err)
			}
			if err := e.p.DeleteClient(ctx, gone.ClientID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.p.VerifyAccessToken(ctx, tok); !errors.Is(err, provider.ErrInvalidToken) {
				t.Errorf("VerifyAccessToken after the client's deletion: got %v, want ErrInvalidToken", err)
			}
			// A client registered again under the same id does not revive them.
			again := e.client(t, provider.ClientSpec{ID: "gone", GrantTypes: []string{"client_credentials"}, Scopes: []string{"profile"}})
			if _, err := e.p.VerifyAccessToken(ctx, tok); !errors.Is(err, provider.ErrInvalidToken) {
				t.Errorf("VerifyAccessToken once the client id is registered again: got %v, want ErrInvalidToken", err)
			}
			if _, err := e.p.VerifyAccessToken(ctx, e.clientToken(t, again)); err != nil {
				t.Errorf("a token of the client registered again: %v", err)
			}
		})
	})
}
