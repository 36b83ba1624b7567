package provider_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v3"
	"github.com/go-jose/go-jose/v3/jwt"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// ---- Keys and assertions ----

// clientKey is a relying party's signing key with its kid.
type clientKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv any
	pub  any
}

func newECKey(t *testing.T, kid string) clientKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return clientKey{kid: kid, alg: jose.ES256, priv: k, pub: &k.PublicKey}
}

func newRSAKey(t *testing.T, kid string) clientKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return clientKey{kid: kid, alg: jose.RS256, priv: k, pub: &k.PublicKey}
}

// jwksOf is the JSON Web Key Set document publishing the keys' public halves.
func jwksOf(t *testing.T, keys ...clientKey) []byte {
	t.Helper()
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.pub, KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signWith signs claims as a compact JWS with key (of alg) and kid in the header.
func signWith(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// unsigned is claims as an unsecured JWT (alg none, RFC 7519 §6).
func unsigned(t *testing.T, claims map[string]any) string {
	t.Helper()
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return header + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
}

// assertionClaims are valid RFC 7523 claims of clientID for aud, expiring in a minute.
func assertionClaims(clientID, aud string, now time.Time) map[string]any {
	return map[string]any{"iss": clientID, "sub": clientID, "aud": aud, "jti": randomString(16),
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}
}

// with returns a copy of claims with the changes; a nil value deletes the claim.
func with(claims map[string]any, changes map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range claims {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// assertionForm is the form fields of a client assertion.
func assertionForm(form url.Values, assertion string) url.Values {
	out := url.Values{"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion": {assertion}}
	for k, v := range form {
		out[k] = v
	}
	return out
}

// ---- Tests ----

// TestClientAssertions pins RFC 7523 client authentication at the token endpoint: a
// private_key_jwt client signs with its registered key, a client_secret_jwt client with its
// secret (HS256), and every other assertion, or another method than the registered one, is
// invalid_client.
func TestClientAssertions(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		key, otherKey := newECKey(t, "k1"), newECKey(t, "k1")
		rsaKey := newRSAKey(t, "r1")
		cc := func(id, method string) provider.ClientSpec {
			return provider.ClientSpec{ID: id, AuthMethod: method, GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}}
		}
		pkSpec := cc("pk", "private_key_jwt")
		pkSpec.JWKS = jwksOf(t, key, rsaKey)
		pk := e.client(t, pkSpec)
		if pk.ClientSecret != "" {
			t.Errorf("private_key_jwt client: got secret %q, want none", pk.ClientSecret)
		}
		sj := e.client(t, cc("sj", "client_secret_jwt"))
		basic := e.client(t, cc("basic", ""))
		post := e.client(t, cc("post", "client_secret_post"))
		tokenURL := e.issuer + "/api/oauth/token"
		grant := url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}
		now := time.Now()
		es := func(claims map[string]any) string { return signWith(t, key.alg, key.priv, key.kid, claims) }
		hs := func(secret string, claims map[string]any) string {
			return signWith(t, jose.HS256, []byte(secret), "", claims)
		}
		pkClaims := assertionClaims(pk.ClientID, tokenURL, now)
		sjClaims := assertionClaims(sj.ClientID, e.issuer, now)
		replayed := es(assertionClaims(pk.ClientID, tokenURL, now))

		for _, tc := range []struct {
			name string
			form url.Values
			auth func(*http.Request)
			// wantError is "" for success.
			wantError string
		}{
			{name: "private_key_jwt ES256 with the token endpoint as aud succeeds", form: assertionForm(grant, es(pkClaims))},
			{name: "private_key_jwt with the issuer as aud succeeds", form: assertionForm(grant, es(with(pkClaims, map[string]any{"aud": e.issuer, "jti": "j-iss"})))},
			{name: "private_key_jwt RS256 with client_id in the form succeeds",
				form: assertionForm(with2(grant, "client_id", pk.ClientID), signWith(t, jose.RS256, rsaKey.priv, rsaKey.kid, with(pkClaims, map[string]any{"jti": "j-rsa"})))},
			{name: "private_key_jwt first use of a jti succeeds", form: assertionForm(grant, replayed)},
			{name: "replayed jti is invalid_client", form: assertionForm(grant, replayed), wantError: "invalid_client"},
			{name: "expired assertion is invalid_client",
				form: assertionForm(grant, es(with(pkClaims, map[string]any{"jti": "j-exp", "iat": now.Add(-10 * time.Minute).Unix(), "exp": now.Add(-5 * time.Minute).Unix()}))), wantError: "invalid_client"},
			{name: "assertion living an hour is invalid_client",
				form: assertionForm(grant, es(with(pkClaims, map[string]any{"jti": "j-long", "exp": now.Add(time.Hour).Unix()}))), wantError: "invalid_client"},
			{name: "assertion without exp is invalid_client",
				form: assertionForm(grant, es(with(pkClaims, map[string]any{"jti": "j-noexp", "exp": nil}))), wantError: "invalid_client"},
			{name: "assertion without jti is invalid_client",
				form: assertionForm(grant, es(with(pkClaims, map[string]any{"jti": nil}))), wantError: "invalid_client"},
			{name: "wrong aud is invalid_client",
				form: assertionForm(grant, es(with(pkClaims, map[string]any{"jti": "j-aud", "aud": "https://other.example/token"}))), wantError: "invalid_client"},
			{name: "iss other than the client is invalid_client",
				form: assertionForm(grant, es(with(pkClaims, map[string]any{"jti": "j-iss2", "iss": sj.ClientID}))), wantError: "invalid_client"},
			{name: "sub other than the client is invalid_client",
				form: assertionForm(with2(grant, "client_id", pk.ClientID), es(with(pkClaims, map[string]any{"jti": "j-sub", "sub": sj.ClientID}))), wantError: "invalid_client"},
			{name: "client_id in the form other than iss and sub is invalid_client",
				form: assertionForm(with2(grant, "client_id", sj.ClientID), es(with(pkClaims, map[string]any{"jti": "j-cid"}))), wantError: "invalid_client"},
			{name: "assertion signed by an unregistered key of the same kid is invalid_client",
				form: assertionForm(grant, signWith(t, otherKey.alg, otherKey.priv, otherKey.kid, with(pkClaims, map[string]any{"jti": "j-key"}))), wantError: "invalid_client"},
			{name: "unsigned assertion is invalid_client",
				form: assertionForm(grant, unsigned(t, with(pkClaims, map[string]any{"jti": "j-none"}))), wantError: "invalid_client"},
			{name: "HS256 assertion for a private_key_jwt client is invalid_client",
				form: assertionForm(grant, hs(strings.Repeat("k", 32), with(pkClaims, map[string]any{"jti": "j-hs-pk"}))), wantError: "invalid_client"},
			{name: "client_secret_jwt HS256 with the secret succeeds", form: assertionForm(grant, hs(sj.ClientSecret, sjClaims))},
			{name: "client_secret_jwt HS256 with a wrong secret is invalid_client",
				form: assertionForm(grant, hs(strings.Repeat("x", 43), with(sjClaims, map[string]any{"jti": "j-wrong"}))), wantError: "invalid_client"},
			{name: "client_secret_jwt client using client_secret_basic is invalid_client",
				form: grant, auth: basicAuth(sj), wantError: "invalid_client"},
			{name: "client_secret_basic client using client_secret_post is invalid_client",
				form: with2(with2(grant, "client_id", basic.ClientID), "client_secret", basic.ClientSecret), wantError: "invalid_client"},
			{name: "client_secret_post client using client_secret_basic is invalid_client",
				form: grant, auth: basicAuth(post), wantError: "invalid_client"},
			{name: "client_secret_post client using client_secret_post succeeds",
				form: with2(with2(grant, "client_id", post.ClientID), "client_secret", post.ClientSecret)},
			{name: "client_secret_basic client using a private_key_jwt assertion is invalid_client",
				form: assertionForm(grant, es(assertionClaims(basic.ClientID, tokenURL, now))), wantError: "invalid_client"},
			{name: "private_key_jwt client using client_secret_post is invalid_client",
				form: with2(with2(grant, "client_id", pk.ClientID), "client_secret", "anything"), wantError: "invalid_client"},
			{name: "an assertion and a client_secret together are invalid_request",
				form: with2(assertionForm(grant, es(with(pkClaims, map[string]any{"jti": "j-twice"}))), "client_secret", "x"), wantError: "invalid_request"},
			{name: "HTTP Basic naming another client than the form's client_id is invalid_request",
				form: with2(grant, "client_id", post.ClientID), auth: basicAuth(basic), wantError: "invalid_request"},
			{name: "unknown client_assertion_type is invalid_request",
				form: with2(assertionForm(grant, es(with(pkClaims, map[string]any{"jti": "j-type"}))), "client_assertion_type", "urn:example:saml"), wantError: "invalid_request"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.call(t, http.MethodPost, "/api/oauth/token", tc.form, tc.auth)
				if tc.wantError == "" {
					if r.status != http.StatusOK || r.body["access_token"] == nil {
						t.Fatalf("got %s, want 200 with an access token", r)
					}
					return
				}
				status := http.StatusUnauthorized
				if tc.wantError == "invalid_request" {
					status = http.StatusBadRequest
				}
				wantOAuthError(t, r, status, tc.wantError)
			})
		}
	})
}

