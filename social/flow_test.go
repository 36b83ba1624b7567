package social_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/social"
)

// TestResumeAndReturnTo: login checks `request` and `return_to` before it sends the
// browser anywhere; the callback hands the host the paused request to resume (and then
// no return URL), else the checked return URL.
func TestResumeAndReturnTo(t *testing.T) {
	t.Parallel()
	const registered = "https://app.example/after-login"
	profile := idpProfile{Sub: "s", Email: "erin@example.com", Verified: true}
	cases := []struct {
		name, query string
		// refused: the login answers this status before any redirect (0: it goes on).
		refused int
		// token and returnTo are what the host is asked to resume.
		token, returnTo string
	}{
		{"nothing", "", 0, "", ""},
		{"paused request", "request=req-1", 0, "req-1", ""},
		{"paused request and return_to: the request wins", "request=req-1&return_to=%2Faccount", 0, "req-1", ""},
		{"path on our origin", "return_to=%2Faccount%3Ftab%3D2", 0, "", "/account?tab=2"},
		{"absolute URL on our origin", "return_to=ISSUER%2Faccount", 0, "", "ISSUER/account"},
		{"registered redirect URI", "return_to=" + url.QueryEscape(registered), 0, "", registered},
		{"unknown paused request", "request=gone", http.StatusBadRequest, "", ""},
		{"unregistered absolute URL", "return_to=" + url.QueryEscape("https://evil.example/"), http.StatusBadRequest, "", ""},
		{"scheme-relative URL", "return_to=" + url.QueryEscape("//evil.example/x"), http.StatusBadRequest, "", ""},
		{"backslash path", "return_to=" + url.QueryEscape(`/\evil.example`), http.StatusBadRequest, "", ""},
		{"line break", "return_to=" + url.QueryEscape("/a\r\nSet-Cookie: x=1"), http.StatusBadRequest, "", ""},
		{"javascript URL", "return_to=" + url.QueryEscape("javascript:alert(1)"), http.StatusBadRequest, "", ""},
		{"userinfo on our host", "return_to=" + url.QueryEscape("http://evil@HOST/"), http.StatusBadRequest, "", ""},
		{"over 1024 bytes", "return_to=%2F" + strings.Repeat("a", 1024), http.StatusBadRequest, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, social.KindGoogle)
			e.host.set(func(h *fakeHost) {
				h.paused["req-1"] = true
				h.redirects[registered] = true
			})
			issuer := mustParse(t, e.url)
			query := strings.ReplaceAll(c.query, "ISSUER", url.QueryEscape(e.url))
			query = strings.ReplaceAll(query, "HOST", issuer.Host)
			returnTo := strings.ReplaceAll(c.returnTo, "ISSUER", e.url)
			b := newBrowser(t)
			if c.refused != 0 {
				p := b.get(t, e.url+"/api/auth/google/login?"+query)
				wantErrorPage(t, p, c.refused)
				if e.stateCookieOf(t, b) != nil {
					t.Error("a refused login set the state cookie")
				}
				return
			}
			if p := e.signIn(t, b, social.KindGoogle, query, profile); p.status != http.StatusOK {
				t.Fatalf("got %d %q", p.status, p.body)
			}
			got, _ := e.host.last()
			if got.token != c.token || got.returnTo != returnTo {
				t.Errorf("host asked to resume token %q, return to %q; want %q, %q", got.token, got.returnTo, c.token, returnTo)
			}
		})
	}
}

// unavailable is a store failure that says it is temporary (httpjson.Unavailable).
type unavailable struct{ error }

func (unavailable) Unavailable() bool { return true }

// TestHostFailures: a failure of the host's store while checking the request reaches the
// host's error page as itself, so the page tells a temporary failure (503, with the
// Retry-After and logging package ui gives it) from a broken store (500).
func TestHostFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		err    error
		query  string
		status int
	}{
		{"paused request, store unavailable", unavailable{errors.New("connection refused")}, "request=req-1", http.StatusServiceUnavailable},
		{"return_to, store unavailable", unavailable{errors.New("connection refused")}, "return_to=" + url.QueryEscape("https://app.example/"), http.StatusServiceUnavailable},
		{"paused request, store broken", errors.New("disk I/O error"), "request=req-1", http.StatusInternalServerError},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, social.KindGoogle)
			e.host.set(func(h *fakeHost) { h.failWith = c.err })
			p := newBrowser(t).get(t, e.url+"/api/auth/google/login?"+c.query)
			wantErrorPage(t, p, c.status)
			if got := e.host.lastPageError(); !errors.Is(got, c.err) {
				t.Errorf("error page answered %v, want %v", got, c.err)
			}
		})
	}
}

