package provider_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

const parPrefix = "urn:ietf:params:oauth:request_uri:"

// push posts form to the pushed authorization request endpoint, decorated by auth.
func (e *env) push(t *testing.T, form url.Values, auth func(*http.Request)) jsonResponse {
	t.Helper()
	return e.call(t, http.MethodPost, "/api/oauth/par", form, auth)
}

// pushed pushes ar as rp's client (client_secret_basic, or client_id in the form for a
// public client) and returns the request_uri of the 201 answer.
func (e *env) pushed(t *testing.T, rp *relyingParty, ar *authRequest) string {
	t.Helper()
	form := ar.url.Query()
	var auth func(*http.Request)
	if rp.client.ClientSecret != "" {
		form.Del("client_id")
		auth = basicAuth(rp.client)
	}
	r := e.push(t, form, auth)
	if r.status != http.StatusCreated {
		t.Fatalf("push: got %s, want 201", r)
	}
	uri, _ := r.body["request_uri"].(string)
	if !strings.HasPrefix(uri, parPrefix) || len(uri) < len(parPrefix)+43 {
		t.Fatalf("request_uri: got %q, want %s and 256 random bits", uri, parPrefix)
	}
	return uri
}

// parURL is the authorization request that brings a pushed request's request_uri.
func (e *env) parURL(clientID, requestURI string) string {
	return e.issuer + "/api/oauth/authorize?" + url.Values{"client_id": {clientID}, "request_uri": {requestURI}}.Encode()
}

