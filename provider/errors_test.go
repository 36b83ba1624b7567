package provider_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestAuthorizeErrors: a request whose client and redirect URI check out gets its error at
// the redirect URI (with state and iss); any other gets an error page and no redirect.
func TestAuthorizeErrors(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true,
			RedirectURIs: []string{rpRedirectURI, rpOtherRedirectURI}})
		rp := e.relyingParty(t, webapp)
		signedIn := e.browser(t)
		rp.signIn(t, e, signedIn, alice.Email)

		for _, tc := range []struct {
			name   string
			change func(ar *authRequest)
			// session runs the request in a browser with a session.
			session bool
			// wantErrors are the acceptable error codes of a redirect; none means an error
			// page with wantStatus.
			wantErrors []string
			wantStatus int
		}{
			{
				name:       "plain PKCE is invalid_request",
				change:     func(ar *authRequest) { ar.set("code_challenge", ar.verifier).set("code_challenge_method", "plain") },
				wantErrors: []string{"invalid_request"},
			},
			{
				name:       "PKCE without method is invalid_request",
				change:     func(ar *authRequest) { ar.set("code_challenge_method", "") },
				wantErrors: []string{"invalid_request"},
			},
			{
				name:       "no code_challenge is invalid_request",
				change:     func(ar *authRequest) { ar.set("code_challenge", "").set("code_challenge_method", "") },
				wantErrors: []string{"invalid_request"},
			},
			{
				name:       "no code_challenge is invalid_request even with a session",
				change:     func(ar *authRequest) { ar.set("code_challenge", "").set("code_challenge_method", "") },
				session:    true,
				wantErrors: []string{"invalid_request"},
			},
			{
				name:       "missing response_type is refused",
				change:     func(ar *authRequest) { ar.set("response_type", "") },
				wantErrors: []string{"unsupported_response_type", "invalid_request"},
			},
			{
				name:       "implicit response_type is unsupported",
				change:     func(ar *authRequest) { ar.set("response_type", "id_token token") },
				wantErrors: []string{"unsupported_response_type"},
			},
			{
				name:       "quote and backslash never reach error_description",
				change:     func(ar *authRequest) { ar.set("response_type", `code"\`) },
				wantErrors: []string{"unsupported_response_type"},
			},
			{
				name:       "quote and backslash in prompt never reach error_description",
				change:     func(ar *authRequest) { ar.set("prompt", `bogus"\`) },
				session:    true,
				wantErrors: []string{"invalid_request"},
			},
			{
				name:       "unregistered scope is invalid_scope",
				change:     func(ar *authRequest) { ar.set("scope", "openid admin") },
				wantErrors: []string{"invalid_scope"},
			},
			{
				name:       "unknown client gets an error page",
				change:     func(ar *authRequest) { ar.set("client_id", "no-such-client") },
				wantStatus: http.StatusBadRequest,
			},
			{
				name:       "missing client_id gets an error page",
				change:     func(ar *authRequest) { ar.set("client_id", "") },
				wantStatus: http.StatusBadRequest,
			},
			{
				name:       "unregistered redirect_uri gets an error page",
				change:     func(ar *authRequest) { ar.set("redirect_uri", evilURI) },
				wantStatus: http.StatusBadRequest,
			},
			{
				name:       "unregistered redirect_uri gets an error page even with a session",
				change:     func(ar *authRequest) { ar.set("redirect_uri", evilURI) },
				session:    true,
				wantStatus: http.StatusBadRequest,
			},
			{
				name:       "an unsigned request object is invalid_request_object",
				change:     func(ar *authRequest) { ar.set("request", unsignedRequestObject(ar.state, ar.nonce)) },
				wantErrors: []string{"invalid_request_object"},
			},
			{
				name:       "a request_uri not issued by PAR is request_uri_not_supported",
				change:     func(ar *authRequest) { ar.set("request_uri", rpRedirectURI+"/request.jwt") },
				wantErrors: []string{"request_uri_not_supported"},
			},
			{
				name: "a request object with an unregistered redirect_uri gets an error page",
				change: func(ar *authRequest) {
					ar.set("request", unsignedRequestObject(ar.state, ar.nonce)).set("redirect_uri", evilURI)
				},
				wantStatus: http.StatusBadRequest,
			},
			{
				name:       "registered redirect_uri with an added query gets an error page",
				change:     func(ar *authRequest) { ar.set("redirect_uri", rpRedirectURI+"?foo=bar") },
				wantStatus: http.StatusBadRequest,
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				br := e.browser(t)
				if tc.session {
					br = signedIn
				}
				ar := rp.start()
				tc.change(ar)
				p := br.get(t, ar.String())
				if len(tc.wantErrors) > 0 {
					wantAuthError(t, e, ar, callback(t, p, rpRedirectURI), tc.wantErrors...)
					return
				}
				if p.status != tc.wantStatus || p.header.Get("Location") != "" || p.url.Path != "/api/oauth/authorize" {
					t.Errorf("got %s, want an error page %d without redirect", p, tc.wantStatus)
				}
				if got := p.header.Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
					t.Errorf("Content-Type: got %q, want text/html", got)
				}
			})
		}
	})
}

