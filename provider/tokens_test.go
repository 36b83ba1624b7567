package provider_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestRefreshToken(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
		other := e.client(t, provider.ClientSpec{ID: "other", FirstParty: true})
		rp := e.relyingParty(t, webapp)
		br := e.browser(t)
		_, first := rp.signIn(t, e, br, alice.Email)
		secondAfter() // so the refreshed ID token has a later iat

		var newest tokenSet
		t.Run("rotation issues new tokens for the same identity", func(t *testing.T) {
			r := e.refresh(t, webapp, first.RefreshToken)
			if r.status != http.StatusOK {
				t.Fatalf("refresh: got %s, want 200", r)
			}
			if got := r.header.Get("Cache-Control"); !strings.Contains(got, "no-store") {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			if got := r.body["token_type"]; got != "Bearer" {
				t.Errorf("token_type: got %v, want Bearer", got)
			}
			newest = tokenSetOf(r)
			if newest.access == "" || newest.access == first.AccessToken {
				t.Errorf("access_token: got %.20q, want a new one", newest.access)
			}
			if newest.refresh == "" || newest.refresh == first.RefreshToken {
				t.Errorf("refresh_token: got %.20q, want a new one", newest.refresh)
			}
			_, c := rp.verifyIDToken(t, newest.id, newest.access)
			for _, name := range []string{"iss", "sub", "aud", "auth_time"} {
				if c[name] != first.claims[name] {
					t.Errorf("refreshed ID token %s: got %v, want %v as before", name, c[name], first.claims[name])
				}
			}
			if got, old := unixClaim(t, c, "iat"), unixClaim(t, first.claims, "iat"); got <= old {
				t.Errorf("refreshed ID token iat: got %d, want later than %d", got, old)
			}
			if r := e.userinfo(t, newest.access); r.status != http.StatusOK || r.body["sub"] != alice.ID {
				t.Errorf("userinfo with the new access token: got %s, want 200 for %s", r, alice.ID)
			}
		})

		t.Run("another client's refresh token is invalid_grant", func(t *testing.T) {
			_, grant := rp.signIn(t, e, br, alice.Email) // silent: the session is still there
			wantOAuthError(t, e.refresh(t, other, grant.RefreshToken), http.StatusBadRequest, "invalid_grant")
			// The theft attempt does not hurt the rightful client.
			if r := e.refresh(t, webapp, grant.RefreshToken); r.status != http.StatusOK {
				t.Errorf("refresh by its own client afterwards: got %s, want 200", r)
			}
		})

		t.Run("reusing a rotated refresh token revokes the whole family", func(t *testing.T) {
			if newest.refresh == "" {
				t.Fatal("rotation failed; nothing to test")
			}
			wantOAuthError(t, e.refresh(t, webapp, first.RefreshToken), http.StatusBadRequest, "invalid_grant")
			wantOAuthError(t, e.refresh(t, webapp, newest.refresh), http.StatusBadRequest, "invalid_grant")
			wantRefused(t, e, webapp, newest.access)
			wantRefused(t, e, webapp, first.AccessToken)
		})
	})
}

// tokenSet is the tokens of a raw token response.
type tokenSet struct{ access, refresh, id string }

func tokenSetOf(r jsonResponse) tokenSet {
	s := func(k string) string { v, _ := r.body[k].(string); return v }
	return tokenSet{access: s("access_token"), refresh: s("refresh_token"), id: s("id_token")}
}