// TestPushedAuthorizationRequests drives RFC 9126 through real HTTP: a pushed request
// starts a code flow that survives the login and consent pages, its request_uri works once,
// for its own client, for 60 seconds, and the parameters sent beside it are ignored.
func TestPushedAuthorizationRequests(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		var offset atomic.Int64
		e := newEnv(t, b, provider.Config{}, provider.WithClock(func() time.Time {
			return time.Now().Add(time.Duration(offset.Load()))
		}))
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true,
			RedirectURIs: []string{rpRedirectURI, rpOtherRedirectURI}})
		other := e.client(t, provider.ClientSpec{ID: "other", FirstParty: true})
		third := e.client(t, provider.ClientSpec{ID: "third-party", Name: "Third Party App"})
		spa := e.client(t, provider.ClientSpec{ID: "spa", Public: true, FirstParty: true})
		rp := e.relyingParty(t, webapp)
		signedIn := e.browser(t)
		rp.signIn(t, e, signedIn, alice.Email)

		t.Run("push then authorize then exchange yields verified tokens", func(t *testing.T) {
			ar := rp.start()
			form := ar.url.Query()
			form.Del("client_id")
			r := e.push(t, form, basicAuth(webapp))
			if r.status != http.StatusCreated {
				t.Fatalf("push: got %s, want 201", r)
			}
			if got := r.body["expires_in"]; got != float64(60) {
				t.Errorf("expires_in: got %v, want 60", got)
			}
			if got := r.header.Get("Cache-Control"); !strings.Contains(got, "no-store") {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			uri, _ := r.body["request_uri"].(string)
			br := e.browser(t)
			p := br.login(t, br.get(t, e.parURL(webapp.ClientID, uri)), alice.Email)
			tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
			if tok.claims["sub"] != alice.ID || tok.claims["nonce"] != ar.nonce {
				t.Errorf("ID token: got sub %v nonce %v, want %s and the pushed nonce", tok.claims["sub"], tok.claims["nonce"], alice.ID)
			}
		})

		t.Run("a pushed flow survives the login and consent pages, and its request_uri works once", func(t *testing.T) {
			thirdRP := e.relyingParty(t, third)
			ar := thirdRP.start()
			uri := e.pushed(t, thirdRP, ar)
			br := e.browser(t)
			p := br.get(t, e.parURL(third.ClientID, uri))
			if p.url.Path != "/login" {
				t.Fatalf("got %s, want the login page", p)
			}
			paused := p.url.Query().Get("request")
			// While the flow waits on the login page, its request_uri is spent.
			wantErrorPage(t, e.browser(t).get(t, e.parURL(third.ClientID, uri)), http.StatusBadRequest, "request_uri")
			p = br.consent(t, br.login(t, p, alice.Email), "allow")
			thirdRP.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
			// Neither the request_uri nor the resumed request starts another flow.
			wantErrorPage(t, br.get(t, e.parURL(third.ClientID, uri)), http.StatusBadRequest, "request_uri")
			resumed := br.get(t, e.issuer+"/api/oauth/authorize/resume?"+url.Values{"request": {paused}}.Encode())
			if resumed.status == http.StatusSeeOther || resumed.header.Get("Location") != "" {
				t.Errorf("resuming the finished flow: got %s, want an error page", resumed)
			}
		})

		t.Run("parameters beside request_uri are ignored", func(t *testing.T) {
			ar := rp.start()
			uri := e.pushed(t, rp, ar)
			u := e.parURL(webapp.ClientID, uri) + "&" + url.Values{
				"state": {"attacker-state-0123456789"}, "redirect_uri": {rpOtherRedirectURI},
				"scope": {"openid"}, "code_challenge": {"attacker"}, "response_mode": {"form_post"},
			}.Encode()
			code := wantCode(t, e, ar, callback(t, signedIn.get(t, u), rpRedirectURI))
			tok := rp.exchange(t, ar, code)
			if got := tok.Extra("scope"); got != "openid profile email offline_access" {
				t.Errorf("scope: got %v, want the pushed scopes", got)
			}
		})

		t.Run("the stored request holds no client secret", func(t *testing.T) {
			poster := e.client(t, provider.ClientSpec{ID: "poster", FirstParty: true, AuthMethod: "client_secret_post"})
			ar := e.relyingParty(t, poster).start()
			form := ar.url.Query()
			form.Set("client_secret", poster.ClientSecret)
			r := e.push(t, form, nil)
			if r.status != http.StatusCreated {
				t.Fatalf("push with client_secret_post: got %s, want 201", r)
			}
			uri, _ := r.body["request_uri"].(string)
			row, err := e.store.ConsumePushedRequest(context.Background(), sha256Hex(uri), poster.ClientID, time.Now())
			if err != nil {
				t.Fatalf("ConsumePushedRequest: %v", err)
			}
			if strings.Contains(row.Form, poster.ClientSecret) || strings.Contains(row.Form, "client_secret") {
				t.Errorf("stored form %q holds the client secret", row.Form)
			}
			if row.IDHash == uri || strings.Contains(row.Form, uri) {
				t.Errorf("the request_uri is stored in clear")
			}
		})

		t.Run("a public client pushes with its client_id", func(t *testing.T) {
			spaRP := e.relyingParty(t, spa)
			ar := spaRP.start()
			uri := e.pushed(t, spaRP, ar)
			spaRP.exchange(t, ar, wantCode(t, e, ar, callback(t, signedIn.get(t, e.parURL(spa.ClientID, uri)), rpRedirectURI)))
		})

		t.Run("racing authorizations consume a request_uri once", func(t *testing.T) {
			ar := rp.start()
			uri := e.pushed(t, rp, ar)
			const n = 6
			pages := make([]page, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					pages[i] = signedIn.get(t, e.parURL(webapp.ClientID, uri))
				})
			}
			close(start)
			wg.Wait()
			codes := 0
			for _, p := range pages {
				switch {
				case p.status == http.StatusSeeOther:
					wantCode(t, e, ar, callback(t, p, rpRedirectURI))
					codes++
				case p.status != http.StatusBadRequest:
					t.Errorf("got %s, want a code or a 400 page", p)
				}
			}
			if codes != 1 {
				t.Errorf("got %d codes from %d racing requests, want exactly 1", codes, n)
			}
		})

		t.Run("expired request_uri is refused", func(t *testing.T) {
			uri := e.pushed(t, rp, rp.start())
			offset.Store(int64(61 * time.Second))
			defer offset.Store(0)
			wantErrorPage(t, signedIn.get(t, e.parURL(webapp.ClientID, uri)), http.StatusBadRequest, "request_uri")
		})

		t.Run("another client's request_uri is refused and stays its client's", func(t *testing.T) {
			ar := rp.start()
			uri := e.pushed(t, rp, ar)
			wantErrorPage(t, signedIn.get(t, e.parURL(other.ClientID, uri)), http.StatusBadRequest, "request_uri")
			wantCode(t, e, ar, callback(t, signedIn.get(t, e.parURL(webapp.ClientID, uri)), rpRedirectURI))
		})

		for _, c := range []struct{ name, clientID, requestURI, text string }{
			{"request_uri not issued by us is refused", webapp.ClientID, "https://evil.example.net/request.jwt", "request_uri"},
			{"forged request_uri with our prefix is refused", webapp.ClientID, parPrefix + "forged", "request_uri"},
			{"empty request_uri is refused", webapp.ClientID, "", "request_uri"},
			{"request_uri without client_id is refused", "", parPrefix + "x", "client_id"},
		} {
			t.Run(c.name, func(t *testing.T) {
				q := url.Values{"request_uri": {c.requestURI}}
				if c.clientID != "" {
					q.Set("client_id", c.clientID)
				}
				wantErrorPage(t, signedIn.get(t, e.issuer+"/api/oauth/authorize?"+q.Encode()), http.StatusBadRequest, c.text)
			})
		}

		wrong := webapp
		wrong.ClientSecret = "not-the-secret"
		for _, c := range []struct {
			name   string
			change func(url.Values)
			auth   func(*http.Request)
			path   string
			status int
			code   string
		}{
			{name: "wrong client secret is invalid_client", auth: basicAuth(wrong), status: http.StatusUnauthorized, code: "invalid_client"},
			{name: "no client authentication is invalid_client", change: func(f url.Values) { f.Del("client_id") },
				status: http.StatusUnauthorized, code: "invalid_client"},
			{name: "unknown client is invalid_client", change: func(f url.Values) { f.Set("client_id", "nobody") },
				status: http.StatusUnauthorized, code: "invalid_client"},
			{name: "request_uri sent to the PAR endpoint is invalid_request", change: func(f url.Values) { f.Set("request_uri", parPrefix+"x") },
				auth: basicAuth(webapp), status: http.StatusBadRequest, code: "invalid_request"},
			{name: "client_id of another client than the Basic one is invalid_request", change: func(f url.Values) { f.Set("client_id", other.ClientID) },
				auth: basicAuth(webapp), status: http.StatusBadRequest, code: "invalid_request"},
			{name: "parameters in the query are invalid_request", auth: basicAuth(webapp), path: "?state=in-the-query-0123456789",
				status: http.StatusBadRequest, code: "invalid_request"},
			{name: "unregistered redirect_uri is invalid_request", change: func(f url.Values) { f.Set("redirect_uri", evilURI) },
				auth: basicAuth(webapp), status: http.StatusBadRequest, code: "invalid_request"},
			{name: "missing PKCE is invalid_request", change: func(f url.Values) { f.Del("code_challenge"); f.Del("code_challenge_method") },
				auth: basicAuth(webapp), status: http.StatusBadRequest, code: "invalid_request"},
			{name: "plain PKCE is invalid_request", change: func(f url.Values) { f.Set("code_challenge_method", "plain") },
				auth: basicAuth(webapp), status: http.StatusBadRequest, code: "invalid_request"},
			{name: "unregistered scope is invalid_scope", change: func(f url.Values) { f.Set("scope", "openid admin") },
				auth: basicAuth(webapp), status: http.StatusBadRequest, code: "invalid_scope"},
			{name: "a body over 64 KiB is invalid_request", change: func(f url.Values) { f.Set("login_hint", strings.Repeat("a", 64<<10)) },
				auth: basicAuth(webapp), status: http.StatusBadRequest, code: "invalid_request"},
			{name: "unsupported response_type is refused", change: func(f url.Values) { f.Set("response_type", "token") },
				auth: basicAuth(webapp), status: http.StatusBadRequest, code: "unsupported_response_type"},
		} {
			t.Run("push: "+c.name, func(t *testing.T) {
				form := rp.start().url.Query()
				if c.auth != nil {
					form.Del("client_id")
				}
				if c.change != nil {
					c.change(form)
				}
				req, err := http.NewRequest(http.MethodPost, e.issuer+"/api/oauth/par"+c.path, strings.NewReader(form.Encode()))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if c.auth != nil {
					c.auth(req)
				}
				r := e.send(t, req)
				wantOAuthError(t, r, c.status, c.code)
				if _, ok := r.body["request_uri"]; ok {
					t.Errorf("a refused push got a request_uri: %s", r.raw)
				}
				if c.status == http.StatusUnauthorized && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic realm=") {
					t.Errorf("WWW-Authenticate: got %q, want a Basic challenge", r.header.Get("WWW-Authenticate"))
				}
			})
		}

		t.Run("discovery advertises the endpoint, not required", func(t *testing.T) {
			d := e.call(t, http.MethodGet, "/.well-known/openid-configuration", nil, nil).body
			if got := d["pushed_authorization_request_endpoint"]; got != e.issuer+"/api/oauth/par" {
				t.Errorf("pushed_authorization_request_endpoint: got %v", got)
			}
			if got := d["require_pushed_authorization_requests"]; got != false {
				t.Errorf("require_pushed_authorization_requests: got %v, want false", got)
			}
		})
	})
}

