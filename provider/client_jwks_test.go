package provider_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v3"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestClientJWKSCacheBounded: a client whose jwks_uri changes 600 times, each change followed
// by a fetch, leaves one entry in the JWKS cache, not 600, whether the change came through
// this provider (UpdateClient, as an RFC 7592 PUT does) or from elsewhere (another replica,
// the database).
func TestClientJWKSCacheBounded(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b, provider.Config{JanitorInterval: -1})
		key := newECKey(t, "k1")
		keys := newJWKSServer(t, jwksOf(t, key), 600)
		c := e.client(t, provider.ClientSpec{ID: "rotating", AuthMethod: "private_key_jwt", JWKSURI: keys.srv.URL + "/jwks/start"})
		const changes = 600
		for i := range changes {
			uri := keys.srv.URL + "/jwks/" + strconv.Itoa(i)
			if i%2 == 0 {
				if _, err := e.p.UpdateClient(ctx, c.ClientID, provider.ClientUpdate{JWKSURI: &uri}); err != nil {
					t.Fatal(err)
				}
			} else {
				pointClientAt(t, e, c.ClientID, uri, "")
			}
			if r := assertAtToken(t, e, c.ClientID, key); r.status != http.StatusBadRequest {
				t.Fatalf("change %d: got %s, want the client authenticated (invalid_grant for the made-up code)", i, r)
			}
		}
		if got := keys.fetches.Load(); got != changes {
			t.Errorf("fetches: got %d, want one per change, %d", got, changes)
		}
		if got := e.p.ClientKeySetsCached(); got > 1 {
			t.Errorf("the JWKS cache holds %d entries after %d changes of one client's jwks_uri, want 1", got, changes)
		}
		if err := e.p.DeleteClient(ctx, c.ClientID); err != nil {
			t.Fatal(err)
		}
		if got := e.p.ClientKeySetsCached(); got != 0 {
			t.Errorf("the JWKS cache holds %d entries after the client was deleted, want 0", got)
		}
	})
}

// TestClientJWKSURIChangeNeverServesOldKeys: a client moves its jwks_uri from U1 to U2 and
// back to U1, which now publishes another key, the changes made elsewhere (another replica,
// the database); each move is fetched anew: the key U1 published first is not accepted once
// the client is back on U1, and the new one is, within the minute in which an unknown kid
// would not cause a refetch.
func TestClientJWKSURIChangeNeverServesOldKeys(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{JanitorInterval: -1})
		k1, k2, k3 := newECKey(t, "k1"), newECKey(t, "k2"), newECKey(t, "k3")
		u1, u2 := newJWKSServer(t, jwksOf(t, k1), 600), newJWKSServer(t, jwksOf(t, k2), 600)
		c := e.client(t, provider.ClientSpec{ID: "moving", AuthMethod: "private_key_jwt", JWKSURI: u1.srv.URL})
		authenticated := func(k clientKey) bool {
			t.Helper()
			return assertAtToken(t, e, c.ClientID, k).status == http.StatusBadRequest // invalid_grant, past authentication
		}
		for _, step := range []struct {
			name    string
			move    string
			publish []byte
			key     clientKey
			want    bool
		}{
			{name: "k1 at U1", key: k1, want: true},
			{name: "moved to U2: k2", move: u2.srv.URL, key: k2, want: true},
			{name: "on U2: k1 no more", key: k1, want: false},
			{name: "back on U1, which now publishes k3: k1 no more", move: u1.srv.URL, publish: jwksOf(t, k3), key: k1, want: false},
			{name: "back on U1: k3", key: k3, want: true},
		} {
			if step.publish != nil {
				u1.publish(step.publish)
			}
			if step.move != "" {
				pointClientAt(t, e, c.ClientID, step.move, "")
			}
			if got := authenticated(step.key); got != step.want {
				t.Errorf("%s: authenticated %v, want %v", step.name, got, step.want)
			}
		}
	})
}

// weakRSAKey is an RSA key of 1024 bits: below the 2048 every client key must have.
func weakRSAKey(t *testing.T, kid string) clientKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return clientKey{kid: kid, alg: jose.RS256, priv: k, pub: &k.PublicKey}
}

// tinyRSAJWKS is a key set with a 17-bit RSA modulus (n = 0x019f61), as the review
// registered: nobody can sign with it, anybody can factor it.
const tinyRSAJWKS = `{"keys":[{"kty":"RSA","kid":"tiny","use":"sig","alg":"RS256","n":"AZ9h","e":"AQAB"}]}`