func TestRevocationAndIntrospection(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
		other := e.client(t, provider.ClientSpec{ID: "other", FirstParty: true})
		rp := e.relyingParty(t, webapp)
		br := e.browser(t)
		revoke := func(t *testing.T, c provider.ClientInfo, token string) jsonResponse {
			t.Helper()
			return e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {token}}, basicAuth(c))
		}

		t.Run("introspection describes an active access token", func(t *testing.T) {
			_, tok := rp.signIn(t, e, br, alice.Email)
			in := e.introspect(t, webapp, tok.AccessToken)
			for name, want := range map[string]any{"active": true, "sub": alice.ID, "client_id": webapp.ClientID} {
				if got := in[name]; got != want {
					t.Errorf("%s: got %#v, want %#v", name, got, want)
				}
			}
			scope, _ := in["scope"].(string)
			if !sameSet(strings.Fields(scope), []string{"openid", "profile", "email", "offline_access"}) {
				t.Errorf("scope: got %q, want openid profile email offline_access", scope)
			}
		})

		t.Run("introspection needs client authentication", func(t *testing.T) {
			_, tok := rp.signIn(t, e, br, alice.Email)
			r := e.call(t, http.MethodPost, "/api/oauth/introspect", url.Values{"token": {tok.AccessToken}}, nil)
			if r.status != http.StatusUnauthorized {
				t.Errorf("got %s, want 401", r)
			}
			if r.body["active"] == true {
				t.Errorf("an unauthenticated caller learned the token is active")
			}
		})

		t.Run("revoked access token is inactive and refused", func(t *testing.T) {
			_, tok := rp.signIn(t, e, br, alice.Email)
			if r := revoke(t, webapp, tok.AccessToken); r.status != http.StatusOK {
				t.Fatalf("revoke: got %s, want 200", r)
			}
			wantRefused(t, e, webapp, tok.AccessToken)
		})

		t.Run("revoked refresh token takes its access tokens along", func(t *testing.T) {
			_, tok := rp.signIn(t, e, br, alice.Email)
			if r := revoke(t, webapp, tok.RefreshToken); r.status != http.StatusOK {
				t.Fatalf("revoke: got %s, want 200", r)
			}
			wantOAuthError(t, e.refresh(t, webapp, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
			wantRefused(t, e, webapp, tok.AccessToken)
		})

		t.Run("a client cannot revoke another client's token", func(t *testing.T) {
			_, tok := rp.signIn(t, e, br, alice.Email)
			// RFC 7009 §2.1: the request is refused, and nothing is revoked.
			wantOAuthError(t, revoke(t, other, tok.AccessToken), http.StatusBadRequest, "unauthorized_client")
			if got := e.introspect(t, webapp, tok.AccessToken)["active"]; got != true {
				t.Errorf("active after another client's revocation: got %v, want true", got)
			}
		})

		t.Run("revoking an unknown token succeeds", func(t *testing.T) {
			if r := revoke(t, webapp, "no-such-token"); r.status != http.StatusOK {
				t.Errorf("got %s, want 200 (RFC 7009 §2.2)", r)
			}
		})
	})
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		// A rotated key signs one and a half reload intervals after it was added: 300 ms.
		const reload = 200 * time.Millisecond
		e := newEnv(t, b, provider.Config{KeyReloadInterval: reload})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
		rp := e.relyingParty(t, webapp)
		br := e.browser(t)

		_, before := rp.signIn(t, e, br, alice.Email)
		oldHeader, _ := decodeJWT(t, before.rawIDToken)
		oldKID, _ := oldHeader["kid"].(string)

		infos, err := e.p.RotateKeys(context.Background())
		if err != nil {
			t.Fatalf("RotateKeys: %v", err)
		}
		rotatedAt := time.Now()
		published := kids(e.jwks(t))
		for _, k := range infos {
			if !slices.Contains(published, k.KID) {
				t.Errorf("RotateKeys reported %s, which the JWKS does not publish %v", k.KID, published)
			}
		}

		t.Run("old tokens still verify through the JWKS", func(t *testing.T) {
			if !slices.Contains(published, oldKID) {
				t.Fatalf("old kid %s left the JWKS %v", oldKID, published)
			}
			rp.verifyIDToken(t, before.rawIDToken, before.AccessToken)
			e.verifyJWT(t, before.AccessToken)
			if r := e.userinfo(t, before.AccessToken); r.status != http.StatusOK {
				t.Errorf("userinfo with the old access token: got %s, want 200", r)
			}
		})

		t.Run("until the new key activates the old one signs", func(t *testing.T) {
			_, now := rp.signIn(t, e, br, alice.Email)
			if time.Since(rotatedAt) >= reload*3/2 {
				t.Skip("the machine was too slow to sign in before the activation")
			}
			// Access tokens are ES256 by default: their key is another than the ID token's.
			oldAccessHeader, _ := decodeJWT(t, before.AccessToken)
			for name, c := range map[string]struct {
				raw string
				old any
			}{
				"ID token": {now.rawIDToken, oldKID}, "access token": {now.AccessToken, oldAccessHeader["kid"]},
			} {
				if h, _ := decodeJWT(t, c.raw); h["kid"] != c.old {
					t.Errorf("%s kid: got %v, want the old %q until the new key has been published everywhere", name, h["kid"], c.old)
				}
			}
		})

		t.Run("after activation new tokens carry the new kid", func(t *testing.T) {
			time.Sleep(time.Until(rotatedAt.Add(reload*3/2 + 50*time.Millisecond)))
			_, after := rp.signIn(t, e, br, alice.Email) // verified by go-oidc, which fetches the new key
			oldAccessHeader, _ := decodeJWT(t, before.AccessToken)
			for name, c := range map[string]struct {
				raw string
				old any
			}{
				"ID token": {after.rawIDToken, oldKID}, "access token": {after.AccessToken, oldAccessHeader["kid"]},
			} {
				h, _ := decodeJWT(t, c.raw)
				kid, _ := h["kid"].(string)
				if kid == c.old || !slices.Contains(published, kid) {
					t.Errorf("%s kid: got %q, want a new published kid (old %v)", name, kid, c.old)
				}
			}
			e.verifyJWT(t, after.AccessToken)
		})
	})
}
