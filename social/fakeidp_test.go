package social_test

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v3"
	"github.com/go-jose/go-jose/v3/jwt"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/social"
)

// The fake upstream identity provider: a real OAuth 2.0 / OpenID Connect server on
// 127.0.0.1, the edge of the world for package social. It plays Google (kind google: ID
// tokens from accounts.google.com, userinfo), Facebook (kind facebook: Graph "me" with
// appsecret_proof, no ID token) or any OpenID Connect upstream (kind oidc: discovery,
// JWKS, RS256 ID tokens). It checks what a real one checks: client credentials, redirect
// URI, single-use codes, the PKCE verifier. The authorization endpoint approves at once as
// the profile the test set, or answers with the error the test set.

const (
	idpClientID     = "gatehouse-at-idp"
	idpClientSecret = "idp-client-secret"
	googleIssuer    = "https://accounts.google.com"
)

// idpProfile is the account that signs in at the fake.
type idpProfile struct {
	Sub, Email, Name string
	// Verified is email_verified (ignored by the Facebook kind, which has no such field).
	Verified bool
	// VerifiedClaim, when not nil, is sent as email_verified instead of Verified (some
	// providers send a string).
	VerifiedClaim any
}

// verifiedClaim is the email_verified value p sends.
func (p idpProfile) verifiedClaim() any {
	if p.VerifiedClaim != nil {
		return p.VerifiedClaim
	}
	return p.Verified
}

type idpGrant struct {
	profile                       idpProfile
	challenge, nonce, redirectURI string
}

type fakeIdP struct {
	t    *testing.T
	kind string
	srv  *httptest.Server
	key  *rsa.PrivateKey

	mu sync.Mutex
	// next signs in at the next authorization; authError, when set, is the error that
	// authorization answers instead (access_denied, server_error, …).
	next      idpProfile
	authError string
	// tokenStatus, when set, makes the token endpoint fail with it.
	tokenStatus int
	// claims, when set, changes the claims of the next ID tokens (a wrong nonce, audience…).
	claims func(c map[string]any)
	// signer, when set, signs ID tokens instead of the published key.
	signer *rsa.PrivateKey
	// discoveryDown makes the discovery document answer 503.
	discoveryDown bool
	codes         map[string]idpGrant
	tokens        map[string]idpProfile
	discoveries   int
}

func newFakeIdP(t *testing.T, kind string) *fakeIdP {
	t.Helper()
	f := &fakeIdP{t: t, kind: kind, key: idpKey(), codes: map[string]idpGrant{}, tokens: map[string]idpProfile{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", f.discovery)
	mux.HandleFunc("GET /jwks", f.jwks)
	mux.HandleFunc("GET /authorize", f.authorize)
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("GET /userinfo", f.userinfo)
	mux.HandleFunc("GET /me", f.me)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// idpKey and foreignKey are generated once: RSA key generation dominates the tests' time
// otherwise. Every fake publishes idpKey; foreignKey is one nobody publishes.
var (
	idpKey     = sync.OnceValue(func() *rsa.PrivateKey { return generateRSAKey() })
	foreignKey = sync.OnceValue(func() *rsa.PrivateKey { return generateRSAKey() })
)

func generateRSAKey() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return k
}

// upstream is the social configuration that points Gatehouse at the fake.
func (f *fakeIdP) upstream() social.Upstream {
	u := social.Upstream{Kind: f.kind, ClientID: idpClientID, ClientSecret: idpClientSecret}
	switch f.kind {
	case social.KindOIDC:
		u.Name, u.Issuer = "corp", f.srv.URL
	case social.KindGoogle:
		u.AuthURL, u.TokenURL, u.ProfileURL = f.srv.URL+"/authorize", f.srv.URL+"/token", f.srv.URL+"/userinfo"
	case social.KindFacebook:
		u.AuthURL, u.TokenURL, u.ProfileURL = f.srv.URL+"/authorize", f.srv.URL+"/token", f.srv.URL+"/me"
	}
	return u
}

// set changes the fake's behaviour.
func (f *fakeIdP) set(fn func(f *fakeIdP)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeIdP) discoveryCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.discoveries
}

func (f *fakeIdP) issuer() string {
	if f.kind == social.KindGoogle {
		return googleIssuer
	}
	return f.srv.URL
}

func (f *fakeIdP) discovery(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.discoveries++
	down := f.discoveryDown
	f.mu.Unlock()
	if f.kind != social.KindOIDC || down {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": f.srv.URL, "authorization_endpoint": f.srv.URL + "/authorize", "token_endpoint": f.srv.URL + "/token",
		"userinfo_endpoint": f.srv.URL + "/userinfo", "jwks_uri": f.srv.URL + "/jwks",
		"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
	})
}