// TestClientKeysBounded: client keys get DPoP's bounds (RSA 2048 to 8192 bits): a key set
// with a 17-bit or 1024-bit RSA key is refused at registration, dynamic (RFC 7591) and by
// the operator; one already stored (registered before the rule) verifies neither an
// assertion nor a request object; one served at a jwks_uri is refused as the fetch's answer.
func TestClientKeysBounded(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b, provider.Config{OpenRegistration: true, JanitorInterval: -1})
		weak, strong := weakRSAKey(t, "weak"), newRSAKey(t, "strong")
		for name, doc := range map[string][]byte{"17-bit RSA": []byte(tinyRSAJWKS), "1024-bit RSA": jwksOf(t, weak)} {
			m := webAppMetadata()
			m["token_endpoint_auth_method"], m["jwks"] = "private_key_jwt", json.RawMessage(doc)
			r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", m)
			if desc, _ := r.body["error_description"].(string); r.status != http.StatusBadRequest ||
				r.body["error"] != "invalid_client_metadata" || !strings.Contains(desc, "bits") {
				t.Errorf("register a %s key: got %s, want 400 invalid_client_metadata about its size", name, r)
			}
			if _, err := e.p.CreateClient(ctx, provider.ClientSpec{AuthMethod: "private_key_jwt", JWKS: doc, RedirectURIs: []string{rpRedirectURI}}); err == nil {
				t.Errorf("CreateClient with a %s key: got no error", name)
			}
		}
		if r := func() jsonResponse {
			m := webAppMetadata()
			m["token_endpoint_auth_method"], m["jwks"] = "private_key_jwt", json.RawMessage(jwksOf(t, strong))
			return e.sendBody(t, http.MethodPost, "/api/oauth/register", "", m)
		}(); r.status != http.StatusCreated {
			t.Errorf("register a 2048-bit RSA key: got %s, want 201", r)
		}

		// Stored behind the provider's back: never used.
		stored := e.client(t, provider.ClientSpec{ID: "stored-weak", AuthMethod: "private_key_jwt", JWKS: jwksOf(t, strong)})
		row, err := e.store.ClientByID(ctx, stored.ClientID)
		if err != nil {
			t.Fatal(err)
		}
		row.JWKS = jwksOf(t, weak)
		if err := e.store.UpdateClient(ctx, row); err != nil {
			t.Fatal(err)
		}
		wantOAuthError(t, assertAtToken(t, e, stored.ClientID, weak), http.StatusUnauthorized, "invalid_client")
		if status, q := authorizeWithObject(t, e, stored.ClientID, weak); q.Get("error") != "invalid_request_object" && status < 400 {
			t.Errorf("request object signed by the weak key: got %d %v, want invalid_request_object", status, q)
		}

		// Served at a jwks_uri.
		served := newJWKSServer(t, jwksOf(t, weak), 600)
		fetched := e.client(t, provider.ClientSpec{ID: "fetched-weak", AuthMethod: "private_key_jwt", JWKSURI: served.srv.URL})
		wantOAuthError(t, assertAtToken(t, e, fetched.ClientID, weak), http.StatusUnauthorized, "invalid_client")
	})
}

// TestRequestObjectsCannotForceFetches: request objects, which anyone may send to /authorize
// without authenticating, make the server fetch a client's jwks_uri no more often than the
// cache allows: once for twenty objects with unknown kids within a minute, once for twenty
// while the fetch fails within ten seconds.
func TestRequestObjectsCannotForceFetches(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{JanitorInterval: -1})
		known, unknown := newECKey(t, "k1"), newECKey(t, "unknown")
		keys := newJWKSServer(t, jwksOf(t, known), 600)
		c := e.client(t, provider.ClientSpec{ID: "jar", JWKSURI: keys.srv.URL})
		var failed atomic.Int32
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			failed.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
		}))
		t.Cleanup(failing.Close)
		down := e.client(t, provider.ClientSpec{ID: "jar-down", JWKSURI: failing.URL})
		for range 20 {
			if status, q := authorizeWithObject(t, e, c.ClientID, unknown); q.Get("error") != "invalid_request_object" && status < 400 {
				t.Fatalf("object with an unknown kid: got %d %v, want invalid_request_object", status, q)
			}
			authorizeWithObject(t, e, down.ClientID, known)
		}
		if got := keys.fetches.Load(); got != 1 {
			t.Errorf("fetches of the working jwks_uri: got %d, want 1", got)
		}
		if got := failed.Load(); got != 1 {
			t.Errorf("fetches of the failing jwks_uri: got %d, want 1", got)
		}
	})
}