// TestTokenErrors: a code exchange that fails answers the RFC 6749 error, and a code is
// good for one exchange only.
func TestTokenErrors(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true,
			RedirectURIs: []string{rpRedirectURI, rpOtherRedirectURI}})
		other := e.client(t, provider.ClientSpec{ID: "other", FirstParty: true})
		rp := e.relyingParty(t, webapp)
		br := e.browser(t)
		rp.signIn(t, e, br, alice.Email)

		// newCode authorizes silently (the browser has a session) and returns the request and
		// its code.
		newCode := func(t *testing.T) (*authRequest, string) {
			t.Helper()
			ar := rp.start()
			return ar, wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
		}
		exchange := func(code, verifier string) url.Values {
			return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirectURI}, "code_verifier": {verifier}}
		}
		wrongSecret := webapp
		wrongSecret.ClientSecret = "not-the-secret"
		unknown := provider.ClientInfo{ClientID: "no-such-client", ClientSecret: "whatever"}

		for _, tc := range []struct {
			name       string
			as         provider.ClientInfo
			form       func(ar *authRequest, code string) url.Values
			wantStatus int
			wantError  string
		}{
			{
				name:       "wrong PKCE verifier is invalid_grant",
				as:         webapp,
				form:       func(ar *authRequest, code string) url.Values { return exchange(code, oauth2.GenerateVerifier()) },
				wantStatus: http.StatusBadRequest, wantError: "invalid_grant",
			},
			{
				name: "missing PKCE verifier is invalid_grant",
				as:   webapp,
				form: func(ar *authRequest, code string) url.Values {
					f := exchange(code, "")
					f.Del("code_verifier")
					return f
				},
				wantStatus: http.StatusBadRequest, wantError: "invalid_grant",
			},
			{
				name: "redirect_uri other than the authorization request's is invalid_grant",
				as:   webapp,
				form: func(ar *authRequest, code string) url.Values {
					f := exchange(code, ar.verifier)
					f.Set("redirect_uri", rpOtherRedirectURI)
					return f
				},
				wantStatus: http.StatusBadRequest, wantError: "invalid_grant",
			},
			{
				name:       "code of another client is invalid_grant",
				as:         other,
				form:       func(ar *authRequest, code string) url.Values { return exchange(code, ar.verifier) },
				wantStatus: http.StatusBadRequest, wantError: "invalid_grant",
			},
			{
				name:       "unknown code is invalid_grant",
				as:         webapp,
				form:       func(ar *authRequest, code string) url.Values { return exchange(code+"x", ar.verifier) },
				wantStatus: http.StatusBadRequest, wantError: "invalid_grant",
			},
			{
				name:       "wrong client secret is invalid_client",
				as:         wrongSecret,
				form:       func(ar *authRequest, code string) url.Values { return exchange(code, ar.verifier) },
				wantStatus: http.StatusUnauthorized, wantError: "invalid_client",
			},
			{
				name:       "unknown client is invalid_client",
				as:         unknown,
				form:       func(ar *authRequest, code string) url.Values { return exchange(code, ar.verifier) },
				wantStatus: http.StatusUnauthorized, wantError: "invalid_client",
			},
			{
				name: "password grant is not offered",
				as:   webapp,
				form: func(*authRequest, string) url.Values {
					return url.Values{"grant_type": {"password"}, "username": {alice.Email}, "password": {testPassword}}
				},
				wantStatus: http.StatusBadRequest, wantError: "unsupported_grant_type",
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ar, code := newCode(t)
				r := e.token(t, tc.as, tc.form(ar, code))
				wantOAuthError(t, r, tc.wantStatus, tc.wantError)
				if r.body["access_token"] != nil {
					t.Errorf("an error answer carries an access token: %s", r.raw)
				}
			})
		}

		t.Run("reused code is invalid_grant and revokes the first tokens", func(t *testing.T) {
			ar, code := newCode(t)
			first := rp.exchange(t, ar, code)
			wantOAuthError(t, e.token(t, webapp, exchange(code, ar.verifier)), http.StatusBadRequest, "invalid_grant")
			wantRefused(t, e, webapp, first.AccessToken)
			wantOAuthError(t, e.refresh(t, webapp, first.RefreshToken), http.StatusBadRequest, "invalid_grant")
		})
	})
}

func TestExpiredCode(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		// fosite checks code expiry against the wall clock, so a short lifespan and a real
		// wait are what test it.
		e := newEnv(t, b, provider.Config{AuthorizeCodeLifespan: time.Second})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
		rp := e.relyingParty(t, webapp)
		br := e.browser(t)
		ar := rp.start()
		code := wantCode(t, e, ar, callback(t, br.login(t, br.get(t, ar.String()), alice.Email), rpRedirectURI))
		time.Sleep(1500 * time.Millisecond)
		r := e.token(t, webapp, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {rpRedirectURI}, "code_verifier": {ar.verifier}})
		wantOAuthError(t, r, http.StatusBadRequest, "invalid_grant")
	})
}

// unsignedRequestObject is an alg "none" request object (OpenID Connect Core §6.1) carrying
// state and nonce, as the conformance suite sends it.
func unsignedRequestObject(state, nonce string) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]string{"state": state, "nonce": nonce})
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "."
}