// with2 returns a copy of form with key set to value.
func with2(form url.Values, key, value string) url.Values {
	out := url.Values{}
	for k, v := range form {
		out[k] = v
	}
	out.Set(key, value)
	return out
}

// TestPrivateKeyJWTAtEveryEndpoint: the same private_key_jwt client authenticates at the
// token, introspection and revocation endpoints, each assertion aimed at the endpoint
// called (or the issuer).
func TestPrivateKeyJWTAtEveryEndpoint(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		key := newECKey(t, "k1")
		pk := e.client(t, provider.ClientSpec{ID: "pk", AuthMethod: "private_key_jwt", JWKS: jwksOf(t, key),
			GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}})
		assert := func(aud string) string {
			return signWith(t, key.alg, key.priv, key.kid, assertionClaims(pk.ClientID, aud, time.Now()))
		}
		r := e.call(t, http.MethodPost, "/api/oauth/token",
			assertionForm(url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}, assert(e.issuer+"/api/oauth/token")), nil)
		if r.status != http.StatusOK {
			t.Fatalf("token: got %s, want 200", r)
		}
		access, _ := r.body["access_token"].(string)
		r = e.call(t, http.MethodPost, "/api/oauth/introspect", assertionForm(url.Values{"token": {access}}, assert(e.issuer+"/api/oauth/introspect")), nil)
		if r.status != http.StatusOK || r.body["active"] != true {
			t.Fatalf("introspect: got %s, want 200 active", r)
		}
		r = e.call(t, http.MethodPost, "/api/oauth/revoke", assertionForm(url.Values{"token": {access}}, assert(e.issuer)), nil)
		if r.status != http.StatusOK {
			t.Fatalf("revoke: got %s, want 200", r)
		}
		r = e.call(t, http.MethodPost, "/api/oauth/introspect", assertionForm(url.Values{"token": {access}}, assert(e.issuer+"/api/oauth/introspect")), nil)
		if r.status != http.StatusOK || r.body["active"] != false {
			t.Fatalf("introspect after revoke: got %s, want 200 inactive", r)
		}
		// An assertion aimed at the revocation endpoint does not open introspection.
		r = e.call(t, http.MethodPost, "/api/oauth/introspect", assertionForm(url.Values{"token": {access}}, assert(e.issuer+"/api/oauth/revoke")), nil)
		wantOAuthError(t, r, http.StatusUnauthorized, "invalid_client")
	})
}

