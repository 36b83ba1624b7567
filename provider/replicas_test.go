package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestReplicasShareRotatedKeys: two replicas share one database and one issuer. A key rotated
// on replica A is published by replica B before A signs with it, so B (and any relying party
// fetching JWKS from B) accepts every token A issues, before and after the new key activates.
func TestReplicasShareRotatedKeys(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		store := b.Open(t)
		replica := func(reload time.Duration) *httptest.Server {
			p, err := provider.New(provider.Config{Issuer: "https://login.example", Secret: testSecret,
				JanitorInterval: -1, KeyReloadInterval: reload},
				provider.WithStore(store), provider.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			t.Cleanup(func() { srv.Close(); _ = p.Close() })
			if _, err := p.CreateClient(ctx, provider.ClientSpec{ID: "svc", Secret: strings.Repeat("s", 32),
				GrantTypes: []string{"client_credentials"}, AuthMethod: "client_secret_post"}); err != nil && !strings.Contains(err.Error(), "exists") {
				t.Fatal(err)
			}
			return srv
		}
		// A's rotated keys activate 1.5 s after the rotation; B reloads every 100 ms.
		a := replica(time.Second)
		bSrv := replica(100 * time.Millisecond)
		aProvider := a.Config.Handler.(*provider.Provider)

		token := func() (string, string) {
			t.Helper()
			resp, err := http.PostForm(a.URL+"/api/oauth/token", url.Values{"grant_type": {"client_credentials"},
				"client_id": {"svc"}, "client_secret": {strings.Repeat("s", 32)}})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var tok struct {
				AccessToken string `json:"access_token"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
				t.Fatalf("token from replica A: status %d, %v", resp.StatusCode, err)
			}
			h, _ := decodeJWT(t, tok.AccessToken)
			kid, _ := h["kid"].(string)
			return tok.AccessToken, kid
		}
		activeAtB := func(accessToken string) bool {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, bSrv.URL+"/api/oauth/introspect",
				strings.NewReader(url.Values{"token": {accessToken}, "client_id": {"svc"}, "client_secret": {strings.Repeat("s", 32)}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var intro map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&intro)
			return intro["active"] == true
		}
		jwksAtB := func() []string {
			t.Helper()
			resp, err := http.Get(bSrv.URL + "/.well-known/jwks.json")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var set struct {
				Keys []struct {
					KID string `json:"kid"`
				} `json:"keys"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&set)
			var out []string
			for _, k := range set.Keys {
				out = append(out, k.KID)
			}
			return out
		}

		_, oldKID := token()
		infos, err := aProvider.RotateKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rotatedAt := time.Now()
		var newKID string
		for _, k := range infos {
			if k.RetiredAt == nil && k.Algorithm == provider.DefaultAccessTokenAlg {
				newKID = k.KID
			}
		}

		if tok, kid := token(); kid != oldKID || !activeAtB(tok) {
			t.Errorf("right after the rotation: A signed with %q (want the old %q); B accepts it: %v", kid, oldKID, activeAtB(tok))
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if published := jwksAtB(); len(published) == 6 && // three algorithms, old and new
				strings.Contains(strings.Join(published, " "), newKID) {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("B's JWKS never published the new key %s: %v", newKID, published)
			}
		}
		if time.Since(rotatedAt) >= 1500*time.Millisecond {
			t.Fatal("B published the new key only after A began signing with it")
		}
		time.Sleep(time.Until(rotatedAt.Add(1600 * time.Millisecond)))
		if tok, kid := token(); kid != newKID || !activeAtB(tok) {
			t.Errorf("after activation: A signed with %q (want the new %q); B accepts it: %v", kid, newKID, activeAtB(tok))
		}
	})
}

// TestReplicasShareRevocation: access tokens are stateless, yet a revocation made on one
// replica holds at once on another sharing the database: replica B refuses, in its very
// next request, a token replica A issued and then revoked, whether at the revocation
// endpoint or by a rule on the token's subject and client.
func TestReplicasShareRevocation(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		store := b.Open(t)
		secret := strings.Repeat("s", 32)
		replica := func() (*httptest.Server, *provider.Provider) {
			p, err := provider.New(provider.Config{Issuer: "https://login.example", Secret: testSecret, JanitorInterval: -1},
				provider.WithStore(store), provider.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			t.Cleanup(func() { srv.Close(); _ = p.Close() })
			if _, err := p.CreateClient(ctx, provider.ClientSpec{ID: "svc", Secret: secret,
				GrantTypes: []string{"client_credentials"}}); err != nil && !strings.Contains(err.Error(), "exists") {
				t.Fatal(err)
			}
			return srv, p
		}
		a, _ := replica()
		bSrv, bProvider := replica()
		post := func(srv *httptest.Server, path string, form url.Values) map[string]any {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth("svc", secret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: status %d", path, resp.StatusCode)
			}
			out := map[string]any{}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			return out
		}
		tokenFromA := func() string {
			t.Helper()
			tok, _ := post(a, "/api/oauth/token", url.Values{"grant_type": {"client_credentials"}})["access_token"].(string)
			if tok == "" {
				t.Fatal("no access token from replica A")
			}
			return tok
		}
		activeAtB := func(tok string) bool {
			t.Helper()
			_, err := bProvider.VerifyAccessToken(ctx, tok)
			active := post(bSrv, "/api/oauth/introspect", url.Values{"token": {tok}})["active"] == true
			if active != (err == nil) {
				t.Errorf("B's introspection says active %v, its VerifyAccessToken %v", active, err)
			}
			return active
		}

		revoked, kept := tokenFromA(), tokenFromA()
		if !activeAtB(revoked) || !activeAtB(kept) {
			t.Fatal("B refuses A's fresh tokens")
		}
		post(a, "/api/oauth/revoke", url.Values{"token": {revoked}})
		if activeAtB(revoked) {
			t.Error("B accepts a token revoked at A's revocation endpoint")
		}
		if !activeAtB(kept) {
			t.Error("B refuses A's other token")
		}

		// A client token's subject is its client: a rule on (subject, client) covers it.
		if err := store.RevokeTokensOf(ctx, "svc", "svc"); err != nil {
			t.Fatal(err)
		}
		if activeAtB(kept) {
			t.Error("B accepts a token revoked by a (subject, client) rule")
		}
		if fresh := tokenFromA(); !activeAtB(fresh) {
			t.Error("B refuses a token A issued after the rule")
		}
	})
}