func (f *fakeIdP) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &f.key.PublicKey, KeyID: "k1", Algorithm: string(jose.RS256), Use: "sig"},
	}})
}

func (f *fakeIdP) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("client_id") != idpClientID || !strings.HasSuffix(redirect.Path, "/callback") {
		http.Error(w, "bad client_id or redirect_uri", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" {
		http.Error(w, "want response_type=code, state and an S256 code_challenge", http.StatusBadRequest)
		return
	}
	if f.kind != social.KindFacebook && (q.Get("nonce") == "" || !slices.Contains(strings.Fields(q.Get("scope")), "openid")) {
		http.Error(w, "want a nonce and scope openid", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	if f.authError != "" {
		back.Set("error", f.authError)
	} else {
		code := rand.Text()
		f.codes[code] = idpGrant{profile: f.next, challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirectURI: redirect.String()}
		back.Set("code", code)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (f *fakeIdP) token(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	status, claimsFn, signer := f.tokenStatus, f.claims, f.signer
	f.mu.Unlock()
	if status != 0 {
		writeJSON(w, status, map[string]string{"error": "server_error"})
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != idpClientID || secret != idpClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	f.mu.Lock()
	g, found := f.codes[r.PostForm.Get("code")]
	delete(f.codes, r.PostForm.Get("code"))
	f.mu.Unlock()
	if !found || r.PostForm.Get("redirect_uri") != g.redirectURI ||
		oauth2.S256ChallengeFromVerifier(r.PostForm.Get("code_verifier")) != g.challenge {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	access := rand.Text()
	f.mu.Lock()
	f.tokens[access] = g.profile
	f.mu.Unlock()
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600}
	if f.kind != social.KindFacebook {
		now := time.Now()
		claims := map[string]any{
			"iss": f.issuer(), "aud": idpClientID, "sub": g.profile.Sub, "nonce": g.nonce,
			"email": g.profile.Email, "email_verified": g.profile.verifiedClaim(),
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}
		if claimsFn != nil {
			claimsFn(claims)
		}
		if signer == nil {
			signer = f.key
		}
		resp["id_token"] = signJWT(f.t, signer, claims)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (f *fakeIdP) profileOf(token string) (idpProfile, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.tokens[token]
	return p, ok
}

func (f *fakeIdP) userinfo(w http.ResponseWriter, r *http.Request) {
	p, ok := f.profileOf(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if !ok || f.kind == social.KindFacebook {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sub": p.Sub, "email": p.Email, "email_verified": p.verifiedClaim(), "name": p.Name})
}

// me is Facebook's Graph "me": it needs appsecret_proof, and leaves email out when the
// account has no confirmed address.
func (f *fakeIdP) me(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("access_token")
	m := hmac.New(sha256.New, []byte(idpClientSecret))
	m.Write([]byte(token))
	p, ok := f.profileOf(token)
	if !ok || r.URL.Query().Get("appsecret_proof") != hex.EncodeToString(m.Sum(nil)) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad token or appsecret_proof"})
		return
	}
	me := map[string]any{"id": p.Sub, "name": p.Name}
	if p.Email != "" {
		me["email"] = p.Email
	}
	writeJSON(w, http.StatusOK, me)
}

// signJWT signs claims with RS256 under key, key id k1.
func signJWT(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