// jwksServer serves a client's key set on 127.0.0.1 with a Cache-Control max-age and counts
// its fetches.
type jwksServer struct {
	mu      sync.Mutex
	doc     []byte
	fetches atomic.Int32
	srv     *httptest.Server
}

func newJWKSServer(t *testing.T, doc []byte, maxAge int) *jwksServer {
	t.Helper()
	s := &jwksServer{doc: doc}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(maxAge))
		_, _ = w.Write(s.doc)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) publish(doc []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.doc = doc
}

// TestClientJWKSURI: a private_key_jwt client's key set is fetched from its jwks_uri, kept
// as long as its max-age says, and fetched again for an unknown kid at most once a minute.
func TestClientJWKSURI(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		offset := &atomic.Int64{}
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		advance := func(d time.Duration) { offset.Add(int64(d)) }
		e := newEnv(t, b, provider.Config{}, provider.WithClock(clock))
		k1, k2, k3 := newECKey(t, "k1"), newECKey(t, "k2"), newECKey(t, "k3")
		keys := newJWKSServer(t, jwksOf(t, k1), 600)
		pk := e.client(t, provider.ClientSpec{ID: "pk", AuthMethod: "private_key_jwt", JWKSURI: keys.srv.URL + "/jwks.json",
			GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}})
		token := func(k clientKey) jsonResponse {
			t.Helper()
			a := signWith(t, k.alg, k.priv, k.kid, assertionClaims(pk.ClientID, e.issuer, clock()))
			return e.call(t, http.MethodPost, "/api/oauth/token", assertionForm(url.Values{"grant_type": {"client_credentials"}}, a), nil)
		}
		for _, step := range []struct {
			name        string
			advance     time.Duration
			publish     []clientKey
			key         clientKey
			wantOK      bool
			wantFetches int32
		}{
			{name: "first assertion fetches the set", key: k1, wantOK: true, wantFetches: 1},
			{name: "second assertion is served from the cache", key: k1, wantOK: true, wantFetches: 1},
			{name: "unknown kid within a minute of the fetch is not refetched", publish: []clientKey{k1, k2}, key: k2, wantFetches: 1},
			{name: "unknown kid a minute later refetches and verifies", advance: 61 * time.Second, key: k2, wantOK: true, wantFetches: 2},
			{name: "another unknown kid right after is not refetched", key: k3, wantFetches: 2},
			{name: "a kid still unknown after a refetch fails", advance: 61 * time.Second, key: k3, wantFetches: 3},
			{name: "past max-age the set is fetched again", advance: 601 * time.Second, key: k1, wantOK: true, wantFetches: 4},
		} {
			t.Run(step.name, func(t *testing.T) {
				advance(step.advance)
				if step.publish != nil {
					keys.publish(jwksOf(t, step.publish...))
				}
				r := token(step.key)
				if step.wantOK && r.status != http.StatusOK {
					t.Errorf("token: got %s, want 200", r)
				}
				if !step.wantOK {
					wantOAuthError(t, r, http.StatusUnauthorized, "invalid_client")
				}
				if got := keys.fetches.Load(); got != step.wantFetches {
					t.Errorf("fetches: got %d, want %d", got, step.wantFetches)
				}
			})
		}
	})
}