// TestRequirePAR: a client registered with RequirePAR, or every client under
// Config.RequirePAR, gets invalid_request (redirected, its redirect URI being valid) for an
// authorization request it did not push, and completes a pushed one.
func TestRequirePAR(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, c := range []struct {
			name       string
			serverWide bool
		}{{"per client", false}, {"server-wide", true}} {
			t.Run(c.name, func(t *testing.T) {
				e := newEnv(t, b, provider.Config{RequirePAR: c.serverWide})
				alice := e.user(t, "alice@example.com", "Alice Example")
				strict := e.client(t, provider.ClientSpec{ID: "strict", FirstParty: true, RequirePAR: !c.serverWide})
				if strict.RequirePAR == c.serverWide {
					t.Errorf("ClientInfo.RequirePAR: got %v, want %v", strict.RequirePAR, !c.serverWide)
				}
				rp := e.relyingParty(t, strict)
				br := e.browser(t)

				ar := rp.start()
				wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "invalid_request")
				// POSTed, with the browser signed in, the same.
				br.login(t, br.get(t, e.parURL(strict.ClientID, e.pushed(t, rp, rp.start()))), alice.Email)
				ar = rp.start()
				wantAuthError(t, e, ar, callback(t, br.post(t, e.issuer+"/api/oauth/authorize", ar.url.Query()), rpRedirectURI), "invalid_request")

				ar = rp.start()
				rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.get(t, e.parURL(strict.ClientID, e.pushed(t, rp, ar))), rpRedirectURI)))

				d := e.call(t, http.MethodGet, "/.well-known/openid-configuration", nil, nil).body
				if got := d["require_pushed_authorization_requests"]; got != c.serverWide {
					t.Errorf("require_pushed_authorization_requests: got %v, want %v", got, c.serverWide)
				}
				if c.serverWide {
					return
				}
				// A client free of the requirement is unaffected; lifting it frees the client.
				lax := e.client(t, provider.ClientSpec{ID: "lax", FirstParty: true})
				e.relyingParty(t, lax).signIn(t, e, br, alice.Email)
				off := false
				if _, err := e.p.UpdateClient(context.Background(), strict.ClientID, provider.ClientUpdate{RequirePAR: &off}); err != nil {
					t.Fatalf("UpdateClient: %v", err)
				}
				rp.signIn(t, e, br, alice.Email)
			})
		}
	})
}

