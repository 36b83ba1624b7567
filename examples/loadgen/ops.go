package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The operations, in the order a run measures them. Each later phase uses what earlier ones
// produced: authorize fills a pool of codes, code_exchange spends them and fills a pool of
// token responses, refresh chains some of those, introspection and userinfo use others,
// revocation spends the rest.
const (
	opLogin             = "login"
	opSession           = "session"
	opAuthorize         = "authorize"
	opCodeExchange      = "code_exchange"
	opAuthorizeES256    = "authorize_es256"
	opCodeExchangeES256 = "code_exchange_es256"
	opRefresh           = "refresh"
	opRefreshES256      = "refresh_es256"
	opClientCredentials = "client_credentials"
	opIntrospection     = "introspection"
	opUserinfo          = "userinfo"
	opRevocation        = "revocation"
)

// allOps lists every operation in run order.
var allOps = []string{opLogin, opSession, opAuthorize, opCodeExchange, opAuthorizeES256, opCodeExchangeES256,
	opRefresh, opRefreshES256, opClientCredentials, opIntrospection, opUserinfo, opRevocation}

// opTitles are the operations as the table names them.
var opTitles = map[string]string{
	opLogin:             "password login",
	opSession:           "session check",
	opAuthorize:         "authorize, session present",
	opCodeExchange:      "code exchange (RS256 ID token)",
	opAuthorizeES256:    "authorize, ES256 ID-token client",
	opCodeExchangeES256: "code exchange (ES256 ID token)",
	opRefresh:           "refresh (RS256 ID token)",
	opRefreshES256:      "refresh (ES256 ID token)",
	opClientCredentials: "client_credentials",
	opIntrospection:     "introspection",
	opUserinfo:          "userinfo",
	opRevocation:        "revocation (refresh token)",
}

// client is an OAuth client of the target.
type client struct{ id, secret string }

// target is the provider under load and what the driver needs to speak to it.
type target struct {
	issuer      string
	endpoints   endpoints
	code        client // authorization-code client (RS256 ID tokens)
	codeES256   client // the same with ES256 ID tokens; empty id: those operations are skipped
	cc          client // client_credentials client
	ccScope     string
	redirectURI string
	scope       string
	resource    string // RFC 8707 resource of code and refresh requests, if any
	// loginURL and sessionURL are the provider's password-login and session-check APIs
	// (JSON {email, password}; GET with the session cookie). Empty: the provider logs in only
	// through its interaction pages, which authorize follows once to start a session.
	loginURL, sessionURL string
	email, password      string
	// introspect is which token introspection asks about: "access" or "refresh".
	introspect string
	hc         *http.Client // with the session's cookie jar; stops at the redirect URI
	plain      *http.Client // no cookies, no redirects
}

// endpoints are the provider's, from its discovery document.
type endpoints struct {
	Authorization string `json:"authorization_endpoint"`
	Token         string `json:"token_endpoint"`
	Userinfo      string `json:"userinfo_endpoint"`
	Introspection string `json:"introspection_endpoint"`
	Revocation    string `json:"revocation_endpoint"`
}