// TestClientRegistrationRefusesBadKeys: registration refuses a JWKS holding a private key,
// both a JWKS and a JWKS URI, a private_key_jwt client without keys, and an http JWKS URI
// off the loopback host.
func TestClientRegistrationRefusesBadKeys(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		key := newECKey(t, "k1")
		private, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.priv, KeyID: "k1", Use: "sig"}}})
		if err != nil {
			t.Fatal(err)
		}
		symmetric := []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA","kid":"s"}]}`)
		for _, tc := range []struct {
			name string
			spec provider.ClientSpec
			want string
		}{
			{"private key in the JWKS", provider.ClientSpec{AuthMethod: "private_key_jwt", JWKS: private}, "private or symmetric"},
			{"symmetric key in the JWKS", provider.ClientSpec{AuthMethod: "private_key_jwt", JWKS: symmetric}, "private or symmetric"},
			{"both JWKS and JWKS URI", provider.ClientSpec{AuthMethod: "private_key_jwt", JWKS: jwksOf(t, key), JWKSURI: "https://rp.example/jwks"}, "not both"},
			{"private_key_jwt without keys", provider.ClientSpec{AuthMethod: "private_key_jwt"}, "needs a JWKS"},
			{"http JWKS URI off loopback", provider.ClientSpec{AuthMethod: "private_key_jwt", JWKSURI: "http://rp.example/jwks"}, "https"},
			{"unknown method", provider.ClientSpec{AuthMethod: "tls_client_auth"}, "not supported"},
			{"public client with a secret method", provider.ClientSpec{Public: true, AuthMethod: "client_secret_basic"}, "public client"},
			{"short client_secret_jwt secret", provider.ClientSpec{AuthMethod: "client_secret_jwt", Secret: "short"}, "at least 32 bytes"},
			{"request object alg none", provider.ClientSpec{JWKS: jwksOf(t, key), RequestObjectAlg: "none"}, "not supported"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.spec.GrantTypes = []string{"client_credentials"}
				_, err := e.p.CreateClient(t.Context(), tc.spec)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("CreateClient: got %v, want an error containing %q", err, tc.want)
				}
			})
		}
	})
}