// TestPushFailuresLimited: failed client authentications at the PAR endpoint count against
// the caller's IP, as at the token endpoint.
func TestPushFailuresLimited(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{PublicAuth: provider.PublicAuthConfig{
			TokenErrorLimit: provider.RateLimit{Limit: 2, Window: time.Minute},
		}})
		webapp := e.client(t, provider.ClientSpec{ID: "webapp"})
		rp := e.relyingParty(t, webapp)
		wrong := webapp
		wrong.ClientSecret = "not-the-secret"
		form := rp.start().url.Query()
		form.Del("client_id")
		for range 2 {
			wantOAuthError(t, e.push(t, form, basicAuth(wrong)), http.StatusUnauthorized, "invalid_client")
		}
		r := e.push(t, form, basicAuth(webapp))
		if r.status != http.StatusTooManyRequests || r.body["error"] != "slow_down" {
			t.Fatalf("push after 2 failures: got %s, want 429 slow_down", r)
		}
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Errorf("Retry-After = %q, want 1..60 seconds", r.header.Get("Retry-After"))
		}
	})
}

// TestPushedAuthorizationRequestUnderMountPath: the PAR endpoint lives under the issuer's
// path like every route, and a pushed flow completes through the mounted hosted pages.
func TestPushedAuthorizationRequestUnderMountPath(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnvAt(t, b.Open(t), "/auth", func(string) provider.Config { return provider.Config{} })
		alice := e.user(t, "alice@example.com", "Alice Example")
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true}))
		d := e.call(t, http.MethodGet, "/.well-known/openid-configuration", nil, nil).body
		if got := d["pushed_authorization_request_endpoint"]; got != e.issuer+"/api/oauth/par" {
			t.Errorf("pushed_authorization_request_endpoint: got %v, want %s/api/oauth/par", got, e.issuer)
		}
		ar := rp.start()
		br := e.browser(t)
		p := br.login(t, br.get(t, e.parURL("webapp", e.pushed(t, rp, ar))), alice.Email)
		rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
	})
}
