package provider_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v3"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/dpop"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// dpopKey is a client's DPoP key pair; proof signs proofs with it.
type dpopKey struct {
	priv *ecdsa.PrivateKey
	jkt  string
}

func newDPoPKey(t *testing.T) *dpopKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jkt, err := dpop.Thumbprint(&jose.JSONWebKey{Key: priv.Public()})
	if err != nil {
		t.Fatal(err)
	}
	return &dpopKey{priv: priv, jkt: jkt}
}

// proof is a fresh DPoP proof (RFC 9449 §4.2) for method and target, with ath of
// accessToken and nonce when they are set.
func (k *dpopKey) proof(t *testing.T, method, target, accessToken, nonce string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.priv},
		(&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"jti": randomString(22), "htm": method, "htu": target, "iat": time.Now().Unix()}
	if accessToken != "" {
		claims["ath"] = dpop.AccessTokenHash(accessToken)
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// withDPoP decorates a request with an Authorization header (scheme and token, when token
// is set) and a DPoP header (when proof is set), after basic (client authentication), if any.
func withDPoP(scheme, token, proof string, basic func(*http.Request)) func(*http.Request) {
	return func(r *http.Request) {
		if basic != nil {
			basic(r)
		}
		if token != "" {
			r.Header.Set("Authorization", scheme+" "+token)
		}
		if proof != "" {
			r.Header.Set("DPoP", proof)
		}
	}
}

// authorizationCode signs email in through the hosted pages for rp's client and returns the
// authorization request and its code, not yet exchanged.
func authorizationCode(t *testing.T, e *env, rp *relyingParty, email string, opts ...oauth2.AuthCodeOption) (*authRequest, string) {
	t.Helper()
	ar := rp.start(opts...)
	br := e.browser(t)
	p := br.get(t, ar.String())
	if p.status == http.StatusOK && p.url.Path == e.base+"/login" {
		p = br.login(t, p, email)
	}
	if p.status == http.StatusOK && p.url.Path == e.base+"/consent" {
		p = br.consent(t, p, "allow")
	}
	return ar, wantCode(t, e, ar, callback(t, p, rp.config.RedirectURL))
}

// codeForm is the token request redeeming code of ar for client.
func codeForm(client provider.ClientInfo, ar *authRequest, code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirectURI},
		"client_id": {client.ClientID}, "code_verifier": {ar.verifier}}
}

// wantChallenge asserts r's WWW-Authenticate names scheme and, when set, the error code.
func wantChallenge(t *testing.T, r jsonResponse, scheme, code string) {
	t.Helper()
	got := r.header.Get("WWW-Authenticate")
	if !strings.HasPrefix(got, scheme+" ") || (code != "" && !strings.Contains(got, `error="`+code+`"`)) {
		t.Errorf("WWW-Authenticate: got %q, want the %s scheme with error %q", got, scheme, code)
	}
}