// TestClientJWKSURIFailures: a jwks_uri that fails, answers too much or publishes a private
// key authenticates nobody, and a failed fetch is not retried for the next ten seconds.
func TestClientJWKSURIFailures(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		offset := &atomic.Int64{}
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		e := newEnv(t, b, provider.Config{}, provider.WithClock(clock))
		key := newECKey(t, "k1")
		private, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.priv, KeyID: "k1", Use: "sig"}}})
		if err != nil {
			t.Fatal(err)
		}
		var answer atomic.Value // func(http.ResponseWriter)
		var fetches atomic.Int32
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fetches.Add(1)
			answer.Load().(func(http.ResponseWriter))(w)
		}))
		t.Cleanup(srv.Close)
		pk := e.client(t, provider.ClientSpec{ID: "pk", AuthMethod: "private_key_jwt", JWKSURI: srv.URL,
			GrantTypes: []string{"client_credentials"}})
		for _, step := range []struct {
			name        string
			answer      func(http.ResponseWriter)
			advance     time.Duration
			wantOK      bool
			wantFetches int32
		}{
			{name: "a 500 fails", answer: func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }, wantFetches: 1},
			{name: "within ten seconds the failure is not fetched again", answer: func(w http.ResponseWriter) { _, _ = w.Write(jwksOf(t, key)) }, wantFetches: 1},
			{name: "after ten seconds the set is fetched and verifies", advance: 11 * time.Second, wantOK: true, wantFetches: 2},
			{name: "a document over 64 KiB fails", advance: 2 * time.Hour,
				answer: func(w http.ResponseWriter) {
					_, _ = w.Write([]byte(`{"keys":[],"pad":"` + strings.Repeat("x", 70<<10) + `"}`))
				}, wantFetches: 3},
			{name: "a set with a private key fails", advance: time.Minute,
				answer: func(w http.ResponseWriter) { _, _ = w.Write(private) }, wantFetches: 4},
			{name: "a redirect is not followed and fails", advance: time.Minute,
				answer: func(w http.ResponseWriter) {
					if fetches.Load() == 5 {
						w.Header().Set("Location", srv.URL+"/elsewhere")
						w.WriteHeader(http.StatusFound)
						return
					}
					_, _ = w.Write(jwksOf(t, key))
				}, wantFetches: 5},
		} {
			t.Run(step.name, func(t *testing.T) {
				offset.Add(int64(step.advance))
				if step.answer != nil {
					answer.Store(step.answer)
				}
				a := signWith(t, key.alg, key.priv, key.kid, assertionClaims(pk.ClientID, e.issuer, clock()))
				r := e.call(t, http.MethodPost, "/api/oauth/token", assertionForm(url.Values{"grant_type": {"client_credentials"}}, a), nil)
				if step.wantOK && r.status != http.StatusOK {
					t.Errorf("token: got %s, want 200", r)
				}
				if !step.wantOK {
					wantOAuthError(t, r, http.StatusUnauthorized, "invalid_client")
				}
				if got := fetches.Load(); got != step.wantFetches {
					t.Errorf("fetches: got %d, want %d", got, step.wantFetches)
				}
			})
		}
	})
}