// TestUpstreamFailures: a provider that denies, fails or answers something that does not
// verify sends the browser back to the login page (keeping the paused request) with a
// message code; nothing is signed in or created, and a failure (not a denial) is logged.
func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	profile := idpProfile{Sub: "s", Email: "fay@example.com", Verified: true}
	otherKey := func(f *fakeIdP) { f.signer = foreignKey() }
	claim := func(name string, v any) func(f *fakeIdP) {
		return func(f *fakeIdP) { f.claims = func(c map[string]any) { c[name] = v } }
	}
	cases := []struct {
		name   string
		kind   string
		break_ func(f *fakeIdP)
		// tamper changes the callback URL.
		tamper func(cb *url.URL)
		code   string
	}{
		{"denied", social.KindOIDC, func(f *fakeIdP) { f.authError = "access_denied" }, nil, "denied"},
		{"authorization error", social.KindGoogle, func(f *fakeIdP) { f.authError = "server_error" }, nil, "upstream"},
		{"token endpoint fails", social.KindFacebook, func(f *fakeIdP) { f.tokenStatus = http.StatusInternalServerError }, nil, "upstream"},
		{"no code", social.KindOIDC, nil, func(cb *url.URL) {
			q := cb.Query()
			q.Del("code")
			cb.RawQuery = q.Encode()
		}, "upstream"},
		{"code not the provider's", social.KindGoogle, nil, func(cb *url.URL) {
			q := cb.Query()
			q.Set("code", "forged")
			cb.RawQuery = q.Encode()
		}, "upstream"},
		{"OIDC ID token signed by another key", social.KindOIDC, otherKey, nil, "upstream"},
		{"OIDC ID token with another nonce", social.KindOIDC, claim("nonce", "other"), nil, "upstream"},
		{"OIDC ID token for another client", social.KindOIDC, claim("aud", "someone-else"), nil, "upstream"},
		{"OIDC ID token expired", social.KindOIDC, claim("exp", 1), nil, "upstream"},
		{"Google ID token with another nonce", social.KindGoogle, claim("nonce", "other"), nil, "upstream"},
		{"Google ID token of another issuer", social.KindGoogle, claim("iss", "https://evil.example"), nil, "upstream"},
		{"Google ID token for another client", social.KindGoogle, claim("aud", "someone-else"), nil, "upstream"},
		{"Google userinfo of another subject", social.KindGoogle, claim("sub", "someone-else"), nil, "upstream"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, c.kind)
			e.host.set(func(h *fakeHost) { h.paused["req-1"] = true })
			f := e.idps[c.kind]
			f.set(func(f *fakeIdP) {
				f.next = profile
				if c.break_ != nil {
					c.break_(f)
				}
			})
			b := newBrowser(t)
			path := "/api/auth/" + c.kind + "/login?request=req-1"
			if c.kind == social.KindOIDC {
				path = "/api/auth/oidc/corp/login?request=req-1"
			}
			cb := mustParse(t, authorize(t, b, e.login(t, b, path)))
			if c.tamper != nil {
				c.tamper(cb)
			}
			wantLoginPage(t, b.get(t, cb.String()), c.code, "req-1")
			if e.host.count() != 0 || len(e.store.snapshot().users) != 0 {
				t.Errorf("a failed login signed in (%d logins, %d users)", e.host.count(), len(e.store.snapshot().users))
			}
			if logged := e.logged(); (c.code == "upstream") != strings.Contains(logged, "provider failed") {
				t.Errorf("log %q; want a warning exactly for a provider failure", logged)
			}
		})
	}
}

// TestGoogleIssuerForms: Google's ID tokens carry either form of its issuer; both sign in.
func TestGoogleIssuerForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.KindGoogle)
	e.idps[social.KindGoogle].set(func(f *fakeIdP) {
		f.claims = func(c map[string]any) { c["iss"] = "accounts.google.com" }
	})
	if p := e.signIn(t, newBrowser(t), social.KindGoogle, "", idpProfile{Sub: "g", Email: "gus@example.com", Verified: true}); p.status != http.StatusOK {
		t.Fatalf("iss accounts.google.com: got %d %q (location %q)", p.status, p.body, p.location)
	}
}