// TestDPoP drives DPoP (RFC 9449) end to end through real HTTP: a public client's code
// exchange with a proof binds its access token (cnf.jkt, token_type DPoP) and its refresh
// token; the bound token opens userinfo and the permission routes with the DPoP scheme and
// a proof, and nowhere as Bearer; a refresh needs a proof by the same key; a confidential
// client's bound token shows cnf at introspection and its refresh token is not bound; a
// client registered with RequireDPoP gets nothing without a proof.
func TestDPoP(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		spa := e.client(t, provider.ClientSpec{ID: "spa", Public: true, FirstParty: true})
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
		tokenURL, userinfoURL := e.issuer+"/api/oauth/token", e.issuer+"/api/oauth/userinfo"
		key, otherKey := newDPoPKey(t), newDPoPKey(t)

		ar, code := authorizationCode(t, e, e.relyingParty(t, spa), alice.Email)
		r := e.call(t, http.MethodPost, "/api/oauth/token", codeForm(spa, ar, code),
			withDPoP("", "", key.proof(t, http.MethodPost, tokenURL, "", ""), nil))
		if r.status != http.StatusOK {
			t.Fatalf("DPoP code exchange: got %s, want 200", r)
		}
		if r.body["token_type"] != "DPoP" {
			t.Errorf("token_type: got %v, want DPoP", r.body["token_type"])
		}
		at, _ := r.body["access_token"].(string)
		refresh, _ := r.body["refresh_token"].(string)
		claims := e.verifyJWT(t, at)
		if cnf, _ := claims["cnf"].(map[string]any); cnf["jkt"] != key.jkt {
			t.Errorf("access token cnf: got %v, want jkt %s", claims["cnf"], key.jkt)
		}

		t.Run("userinfo accepts the bound token with a proof", func(t *testing.T) {
			r := e.call(t, http.MethodGet, "/api/oauth/userinfo", nil,
				withDPoP("DPoP", at, key.proof(t, http.MethodGet, userinfoURL, at, ""), nil))
			if r.status != http.StatusOK || r.body["sub"] != alice.ID {
				t.Fatalf("got %s, want 200 for alice", r)
			}
		})
		t.Run("resource requests with a bad proof are refused", func(t *testing.T) {
			replayed := key.proof(t, http.MethodGet, userinfoURL, at, "")
			if r := e.call(t, http.MethodGet, "/api/oauth/userinfo", nil, withDPoP("DPoP", at, replayed, nil)); r.status != http.StatusOK {
				t.Fatalf("first use: got %s", r)
			}
			for _, c := range []struct {
				name  string
				proof string
			}{
				{"replayed jti", replayed},
				{"missing ath", key.proof(t, http.MethodGet, userinfoURL, "", "")},
				{"wrong htu", key.proof(t, http.MethodGet, e.issuer+"/api/oauth/elsewhere", at, "")},
				{"wrong htm", key.proof(t, http.MethodPost, userinfoURL, at, "")},
				{"no proof", ""},
			} {
				r := e.call(t, http.MethodGet, "/api/oauth/userinfo", nil, withDPoP("DPoP", at, c.proof, nil))
				wantOAuthError(t, r, http.StatusUnauthorized, dpop.CodeInvalidProof)
				wantChallenge(t, r, "DPoP", dpop.CodeInvalidProof)
			}
			// A valid proof by another key than the token's.
			r := e.call(t, http.MethodGet, "/api/oauth/userinfo", nil,
				withDPoP("DPoP", at, otherKey.proof(t, http.MethodGet, userinfoURL, at, ""), nil))
			wantOAuthError(t, r, http.StatusUnauthorized, "invalid_token")
			wantChallenge(t, r, "DPoP", "invalid_token")
		})
		t.Run("the bound token presented as Bearer is refused", func(t *testing.T) {
			r := e.userinfo(t, at)
			wantOAuthError(t, r, http.StatusUnauthorized, "invalid_token")
			wantChallenge(t, r, "DPoP", "invalid_token")
			if _, err := e.p.VerifyAccessToken(context.Background(), at); !errors.Is(err, provider.ErrDPoPRequired) || !errors.Is(err, provider.ErrInvalidToken) {
				t.Errorf("VerifyAccessToken: got %v, want ErrDPoPRequired", err)
			}
			path := "/api/users/" + alice.ID + "/apps/spa/permissions"
			r = e.call(t, http.MethodGet, path, nil, bearer(at))
			if r.status != http.StatusUnauthorized {
				t.Errorf("permission route as Bearer: got %s, want 401", r)
			}
			wantChallenge(t, r, "DPoP", "invalid_token")
			// With the DPoP scheme the token is accepted: alice has no record yet (404).
			r = e.call(t, http.MethodGet, path, nil, withDPoP("DPoP", at, key.proof(t, http.MethodGet, e.issuer+path, at, ""), nil))
			if r.status != http.StatusNotFound {
				t.Errorf("permission route with DPoP: got %s, want 404 (no record)", r)
			}
		})
		t.Run("a bearer token presented with the DPoP scheme is refused", func(t *testing.T) {
			_, plain := e.relyingParty(t, spa).signIn(t, e, e.browser(t), alice.Email)
			if plain.TokenType != "Bearer" {
				t.Fatalf("token_type without a proof: got %q, want Bearer", plain.TokenType)
			}
			r := e.call(t, http.MethodGet, "/api/oauth/userinfo", nil,
				withDPoP("DPoP", plain.AccessToken, key.proof(t, http.MethodGet, userinfoURL, plain.AccessToken, ""), nil))
			wantOAuthError(t, r, http.StatusUnauthorized, "invalid_token")
		})
		t.Run("a confidential client's bound token shows cnf at introspection", func(t *testing.T) {
			ar, code := authorizationCode(t, e, e.relyingParty(t, webapp), alice.Email)
			r := e.call(t, http.MethodPost, "/api/oauth/token", codeForm(webapp, ar, code),
				withDPoP("", "", key.proof(t, http.MethodPost, tokenURL, "", ""), basicAuth(webapp)))
			if r.status != http.StatusOK || r.body["token_type"] != "DPoP" {
				t.Fatalf("DPoP code exchange: got %s, want 200 DPoP", r)
			}
			at, _ := r.body["access_token"].(string)
			got := e.introspect(t, webapp, at)
			if cnf, _ := got["cnf"].(map[string]any); got["active"] != true || got["token_type"] != "DPoP" || cnf["jkt"] != key.jkt {
				t.Errorf("introspection: got %v, want active, token_type DPoP, cnf.jkt %s", got, key.jkt)
			}
			// RFC 9449 §5: a confidential client's refresh token is not bound.
			rt, _ := r.body["refresh_token"].(string)
			r = e.refresh(t, webapp, rt)
			if r.status != http.StatusOK || r.body["token_type"] != "Bearer" {
				t.Errorf("refresh without a proof: got %s, want 200 Bearer", r)
			}
		})
		t.Run("an invalid proof at the token endpoint is invalid_dpop_proof", func(t *testing.T) {
			ar, code := authorizationCode(t, e, e.relyingParty(t, spa), alice.Email)
			for _, proof := range []string{
				key.proof(t, http.MethodPost, e.issuer+"/api/oauth/userinfo", "", ""),
				key.proof(t, http.MethodGet, tokenURL, "", ""),
				"not-a-jwt",
			} {
				r := e.call(t, http.MethodPost, "/api/oauth/token", codeForm(spa, ar, code), withDPoP("", "", proof, nil))
				wantOAuthError(t, r, http.StatusBadRequest, dpop.CodeInvalidProof)
			}
		})
		t.Run("a client that requires DPoP gets no token without a proof", func(t *testing.T) {
			strict := e.client(t, provider.ClientSpec{ID: "strict", Public: true, FirstParty: true, RequireDPoP: true})
			if !strict.RequireDPoP {
				t.Fatalf("ClientInfo.RequireDPoP: got false")
			}
			ar, code := authorizationCode(t, e, e.relyingParty(t, strict), alice.Email)
			r := e.call(t, http.MethodPost, "/api/oauth/token", codeForm(strict, ar, code), nil)
			wantOAuthError(t, r, http.StatusBadRequest, dpop.CodeInvalidProof)
			r = e.call(t, http.MethodPost, "/api/oauth/token", codeForm(strict, ar, code),
				withDPoP("", "", key.proof(t, http.MethodPost, tokenURL, "", ""), nil))
			if r.status != http.StatusOK || r.body["token_type"] != "DPoP" {
				t.Errorf("with a proof: got %s, want 200 DPoP", r)
			}
		})
		t.Run("a code asked for with dpop_jkt is redeemed only with that key", func(t *testing.T) {
			ar, code := authorizationCode(t, e, e.relyingParty(t, webapp), alice.Email, oauth2.SetAuthURLParam("dpop_jkt", key.jkt))
			r := e.call(t, http.MethodPost, "/api/oauth/token", codeForm(webapp, ar, code),
				withDPoP("", "", otherKey.proof(t, http.MethodPost, tokenURL, "", ""), basicAuth(webapp)))
			wantOAuthError(t, r, http.StatusBadRequest, "invalid_grant")
			r = e.call(t, http.MethodPost, "/api/oauth/token", codeForm(webapp, ar, code), basicAuth(webapp))
			wantOAuthError(t, r, http.StatusBadRequest, dpop.CodeInvalidProof)
			r = e.call(t, http.MethodPost, "/api/oauth/token", codeForm(webapp, ar, code),
				withDPoP("", "", key.proof(t, http.MethodPost, tokenURL, "", ""), basicAuth(webapp)))
			if r.status != http.StatusOK || r.body["token_type"] != "DPoP" {
				t.Fatalf("with the key: got %s, want 200 DPoP", r)
			}
			// A confidential client's refresh token stays unbound (RFC 9449 §5).
			rt, _ := r.body["refresh_token"].(string)
			if r := e.refresh(t, webapp, rt); r.status != http.StatusOK || r.body["token_type"] != "Bearer" {
				t.Errorf("refresh without a proof: got %s, want 200 Bearer", r)
			}

			bad := e.relyingParty(t, webapp).start(oauth2.SetAuthURLParam("dpop_jkt", "not a thumbprint"))
			wantAuthError(t, e, bad, callback(t, e.browser(t).get(t, bad.String()), rpRedirectURI), "invalid_request")
		})
		t.Run("RequireScopes accepts the DPoP scheme", func(t *testing.T) {
			api := httptest.NewServer(e.p.RequireScopes("openid")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				at, _ := provider.AccessTokenFromContext(r.Context())
				_ = json.NewEncoder(w).Encode(map[string]string{"jkt": at.DPoPThumbprint})
			})))
			t.Cleanup(api.Close)
			// The API is addressed under the issuer's origin (VerifyRequest); here the test
			// server stands in for it on another port.
			req, _ := http.NewRequest(http.MethodGet, api.URL+"/orders", nil)
			withDPoP("DPoP", at, key.proof(t, http.MethodGet, e.issuer+"/orders", at, ""), nil)(req)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]string
			_ = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || body["jkt"] != key.jkt {
				t.Errorf("got %d %v, want 200 with the key's thumbprint", res.StatusCode, body)
			}
			req, _ = http.NewRequest(http.MethodGet, api.URL+"/orders", nil)
			bearer(at)(req)
			res, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "DPoP ") {
				t.Errorf("as Bearer: got %d %q, want 401 with a DPoP challenge", res.StatusCode, res.Header.Get("WWW-Authenticate"))
			}
		})
		t.Run("the public client's refresh token needs a proof by the same key (last: a refresh revokes the earlier access tokens)", func(t *testing.T) {
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"spa"}}
			r := e.call(t, http.MethodPost, "/api/oauth/token", form,
				withDPoP("", "", otherKey.proof(t, http.MethodPost, tokenURL, "", ""), nil))
			wantOAuthError(t, r, http.StatusBadRequest, "invalid_grant")
			r = e.call(t, http.MethodPost, "/api/oauth/token", form, nil)
			wantOAuthError(t, r, http.StatusBadRequest, dpop.CodeInvalidProof)

			r = e.call(t, http.MethodPost, "/api/oauth/token", form,
				withDPoP("", "", key.proof(t, http.MethodPost, tokenURL, "", ""), nil))
			if r.status != http.StatusOK || r.body["token_type"] != "DPoP" {
				t.Fatalf("refresh with the same key: got %s, want 200 DPoP", r)
			}
			next, _ := r.body["refresh_token"].(string)
			form.Set("refresh_token", next)
			r = e.call(t, http.MethodPost, "/api/oauth/token", form,
				withDPoP("", "", otherKey.proof(t, http.MethodPost, tokenURL, "", ""), nil))
			wantOAuthError(t, r, http.StatusBadRequest, "invalid_grant")
		})
	})
}

