package provider_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
)

// The fake Google and Facebook: real OAuth 2.0 servers on 127.0.0.1 that implement just
// what Gatehouse calls (authorization redirect, token, userinfo / Graph "me") and check what
// a real one checks (client credentials, redirect URI, single-use codes, the PKCE verifier,
// appsecret_proof). The "user" at the provider is whoever the test set as next; the
// authorization endpoint approves at once (the user is signed in there and consents), or
// denies when told to.

const (
	fakeClientID     = "gatehouse-at-fake"
	fakeClientSecret = "fake-client-secret"
	googleIssuer     = "https://accounts.google.com"
)

// fakeProfile is the account that signs in at the fake provider.
type fakeProfile struct {
	Sub, Email, Name string
	Verified         bool
	// Given, Family, Picture and Locale are the standard claims Google's userinfo adds
	// when set.
	Given, Family, Picture, Locale string
}

type fakeGrant struct {
	profile                       fakeProfile
	challenge, nonce, redirectURI string
}

// fakeUpstream is a fake Google (kind "google") or Facebook (kind "facebook").
type fakeUpstream struct {
	t    *testing.T
	kind string
	srv  *httptest.Server
	key  []byte // signs the fake ID tokens (nobody verifies them, as with Google's)

	mu             sync.Mutex
	next           fakeProfile
	deny           bool
	tokenStatus    int           // when set, the token endpoint fails with it
	hang           chan struct{} // when set, the token endpoint waits for it to close
	codes          map[string]fakeGrant
	tokens         map[string]fakeProfile
	authorizations int
}

func newFakeUpstream(t *testing.T, kind string) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{t: t, kind: kind, key: []byte(randomString(32)),
		codes: map[string]fakeGrant{}, tokens: map[string]fakeProfile{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", f.authorize)
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("GET /profile", f.profile)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.mu.Lock()
		if f.hang != nil {
			close(f.hang)
			f.hang = nil
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

// config is the provider configuration that points Gatehouse at the fake.
func (f *fakeUpstream) config() provider.SocialProvider {
	return provider.SocialProvider{
		ClientID: fakeClientID, ClientSecret: fakeClientSecret,
		AuthURL: f.srv.URL + "/authorize", TokenURL: f.srv.URL + "/token", ProfileURL: f.srv.URL + "/profile",
	}
}

// signIn makes p the account of the next authorization, approved.
func (f *fakeUpstream) signIn(p fakeProfile) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next, f.deny = p, false
}

func (f *fakeUpstream) set(fn func(f *fakeUpstream)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeUpstream) authorizationCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.authorizations
}

func (f *fakeUpstream) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authorizations++
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("client_id") != fakeClientID || !strings.HasSuffix(redirect.Path, "/api/auth/"+f.kind+"/callback") {
		http.Error(w, "bad client_id or redirect_uri", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" {
		http.Error(w, "want response_type=code, state and an S256 code_challenge", http.StatusBadRequest)
		return
	}
	if f.kind == "google" && (q.Get("nonce") == "" || !slices.Contains(strings.Fields(q.Get("scope")), "openid")) {
		http.Error(w, "want a nonce and scope openid", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	if f.deny {
		back.Set("error", "access_denied")
	} else {
		code := randomString(24)
		f.codes[code] = fakeGrant{profile: f.next, challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirectURI: redirect.String()}
		back.Set("code", code)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (f *fakeUpstream) token(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	hang, status := f.hang, f.tokenStatus
	f.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		return
	}
	if status != 0 {
		writeFakeJSON(w, status, map[string]string{"error": "server_error"})
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
	if id != fakeClientID || secret != fakeClientSecret {
		writeFakeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	f.mu.Lock()
	g, found := f.codes[r.PostForm.Get("code")]
	delete(f.codes, r.PostForm.Get("code"))
	f.mu.Unlock()
	if !found || r.PostForm.Get("redirect_uri") != g.redirectURI ||
		oauth2.S256ChallengeFromVerifier(r.PostForm.Get("code_verifier")) != g.challenge {
		writeFakeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	access := randomString(32)
	f.mu.Lock()
	f.tokens[access] = g.profile
	f.mu.Unlock()
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600}
	if f.kind == "google" {
		now := time.Now()
		resp["id_token"] = f.jwt(map[string]any{
			"iss": googleIssuer, "aud": fakeClientID, "sub": g.profile.Sub, "nonce": g.nonce,
			"email": g.profile.Email, "email_verified": g.profile.Verified,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		})
	}
	writeFakeJSON(w, http.StatusOK, resp)
}

func (f *fakeUpstream) profile(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if f.kind == "facebook" {
		token = r.URL.Query().Get("access_token")
		m := hmac.New(sha256.New, []byte(fakeClientSecret))
		m.Write([]byte(token))
		if r.URL.Query().Get("appsecret_proof") != hex.EncodeToString(m.Sum(nil)) {
			writeFakeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad appsecret_proof"})
			return
		}
	}
	f.mu.Lock()
	p, ok := f.tokens[token]
	f.mu.Unlock()
	if !ok {
		writeFakeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	if f.kind == "facebook" {
		me := map[string]any{"id": p.Sub, "name": p.Name}
		if p.Email != "" { // Graph leaves email out when there is no confirmed one
			me["email"] = p.Email
		}
		writeFakeJSON(w, http.StatusOK, me)
		return
	}
	info := map[string]any{"sub": p.Sub, "email": p.Email, "email_verified": p.Verified, "name": p.Name}
	for name, v := range map[string]string{"given_name": p.Given, "family_name": p.Family, "picture": p.Picture, "locale": p.Locale} {
		if v != "" {
			info[name] = v
		}
	}
	writeFakeJSON(w, http.StatusOK, info)
}

// jwt signs claims with HS256 under the fake's own key.
func (f *fakeUpstream) jwt(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(map[string]string{"alg": "HS256", "typ": "JWT"}) + "." + enc(claims)
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func writeFakeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// socialBrowser is a browser that follows redirects between Gatehouse and the given
// servers (the upstream providers) and stops at any other host (the relying party).
func socialBrowser(t *testing.T, e *env, upstreams ...string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{e.srv.Listener.Addr().String()}
	for _, raw := range upstreams {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, u.Host)
	}
	return &browser{base: e.base, client: &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if !slices.Contains(hosts, req.URL.Host) {
				return http.ErrUseLastResponse
			}
			if len(via) >= 15 {
				return errors.New("stopped after 15 redirects")
			}
			return nil
		},
	}}
}