// TestClientAuthMethodChanges: a client registered before the methods existed keeps both
// secret methods until an update pins one; a client_secret_jwt secret rotates like any
// other; a switch to private_key_jwt deletes the secret and a switch back issues a new one.
func TestClientAuthMethodChanges(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		ctx := t.Context()
		grant := url.Values{"grant_type": {"client_credentials"}}
		post := func(c provider.ClientInfo) jsonResponse {
			return e.call(t, http.MethodPost, "/api/oauth/token", with2(with2(grant, "client_id", c.ClientID), "client_secret", c.ClientSecret), nil)
		}
		basic := func(c provider.ClientInfo) jsonResponse { return e.token(t, c, grant) }
		hs := func(c provider.ClientInfo, secret string) jsonResponse {
			a := signWith(t, jose.HS256, []byte(secret), "", assertionClaims(c.ClientID, e.issuer, time.Now()))
			return e.call(t, http.MethodPost, "/api/oauth/token", assertionForm(grant, a), nil)
		}
		wantStatus := func(what string, r jsonResponse, status int) {
			t.Helper()
			if r.status != status {
				t.Errorf("%s: got %s, want %d", what, r, status)
			}
		}

		legacy := e.client(t, provider.ClientSpec{ID: "legacy", GrantTypes: []string{"client_credentials"}})
		row, err := e.store.ClientByID(ctx, legacy.ClientID)
		if err != nil {
			t.Fatal(err)
		}
		row.TokenEndpointAuthMethod = "" // as migration 12 leaves an older client
		if err := e.store.UpdateClient(ctx, row); err != nil {
			t.Fatal(err)
		}
		wantStatus("legacy client, client_secret_basic", basic(legacy), http.StatusOK)
		wantStatus("legacy client, client_secret_post", post(legacy), http.StatusOK)
		method := "client_secret_post"
		if _, err := e.p.UpdateClient(ctx, legacy.ClientID, provider.ClientUpdate{AuthMethod: &method}); err != nil {
			t.Fatal(err)
		}
		wantStatus("pinned to client_secret_post, client_secret_basic", basic(legacy), http.StatusUnauthorized)
		wantStatus("pinned to client_secret_post, client_secret_post", post(legacy), http.StatusOK)

		sj := e.client(t, provider.ClientSpec{ID: "sj", AuthMethod: "client_secret_jwt", GrantTypes: []string{"client_credentials"}})
		wantStatus("client_secret_jwt", hs(sj, sj.ClientSecret), http.StatusOK)
		rotated, err := e.p.RotateClientSecret(ctx, sj.ClientID)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus("client_secret_jwt, the rotated-out secret", hs(sj, sj.ClientSecret), http.StatusUnauthorized)
		wantStatus("client_secret_jwt, the new secret", hs(sj, rotated), http.StatusOK)

		method = "private_key_jwt"
		jwks := jwksOf(t, newECKey(t, "k1"))
		info, err := e.p.UpdateClient(ctx, sj.ClientID, provider.ClientUpdate{AuthMethod: &method, JWKS: &jwks})
		if err != nil || info.ClientSecret != "" || info.AuthMethod != method {
			t.Fatalf("UpdateClient to private_key_jwt: got %+v, %v; want the method and no secret", info, err)
		}
		if _, err := e.p.RotateClientSecret(ctx, sj.ClientID); !errors.Is(err, provider.ErrNoClientSecret) {
			t.Errorf("RotateClientSecret of a private_key_jwt client: got %v, want ErrNoClientSecret", err)
		}
		method = "client_secret_basic"
		info, err = e.p.UpdateClient(ctx, sj.ClientID, provider.ClientUpdate{AuthMethod: &method})
		if err != nil || len(info.ClientSecret) < 32 {
			t.Fatalf("UpdateClient back to client_secret_basic: got %+v, %v; want a new secret", info, err)
		}
		wantStatus("back to client_secret_basic, the old secret", basic(provider.ClientInfo{ClientID: sj.ClientID, ClientSecret: rotated}), http.StatusUnauthorized)
		wantStatus("back to client_secret_basic, the new secret", basic(info), http.StatusOK)
		row, err = e.store.ClientByID(ctx, sj.ClientID)
		if err != nil || len(row.SecretSealed) != 0 {
			t.Errorf("client_secret_basic client: sealed secret %x (%v), want none kept", row.SecretSealed, err)
		}
	})
}

// TestClientAssertionReplayWithinLeeway: an assertion is accepted up to 30 s past its exp
// (clock skew), so its jti is remembered that long too: a replay just after exp is refused.
func TestClientAssertionReplayWithinLeeway(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		offset := &atomic.Int64{}
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		e := newEnvOnStore(t, b.OpenWith(t, storage.WithClock(clock)), func(string) provider.Config { return provider.Config{} },
			provider.WithClock(clock))
		key := newECKey(t, "k1")
		pk := e.client(t, provider.ClientSpec{ID: "pk", AuthMethod: "private_key_jwt", JWKS: jwksOf(t, key),
			GrantTypes: []string{"client_credentials"}})
		a := signWith(t, key.alg, key.priv, key.kid, assertionClaims(pk.ClientID, e.issuer, clock()))
		token := func() jsonResponse {
			return e.call(t, http.MethodPost, "/api/oauth/token", assertionForm(url.Values{"grant_type": {"client_credentials"}}, a), nil)
		}
		if r := token(); r.status != http.StatusOK {
			t.Fatalf("first use: got %s, want 200", r)
		}
		offset.Add(int64(70 * time.Second)) // exp (one minute) passed 10 s ago
		wantOAuthError(t, token(), http.StatusUnauthorized, "invalid_client")
	})
}