// TestDPoPNonces: with server nonces on, a proof without the nonce is answered
// use_dpop_nonce with a DPoP-Nonce header, at the token endpoint (400) and at userinfo (401),
// and the retry with that nonce succeeds.
func TestDPoPNonces(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{DPoP: provider.DPoPConfig{RequireNonce: true}})
		alice := e.user(t, "alice@example.com", "Alice Example")
		spa := e.client(t, provider.ClientSpec{ID: "spa", Public: true, FirstParty: true})
		tokenURL, userinfoURL := e.issuer+"/api/oauth/token", e.issuer+"/api/oauth/userinfo"
		key := newDPoPKey(t)

		ar, code := authorizationCode(t, e, e.relyingParty(t, spa), alice.Email)
		r := e.call(t, http.MethodPost, "/api/oauth/token", codeForm(spa, ar, code),
			withDPoP("", "", key.proof(t, http.MethodPost, tokenURL, "", ""), nil))
		wantOAuthError(t, r, http.StatusBadRequest, dpop.CodeUseNonce)
		nonce := r.header.Get("DPoP-Nonce")
		if nonce == "" {
			t.Fatalf("use_dpop_nonce without a DPoP-Nonce header")
		}
		r = e.call(t, http.MethodPost, "/api/oauth/token", codeForm(spa, ar, code),
			withDPoP("", "", key.proof(t, http.MethodPost, tokenURL, "", nonce), nil))
		if r.status != http.StatusOK || r.body["token_type"] != "DPoP" {
			t.Fatalf("with the nonce: got %s, want 200 DPoP", r)
		}
		at, _ := r.body["access_token"].(string)

		r = e.call(t, http.MethodGet, "/api/oauth/userinfo", nil,
			withDPoP("DPoP", at, key.proof(t, http.MethodGet, userinfoURL, at, ""), nil))
		wantOAuthError(t, r, http.StatusUnauthorized, dpop.CodeUseNonce)
		wantChallenge(t, r, "DPoP", dpop.CodeUseNonce)
		if nonce = r.header.Get("DPoP-Nonce"); nonce == "" {
			t.Fatalf("use_dpop_nonce without a DPoP-Nonce header")
		}
		r = e.call(t, http.MethodGet, "/api/oauth/userinfo", nil,
			withDPoP("DPoP", at, key.proof(t, http.MethodGet, userinfoURL, at, nonce), nil))
		if r.status != http.StatusOK || r.body["sub"] != alice.ID {
			t.Errorf("with the nonce: got %s, want 200", r)
		}
	})
}