// TestDiscoveryFailureIsNotRemembered: an OpenID Connect upstream whose discovery fails
// sends the login back to the login page; the next login discovers again and works, and
// later ones use what was discovered.
func TestDiscoveryFailureIsNotRemembered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.KindOIDC)
	f := e.idps[social.KindOIDC]
	f.set(func(f *fakeIdP) { f.discoveryDown = true })
	e.host.set(func(h *fakeHost) { h.paused["req-1"] = true })
	wantLoginPage(t, newBrowser(t).get(t, e.url+"/api/auth/oidc/corp/login?request=req-1"), "upstream", "req-1")
	before := f.discoveryCount()
	f.set(func(f *fakeIdP) { f.discoveryDown = false })
	profile := idpProfile{Sub: "s", Email: "gil@example.com", Verified: true}
	for i := range 2 {
		if p := e.signIn(t, newBrowser(t), social.KindOIDC, "", profile); p.status != http.StatusOK {
			t.Fatalf("sign-in %d after discovery recovered: got %d %q", i+1, p.status, p.body)
		}
	}
	if n := f.discoveryCount() - before; n != 1 {
		t.Errorf("discovered %d times after the failure, want once", n)
	}
}

// TestEmailVerifiedClaim: only email_verified true, as a boolean or the string "true" in
// any case, counts as verified.
func TestEmailVerifiedClaim(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		claim    any
		verified bool
	}{
		{true, true}, {"true", true}, {"TRUE", true},
		{false, false}, {"false", false}, {"yes", false}, {1, false}, {"", false},
	} {
		t.Run(fmt.Sprint(c.claim), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, social.KindOIDC)
			p := e.signIn(t, newBrowser(t), social.KindOIDC, "", idpProfile{Sub: "s", Email: "hal@example.com", VerifiedClaim: c.claim})
			if c.verified && p.status != http.StatusOK {
				t.Errorf("got %d to %q, want the login completed", p.status, p.location)
			}
			if !c.verified {
				wantLoginPage(t, p, "email_unverified", "")
			}
		})
	}
}

// TestAuthorizationRequest: login sends the browser to the provider's authorization
// endpoint with the client id, the exact callback, the state, an S256 PKCE challenge, the
// configured or default scopes, and a nonce for every provider that issues ID tokens.
func TestAuthorizationRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.KindGoogle, social.KindFacebook, social.KindOIDC)
	for kind, c := range map[string]struct {
		path, callback, scope string
		nonce                 bool
	}{
		social.KindGoogle:   {"/api/auth/google/login", "/api/auth/google/callback", "openid email profile", true},
		social.KindFacebook: {"/api/auth/facebook/login", "/api/auth/facebook/callback", "email", false},
		social.KindOIDC:     {"/api/auth/oidc/corp/login", "/api/auth/oidc/corp/callback", "openid email profile", true},
	} {
		at := e.login(t, newBrowser(t), c.path)
		q := at.Query()
		if at.Scheme+"://"+at.Host+at.Path != e.idps[kind].srv.URL+"/authorize" {
			t.Errorf("%s: authorization endpoint %s", kind, at)
		}
		if q.Get("client_id") != idpClientID || q.Get("redirect_uri") != e.url+c.callback || q.Get("response_type") != "code" ||
			len(q.Get("state")) != 43 || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 {
			t.Errorf("%s: authorization request %v", kind, q)
		}
		if got := strings.ReplaceAll(q.Get("scope"), ",", " "); got != c.scope {
			t.Errorf("%s: scope %q, want %q", kind, got, c.scope)
		}
		if (q.Get("nonce") != "") != c.nonce || (c.nonce && len(q.Get("nonce")) != 43) {
			t.Errorf("%s: nonce %q, want one: %v", kind, q.Get("nonce"), c.nonce)
		}
	}
}

// failingReader is a randomness source that has run dry.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy exhausted") }

// TestNoRandomnessNoLogin: without randomness for the state, login answers a 500 carrying
// the cause (which the host's error page logs) and sets no cookie.
func TestNoRandomnessNoLogin(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, []social.Option{social.WithRandom(failingReader{})}, social.KindGoogle)
	b := newBrowser(t)
	wantErrorPage(t, b.get(t, e.url+"/api/auth/google/login"), http.StatusInternalServerError)
	if got := e.host.lastPageError(); e.stateCookieOf(t, b) != nil || got == nil || !strings.Contains(got.Error(), "entropy exhausted") {
		t.Errorf("cookie %v, error %v; want no cookie and the cause on the error page", e.stateCookieOf(t, b), got)
	}
}