// tokens is a token response.
type tokens struct {
	AccessToken  string `json:"access_token"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
}

// codeGrant is a code with the PKCE verifier it was asked with.
type codeGrant struct{ code, verifier string }

// pool is a concurrency-safe stack of what one phase produces for a later one.
type pool[T any] struct {
	mu    sync.Mutex
	items []T
}

func (p *pool[T]) put(v T) { p.mu.Lock(); p.items = append(p.items, v); p.mu.Unlock() }

func (p *pool[T]) take() (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var zero T
	if len(p.items) == 0 {
		return zero, false
	}
	v := p.items[len(p.items)-1]
	p.items = p.items[:len(p.items)-1]
	return v, true
}

// takeN removes and returns n items, or fails when fewer are left.
func (p *pool[T]) takeN(n int) ([]T, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) < n {
		return nil, fmt.Errorf("%d left, %d needed", len(p.items), n)
	}
	out := append([]T(nil), p.items[len(p.items)-n:]...)
	p.items = p.items[:len(p.items)-n]
	return out, nil
}

func (p *pool[T]) len() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.items) }

// newTarget discovers the issuer's endpoints and prepares the HTTP clients.
func newTarget(ctx context.Context, t target, concurrency int) (*target, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: concurrency * 2, MaxConnsPerHost: concurrency * 2}
	jar, _ := cookiejar.New(nil)
	t.plain = &http.Client{Timeout: 30 * time.Second, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.hc = &http.Client{Timeout: 30 * time.Second, Transport: transport, Jar: jar,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), t.redirectURI) {
				return http.ErrUseLastResponse // the code is in the Location: never call the client
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(t.issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, err
	}
	if err := doJSON(t.plain, req, http.StatusOK, &t.endpoints); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	return &t, nil
}

// doJSON sends req and decodes a JSON answer of status want into v (when not nil).
func doJSON(hc *http.Client, req *http.Request, want int, v any) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d: %.200s", req.Method, req.URL.Path, resp.StatusCode, want, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			return fmt.Errorf("%s %s: %w: %.200s", req.Method, req.URL.Path, err, body)
		}
	}
	return nil
}

// postForm posts form to endpoint, authenticating as c with client_secret_post.
func (t *target) postForm(ctx context.Context, endpoint string, c client, form url.Values, want int, v any) error {
	form.Set("client_id", c.id)
	form.Set("client_secret", c.secret)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return doJSON(t.plain, req, want, v)
}

// login posts the password login and returns the response's cookies.
func (t *target) login(ctx context.Context) ([]*http.Cookie, error) {
	body, _ := json.Marshal(map[string]string{"email": t.email, "password": t.password})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.loginURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.plain.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
		return nil, fmt.Errorf("login: status %d, %d cookies", resp.StatusCode, len(resp.Cookies()))
	}
	return resp.Cookies(), nil
}

// startSession leaves a signed-in session in t.hc's cookie jar: by the login API, else by
// one authorization request whose interaction the provider completes itself.
func (t *target) startSession(ctx context.Context) error {
	if t.loginURL != "" {
		cookies, err := t.login(ctx)
		if err != nil {
			return err
		}
		u, _ := url.Parse(t.loginURL)
		t.hc.Jar.SetCookies(u, cookies)
		return nil
	}
	_, err := t.authorize(ctx, t.code)
	return err
}

// sessionCheck asks the session API about the session in the jar.
func (t *target) sessionCheck(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.sessionURL, nil)
	if err != nil {
		return err
	}
	var s struct {
		IsValid bool `json:"isValid"`
	}
	if err := doJSON(t.hc, req, http.StatusOK, &s); err != nil {
		return err
	}
	if !s.IsValid {
		return errors.New("session: isValid false")
	}
	return nil
}

// authorize runs one authorization request with PKCE (S256) for c, following the provider's
// own redirects, and returns the code from the redirect to the client.
func (t *target) authorize(ctx context.Context, c client) (codeGrant, error) {
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	state := rand.Text()
	q := url.Values{
		"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {t.redirectURI}, "scope": {t.scope},
		"state": {state}, "nonce": {rand.Text()},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
	}
	if t.resource != "" {
		q.Set("resource", t.resource)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.endpoints.Authorization+"?"+q.Encode(), nil)
	if err != nil {
		return codeGrant{}, err
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return codeGrant{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	loc, err := resp.Location()
	if err != nil || !strings.HasPrefix(loc.String(), t.redirectURI) {
		return codeGrant{}, fmt.Errorf("authorize ended at %d %s, want a redirect to the client: %.200s", resp.StatusCode, resp.Request.URL.Path, body)
	}
	code := loc.Query().Get("code")
	if code == "" || loc.Query().Get("state") != state {
		return codeGrant{}, fmt.Errorf("authorize redirected without a code or with another state: %s", loc.RawQuery)
	}
	return codeGrant{code: code, verifier: verifier}, nil
}

// exchange redeems a code at the token endpoint.
func (t *target) exchange(ctx context.Context, c client, g codeGrant) (tokens, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {g.code}, "redirect_uri": {t.redirectURI}, "code_verifier": {g.verifier}}
	if t.resource != "" {
		form.Set("resource", t.resource)
	}
	var tok tokens
	if err := t.postForm(ctx, t.endpoints.Token, c, form, http.StatusOK, &tok); err != nil {
		return tok, err
	}
	if tok.AccessToken == "" || tok.IDToken == "" || tok.RefreshToken == "" {
		return tok, errors.New("code exchange: want an access, ID and refresh token")
	}
	return tok, nil
}

// refresh redeems a refresh token; the answer must carry a new access token.
func (t *target) refresh(ctx context.Context, c client, refreshToken string) (tokens, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	if t.resource != "" {
		form.Set("resource", t.resource)
	}
	var tok tokens
	if err := t.postForm(ctx, t.endpoints.Token, c, form, http.StatusOK, &tok); err != nil {
		return tok, err
	}
	if tok.AccessToken == "" {
		return tok, errors.New("refresh: no access token")
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = refreshToken // not rotated
	}
	return tok, nil
}

func (t *target) clientCredentials(ctx context.Context) error {
	form := url.Values{"grant_type": {"client_credentials"}}
	if t.ccScope != "" {
		form.Set("scope", t.ccScope)
	}
	var tok tokens
	if err := t.postForm(ctx, t.endpoints.Token, t.cc, form, http.StatusOK, &tok); err != nil {
		return err
	}
	if tok.AccessToken == "" {
		return errors.New("client_credentials: no access token")
	}
	return nil
}

// introspectToken asks whether token is active; it must be.
func (t *target) introspectToken(ctx context.Context, token string) error {
	var r struct {
		Active bool `json:"active"`
	}
	if err := t.postForm(ctx, t.endpoints.Introspection, t.code, url.Values{"token": {token}}, http.StatusOK, &r); err != nil {
		return err
	}
	if !r.Active {
		return errors.New("introspection: active false")
	}
	return nil
}

func (t *target) userinfo(ctx context.Context, accessToken string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.endpoints.Userinfo, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := doJSON(t.plain, req, http.StatusOK, &claims); err != nil {
		return err
	}
	if claims.Sub == "" {
		return errors.New("userinfo: no sub")
	}
	return nil
}

// revoke revokes a refresh token of client c.
func (t *target) revoke(ctx context.Context, c client, refreshToken string) error {
	return t.postForm(ctx, t.endpoints.Revocation, c,
		url.Values{"token": {refreshToken}, "token_type_hint": {"refresh_token"}}, http.StatusOK, nil)
}