// TestDPoPAcrossReplicas: two replicas share one database and the system secret. A nonce
// issued by one is accepted by the other, and a proof spent at one is a replay at the other.
func TestDPoPAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		store := b.Open(t)
		const issuer = "https://login.example"
		secret := strings.Repeat("s", 32)
		replica := func() *httptest.Server {
			p, err := provider.New(provider.Config{Issuer: issuer, Secret: testSecret, JanitorInterval: -1,
				DPoP: provider.DPoPConfig{RequireNonce: true}},
				provider.WithStore(store), provider.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			t.Cleanup(func() { srv.Close(); _ = p.Close() })
			if _, err := p.CreateClient(context.Background(), provider.ClientSpec{ID: "svc", Secret: secret,
				GrantTypes: []string{"client_credentials"}}); err != nil && !strings.Contains(err.Error(), "exists") {
				t.Fatal(err)
			}
			return srv
		}
		a, bSrv := replica(), replica()
		key := newDPoPKey(t)
		post := func(srv *httptest.Server, proof string) (int, map[string]any, http.Header) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/oauth/token",
				strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth("svc", secret)
			req.Header.Set("DPoP", proof)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body map[string]any
			_ = json.NewDecoder(res.Body).Decode(&body)
			return res.StatusCode, body, res.Header
		}
		status, body, header := post(a, key.proof(t, http.MethodPost, issuer+"/api/oauth/token", "", ""))
		nonce := header.Get("DPoP-Nonce")
		if status != http.StatusBadRequest || body["error"] != dpop.CodeUseNonce || nonce == "" {
			t.Fatalf("without a nonce at A: got %d %v (nonce %q), want 400 use_dpop_nonce with a nonce", status, body, nonce)
		}
		proof := key.proof(t, http.MethodPost, issuer+"/api/oauth/token", "", nonce)
		if status, body, _ = post(bSrv, proof); status != http.StatusOK || body["token_type"] != "DPoP" {
			t.Fatalf("A's nonce at B: got %d %v, want 200 DPoP", status, body)
		}
		if status, body, _ = post(a, proof); status != http.StatusBadRequest || body["error"] != dpop.CodeInvalidProof {
			t.Errorf("B's proof again at A: got %d %v, want 400 invalid_dpop_proof", status, body)
		}
	})
}

// TestDPoPUnderMountPath: a provider mounted under the issuer's path (/auth) checks a DPoP
// proof's htu against the URL the client called, the issuer's URL plus the endpoint's path:
// a proof for /auth/api/oauth/userinfo opens userinfo, and one for the path without the
// mount (what the provider's router sees once the prefix is stripped) is refused, at the
// token endpoint, userinfo and the permission routes alike. An API of the embedder's own,
// guarded by RequireScopes, still checks the path it was called at.
func TestDPoPUnderMountPath(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnvAt(t, b.Open(t), mountPath, func(string) provider.Config { return provider.Config{} })
		origin := strings.TrimSuffix(e.issuer, mountPath)
		alice := e.user(t, "alice@example.com", "Alice Example")
		spa := e.client(t, provider.ClientSpec{ID: "spa", Public: true, FirstParty: true})
		key := newDPoPKey(t)
		rp := e.relyingParty(t, spa)

		ar, code := authorizationCode(t, e, rp, alice.Email)
		stripped := e.call(t, http.MethodPost, "/api/oauth/token", codeForm(spa, ar, code),
			withDPoP("", "", key.proof(t, http.MethodPost, origin+"/api/oauth/token", "", ""), nil))
		wantOAuthError(t, stripped, http.StatusBadRequest, dpop.CodeInvalidProof)
		ar, code = authorizationCode(t, e, rp, alice.Email)
		r := e.call(t, http.MethodPost, "/api/oauth/token", codeForm(spa, ar, code),
			withDPoP("", "", key.proof(t, http.MethodPost, e.issuer+"/api/oauth/token", "", ""), nil))
		if r.status != http.StatusOK || r.body["token_type"] != "DPoP" {
			t.Fatalf("code exchange with a proof for %s/api/oauth/token: got %s, want 200 DPoP", e.issuer, r)
		}
		at := r.body["access_token"].(string)

		for _, route := range []struct {
			name, path string
			// status is the answer with a proof for the mounted path.
			status int
		}{
			{"userinfo", "/api/oauth/userinfo", http.StatusOK},
			{"permission record", "/api/users/" + alice.ID + "/apps/spa/permissions", http.StatusNotFound}, // no record yet
		} {
			t.Run(route.name, func(t *testing.T) {
				r := e.call(t, http.MethodGet, route.path, nil, withDPoP("DPoP", at, key.proof(t, http.MethodGet, e.issuer+route.path, at, ""), nil))
				if r.status != route.status {
					t.Errorf("proof for %s%s: got %s, want %d", e.issuer, route.path, r, route.status)
				}
				r = e.call(t, http.MethodGet, route.path, nil, withDPoP("DPoP", at, key.proof(t, http.MethodGet, origin+route.path, at, ""), nil))
				if r.status != http.StatusUnauthorized {
					t.Errorf("proof for %s%s, without the mount path: got %s, want 401", origin, route.path, r)
				}
				wantChallenge(t, r, "DPoP", dpop.CodeInvalidProof)
			})
		}

		t.Run("an API of the embedder checks its own path", func(t *testing.T) {
			api := httptest.NewServer(e.p.RequireScopes("openid")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			t.Cleanup(api.Close)
			for _, c := range []struct {
				htu    string
				status int
			}{{origin + "/orders", http.StatusOK}, {e.issuer + "/orders", http.StatusUnauthorized}} {
				req, _ := http.NewRequest(http.MethodGet, api.URL+"/orders", nil)
				withDPoP("DPoP", at, key.proof(t, http.MethodGet, c.htu, at, ""), nil)(req)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != c.status {
					t.Errorf("proof for %s: got %d, want %d", c.htu, res.StatusCode, c.status)
				}
			}
		})
	})
}
