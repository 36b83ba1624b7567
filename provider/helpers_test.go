package provider_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/net/html"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/internal/testlog"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	// The tests open SQLite databases: link its driver.
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// The end-to-end tests drive a real Provider over HTTP on 127.0.0.1: a "browser" (an
// http.Client with a cookie jar) walks the hosted pages, and a relying party built from
// golang.org/x/oauth2 and coreos/go-oidc requests, exchanges and verifies the tokens.

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	// The relying party's URIs. They are never fetched: the browser stops at any URL
	// outside the provider, so the tests read the redirect itself.
	rpRedirectURI      = "https://rp.example.com/callback"
	rpOtherRedirectURI = "https://rp.example.com/other-callback"
	rpLogoutURI        = "https://rp.example.com/logged-out"
	evilURI            = "https://evil.example.net/callback"

	testPassword = "correct horse battery staple"
)

var testSecret = []byte("gatehouse end-to-end test secret, 32+ bytes")

// forEachBackend runs test once per storage backend (SQLite always, Postgres when its DSN is
// set), each run on a fresh database.
func forEachBackend(t *testing.T, test func(t *testing.T, b storagetest.Backend)) {
	t.Helper()
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { test(t, b) })
	}
}

// env is one provider served over real HTTP, its issuer the server's own URL (plus the
// mount path, for a mounted provider).
type env struct {
	issuer string
	// base is the mount path, the issuer's path: "" at the root, else e.g. "/auth".
	base  string
	p     *provider.Provider
	store *storage.Store
	srv   *httptest.Server
	// back is the relying party's back channel: no cookies, redirects not followed.
	back *http.Client
	// ctx carries back for oauth2 and go-oidc.
	ctx context.Context
}

// newEnv starts a provider on a fresh store of backend b. cfg.Issuer is set to the server's
// URL and cfg.Secret defaults to testSecret; opts (a clock, …) are passed to provider.New.
// The provider's log is shown when t fails.
func newEnv(t *testing.T, b storagetest.Backend, cfg provider.Config, opts ...provider.Option) *env {
	t.Helper()
	return newEnvFor(t, b, func(string) provider.Config { return cfg }, opts...)
}

// newEnvFor is newEnv with the config made by config once the issuer is known.
func newEnvFor(t *testing.T, b storagetest.Backend, config func(issuer string) provider.Config, opts ...provider.Option) *env {
	t.Helper()
	return newEnvAt(t, b.Open(t), "", config, opts...)
}

// newEnvOnStore is newEnvFor on a store the test made (and keeps: the provider gets it
// through WithStore).
func newEnvOnStore(t *testing.T, store *storage.Store, config func(issuer string) provider.Config, opts ...provider.Option) *env {
	t.Helper()
	return newEnvAt(t, store, "", config, opts...)
}

// companyStatus is what the embedding company's own routes answer in a mounted env: any
// request that leaves the provider's mount path ends there, visibly.
const companyStatus = http.StatusTeapot

// newEnvAt is newEnvOnStore for a provider mounted under mount ("" for the root, or a
// path such as "/auth"): the issuer is the server's URL plus mount, and the server is a
// company's mux that hands mount+"/" to the provider, as an embedder does
// (mux.Handle("/auth/", p)), and answers every other path, its own /login among them,
// with companyStatus.
func newEnvAt(t testing.TB, store *storage.Store, mount string, config func(issuer string) provider.Config, opts ...provider.Option) *env {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String() + mount
	cfg := config(issuer)
	cfg.Issuer = issuer
	if cfg.Secret == nil {
		cfg.Secret = testSecret
	}
	logs := &testlog.Buffer{}
	opts = append([]provider.Option{provider.WithStore(store),
		provider.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, opts...)
	p, err := provider.New(cfg, opts...)
	if err != nil {
		_ = srv.Listener.Close()
		t.Fatalf("provider.New: %v", err)
	}
	srv.Config.Handler = p
	if mount != "" {
		company := http.NewServeMux()
		company.Handle(mount+"/", p)
		company.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(companyStatus) })
		srv.Config.Handler = company
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("provider log:\n%s", logs.String())
		}
	})
	back := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	ctx := oidc.ClientContext(context.WithValue(context.Background(), oauth2.HTTPClient, back), back)
	return &env{issuer: cfg.Issuer, base: mount, p: p, store: store, srv: srv, back: back, ctx: ctx}
}

// user creates a verified user whose password is testPassword.
func (e *env) user(t testing.TB, email, name string) provider.UserInfo {
	t.Helper()
	u, err := e.p.CreateUser(context.Background(), provider.UserSpec{
		Email: email, Password: testPassword, Name: name, Verified: true,
	})
	if err != nil {
		t.Fatalf("CreateUser(%s): %v", email, err)
	}
	return u
}

// client registers spec; Name defaults to "Test RP" and RedirectURIs to rpRedirectURI (for
// clients of the authorization_code grant).
func (e *env) client(t testing.TB, spec provider.ClientSpec) provider.ClientInfo {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "Test RP"
	}
	if spec.RedirectURIs == nil && (len(spec.GrantTypes) == 0 || slices.Contains(spec.GrantTypes, "authorization_code")) {
		spec.RedirectURIs = []string{rpRedirectURI}
	}
	c, err := e.p.CreateClient(context.Background(), spec)
	if err != nil {
		t.Fatalf("CreateClient(%s): %v", spec.ID, err)
	}
	return c
}

// ---- The browser ----

// browser is a user agent with a cookie jar. It follows redirects within the provider and
// stops at the first redirect that leaves it (the relying party's redirect URI, a
// post-logout URI, or anywhere else), so the test reads that redirect.
type browser struct {
	client *http.Client
	// base is the provider's mount path (env.base).
	base string
}

func (e *env) browser(t *testing.T) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	host := e.srv.Listener.Addr().String()
	return &browser{base: e.base, client: &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Host != host {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}}
}

// page is what the browser ended on.
type page struct {
	status int
	header http.Header
	url    *url.URL // the request that produced this response, after redirects
	body   string
}

func (b *browser) get(t *testing.T, rawURL string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.do(t, req)
}

func (b *browser) post(t *testing.T, rawURL string, form url.Values) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rawURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(t, req)
}

func (b *browser) do(t *testing.T, req *http.Request) page {
	t.Helper()
	res, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return page{status: res.StatusCode, header: res.Header, url: res.Request.URL, body: string(body)}
}

// String describes the page for failure messages.
func (p page) String() string {
	body := p.body
	if len(body) > 400 {
		body = body[:400] + "…"
	}
	return p.url.String() + " answered " + http.StatusText(p.status) + " Location=" + p.header.Get("Location") + "\n" + body
}

// htmlForm is the first <form> of a page.
type htmlForm struct {
	action  string     // absolute
	method  string     // upper case
	fields  url.Values // named <input> elements
	buttons url.Values // named submit buttons
}

func (p page) form(t *testing.T) htmlForm {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(p.body))
	if err != nil {
		t.Fatalf("parse HTML of %s: %v", p.url, err)
	}
	var form *html.Node
	var find func(n *html.Node)
	find = func(n *html.Node) {
		if form != nil {
			return
		}
		if n.Type == html.ElementNode && n.Data == "form" {
			form = n
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			find(c)
		}
	}
	find(doc)
	if form == nil {
		t.Fatalf("got no <form> on %s", p)
	}
	action, err := p.url.Parse(attr(form, "action"))
	if err != nil {
		t.Fatalf("form action %q: %v", attr(form, "action"), err)
	}
	f := htmlForm{action: action.String(), method: strings.ToUpper(attr(form, "method")), fields: url.Values{}, buttons: url.Values{}}
	var collect func(n *html.Node)
	collect = func(n *html.Node) {
		if n.Type == html.ElementNode && attr(n, "name") != "" {
			switch {
			case n.Data == "button" || (n.Data == "input" && attr(n, "type") == "submit"):
				f.buttons.Add(attr(n, "name"), attr(n, "value"))
			case n.Data == "input":
				f.fields.Add(attr(n, "name"), attr(n, "value"))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			collect(c)
		}
	}
	collect(form)
	return f
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// login fills in and submits the login form that p shows, as email with testPassword.
func (b *browser) login(t *testing.T, p page, email string) page {
	t.Helper()
	if p.status != http.StatusOK || p.url.Path != b.base+"/login" {
		t.Fatalf("got %s, want the login page", p)
	}
	f := p.form(t)
	for _, name := range []string{"csrf_token", "request"} {
		if f.fields.Get(name) == "" {
			t.Fatalf("login form has no %s: %v", name, f.fields)
		}
	}
	f.fields.Set("email", email)
	f.fields.Set("password", testPassword)
	return b.post(t, f.action, f.fields)
}

// consent answers the consent page p with decision, "allow" or "deny".
func (b *browser) consent(t *testing.T, p page, decision string) page {
	t.Helper()
	if p.status != http.StatusOK || p.url.Path != b.base+"/consent" {
		t.Fatalf("got %s, want the consent page", p)
	}
	f := p.form(t)
	if got := f.buttons["decision"]; !slices.Contains(got, decision) {
		t.Fatalf("consent buttons: got %v, want one with decision=%s", got, decision)
	}
	f.fields.Set("decision", decision)
	return b.post(t, f.action, f.fields)
}

// callback asserts that p is a 303 to redirectURI and returns the parameters it carries.
func callback(t *testing.T, p page, redirectURI string) url.Values {
	t.Helper()
	if p.status != http.StatusSeeOther {
		t.Fatalf("got %s, want a 303 to %s", p, redirectURI)
	}
	loc, err := url.Parse(p.header.Get("Location"))
	if err != nil {
		t.Fatalf("Location %q: %v", p.header.Get("Location"), err)
	}
	q := loc.Query()
	loc.RawQuery, loc.Fragment = "", ""
	if loc.String() != redirectURI {
		t.Fatalf("got a redirect to %s, want %s", p.header.Get("Location"), redirectURI)
	}
	return q
}

// wantCode asserts that q is a successful authorization response to ar and returns the code.
func wantCode(t *testing.T, e *env, ar *authRequest, q url.Values) string {
	t.Helper()
	if q.Get("error") != "" {
		t.Fatalf("got error=%s (%s), want a code", q.Get("error"), q.Get("error_description"))
	}
	if got := q.Get("state"); got != ar.state {
		t.Errorf("state: got %q, want %q", got, ar.state)
	}
	if got := q.Get("iss"); got != e.issuer {
		t.Errorf("iss: got %q, want %q", got, e.issuer)
	}
	code := q.Get("code")
	if len(code) < 22 { // 128 bits, base64url
		t.Fatalf("code: got %q, want at least 128 bits", code)
	}
	return code
}

// wantAuthError asserts that q is an error response to ar with one of codes, with state and
// iss, no code, and an error_description within RFC 6749's character set.
func wantAuthError(t *testing.T, e *env, ar *authRequest, q url.Values, codes ...string) {
	t.Helper()
	if got := q.Get("error"); !slices.Contains(codes, got) {
		t.Errorf("error: got %q (%s), want one of %v", got, q.Get("error_description"), codes)
	}
	if got := q.Get("state"); got != ar.state {
		t.Errorf("state: got %q, want %q", got, ar.state)
	}
	if got := q.Get("iss"); got != e.issuer {
		t.Errorf("iss: got %q, want %q", got, e.issuer)
	}
	if q.Has("code") {
		t.Errorf("got a code with error %s", q.Get("error"))
	}
	if d := q.Get("error_description"); strings.ContainsAny(d, "\"\\") {
		t.Errorf("error_description %q contains a double quote or backslash", d)
	}
}

// ---- The relying party ----

// relyingParty is a client application built from golang.org/x/oauth2 and go-oidc.
type relyingParty struct {
	client   provider.ClientInfo
	config   oauth2.Config
	op       *oidc.Provider
	verifier *oidc.IDTokenVerifier
	ctx      context.Context
}

// relyingParty discovers the provider and configures client with scopes (default openid
// profile email offline_access). Confidential clients authenticate with client_secret_basic.
func (e *env) relyingParty(t *testing.T, client provider.ClientInfo, scopes ...string) *relyingParty {
	t.Helper()
	op, err := oidc.NewProvider(e.ctx, e.issuer)
	if err != nil {
		t.Fatalf("oidc.NewProvider: %v", err)
	}
	if len(scopes) == 0 {
		scopes = []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess}
	}
	endpoint := op.Endpoint()
	endpoint.AuthStyle = oauth2.AuthStyleInHeader
	if client.ClientSecret == "" {
		endpoint.AuthStyle = oauth2.AuthStyleInParams
	}
	redirect := ""
	if len(client.RedirectURIs) > 0 {
		redirect = client.RedirectURIs[0]
	}
	return &relyingParty{
		client: client,
		config: oauth2.Config{
			ClientID: client.ClientID, ClientSecret: client.ClientSecret,
			Endpoint: endpoint, RedirectURL: redirect, Scopes: scopes,
		},
		op:       op,
		verifier: op.Verifier(&oidc.Config{ClientID: client.ClientID}),
		ctx:      e.ctx,
	}
}

// authRequest is one authorization request and the secrets the relying party keeps for it.
type authRequest struct {
	state, nonce, verifier string
	url                    *url.URL
}

// start builds an authorization request with a fresh state, nonce and S256 code challenge;
// opts add or override parameters.
func (rp *relyingParty) start(opts ...oauth2.AuthCodeOption) *authRequest {
	ar := &authRequest{state: randomString(24), nonce: randomString(24), verifier: oauth2.GenerateVerifier()}
	opts = append([]oauth2.AuthCodeOption{oidc.Nonce(ar.nonce), oauth2.S256ChallengeOption(ar.verifier)}, opts...)
	u, err := url.Parse(rp.config.AuthCodeURL(ar.state, opts...))
	if err != nil {
		panic(err)
	}
	ar.url = u
	return ar
}

// set changes one parameter of the request; an empty value removes it.
func (ar *authRequest) set(key, value string) *authRequest {
	q := ar.url.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	if key == "state" {
		ar.state = value
	}
	if key == "nonce" {
		ar.nonce = value
	}
	ar.url.RawQuery = q.Encode()
	return ar
}

func (ar *authRequest) String() string { return ar.url.String() }

// tokens is a token response the relying party has verified.
type tokens struct {
	*oauth2.Token
	rawIDToken string
	idToken    *oidc.IDToken
	claims     map[string]any // of the ID token
}

// exchange redeems code with ar's verifier and verifies the tokens.
func (rp *relyingParty) exchange(t *testing.T, ar *authRequest, code string) tokens {
	t.Helper()
	tok, err := rp.config.Exchange(rp.ctx, code, oauth2.VerifierOption(ar.verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return rp.verify(t, tok, ar.nonce)
}

// verify checks the ID token of tok through the JWKS (signature, iss, aud, expiry, at_hash)
// and its nonce.
func (rp *relyingParty) verify(t *testing.T, tok *oauth2.Token, nonce string) tokens {
	t.Helper()
	raw, _ := tok.Extra("id_token").(string)
	idt, claims := rp.verifyIDToken(t, raw, tok.AccessToken)
	if idt.Nonce != nonce {
		t.Errorf("nonce: got %q, want %q", idt.Nonce, nonce)
	}
	return tokens{Token: tok, rawIDToken: raw, idToken: idt, claims: claims}
}

// verifyIDToken checks raw through the JWKS with go-oidc (signature, iss, aud, expiry) and
// its at_hash against accessToken, and returns it with its claims.
func (rp *relyingParty) verifyIDToken(t *testing.T, raw, accessToken string) (*oidc.IDToken, map[string]any) {
	t.Helper()
	if raw == "" {
		t.Fatalf("token response has no id_token")
	}
	idt, err := rp.verifier.Verify(rp.ctx, raw)
	if err != nil {
		t.Fatalf("verify ID token: %v", err)
	}
	if err := idt.VerifyAccessToken(accessToken); err != nil {
		t.Errorf("at_hash: %v", err)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	return idt, claims
}

// signIn runs a whole authorization in browser b: the request, the login form when shown
// (as email), the consent page when shown (allow), and the exchange of the code.
func (rp *relyingParty) signIn(t *testing.T, e *env, b *browser, email string, opts ...oauth2.AuthCodeOption) (*authRequest, tokens) {
	t.Helper()
	ar := rp.start(opts...)
	p := b.get(t, ar.String())
	if p.status == http.StatusOK && p.url.Path == e.base+"/login" {
		p = b.login(t, p, email)
	}
	if p.status == http.StatusOK && p.url.Path == e.base+"/consent" {
		p = b.consent(t, p, "allow")
	}
	code := wantCode(t, e, ar, callback(t, p, rp.config.RedirectURL))
	return ar, rp.exchange(t, ar, code)
}

// ---- Back-channel calls ----

// jsonResponse is an answer of a JSON endpoint.
type jsonResponse struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r jsonResponse) String() string { return http.StatusText(r.status) + " " + r.raw }

// call sends method path on the back channel, with form as the body (POST) or the query
// (GET), decorated by auth, and decodes the JSON answer.
func (e *env) call(t *testing.T, method, path string, form url.Values, auth func(*http.Request)) jsonResponse {
	t.Helper()
	var body io.Reader
	target := e.issuer + path
	if method == http.MethodGet {
		if len(form) > 0 {
			target += "?" + form.Encode()
		}
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if auth != nil {
		auth(req)
	}
	return e.send(t, req)
}

// send sends req on the back channel and decodes the JSON answer.
func (e *env) send(t *testing.T, req *http.Request) jsonResponse {
	t.Helper()
	res, err := e.back.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := jsonResponse{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if len(bytes.TrimSpace(raw)) > 0 && strings.Contains(res.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: decode %q: %v", req.Method, req.URL.Path, raw, err)
		}
	}
	return r
}

func basicAuth(c provider.ClientInfo) func(*http.Request) {
	return func(r *http.Request) {
		r.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	}
}

func bearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

// token posts form to the token endpoint as client (client_secret_basic).
func (e *env) token(t *testing.T, c provider.ClientInfo, form url.Values) jsonResponse {
	t.Helper()
	return e.call(t, http.MethodPost, "/api/oauth/token", form, basicAuth(c))
}

// refresh uses refreshToken as client.
func (e *env) refresh(t *testing.T, c provider.ClientInfo, refreshToken string) jsonResponse {
	t.Helper()
	return e.token(t, c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

// introspect asks about token as client and returns the 200 answer.
func (e *env) introspect(t *testing.T, c provider.ClientInfo, token string) map[string]any {
	t.Helper()
	r := e.call(t, http.MethodPost, "/api/oauth/introspect", url.Values{"token": {token}}, basicAuth(c))
	if r.status != http.StatusOK {
		t.Fatalf("introspect: got %s, want 200", r)
	}
	return r.body
}

// userinfo calls the UserInfo endpoint with GET and a bearer token.
func (e *env) userinfo(t *testing.T, accessToken string) jsonResponse {
	t.Helper()
	return e.call(t, http.MethodGet, "/api/oauth/userinfo", nil, bearer(accessToken))
}

// wantOAuthError asserts an RFC 6749 error answer.
func wantOAuthError(t *testing.T, r jsonResponse, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status: got %d, want %d (%s)", r.status, status, r.raw)
	}
	if got, _ := r.body["error"].(string); got != code {
		t.Errorf("error: got %q, want %q (%s)", got, code, r.raw)
	}
	if d, _ := r.body["error_description"].(string); strings.ContainsAny(d, "\"\\") {
		t.Errorf("error_description %q contains a double quote or backslash", d)
	}
}

// wantRefused asserts that accessToken no longer opens the UserInfo endpoint and that
// introspection calls it inactive.
func wantRefused(t *testing.T, e *env, c provider.ClientInfo, accessToken string) {
	t.Helper()
	if r := e.userinfo(t, accessToken); r.status != http.StatusUnauthorized {
		t.Errorf("userinfo: got %s, want 401", r)
	}
	if got := e.introspect(t, c, accessToken)["active"]; got != false {
		t.Errorf("introspection active: got %v, want false", got)
	}
}

// ---- JWTs ----

// decodeJWT returns the header and claims of a compact JWS without verifying it.
func decodeJWT(t *testing.T, raw string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		t.Fatalf("got a token of %d parts, want a compact JWS: %.40q", len(parts), raw)
	}
	for i, dst := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("JWT part %d: %v", i, err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("JWT part %d: %v", i, err)
		}
	}
	return header, claims
}

// verifyJWT checks raw's signature against the provider's JWKS and returns its claims.
func (e *env) verifyJWT(t *testing.T, raw string) map[string]any {
	t.Helper()
	keys := oidc.NewRemoteKeySet(e.ctx, e.issuer+"/.well-known/jwks.json")
	payload, err := keys.VerifySignature(e.ctx, raw)
	if err != nil {
		t.Fatalf("verify JWT through the JWKS: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// jwks fetches the published key set.
func (e *env) jwks(t *testing.T) []map[string]any {
	t.Helper()
	r := e.call(t, http.MethodGet, "/.well-known/jwks.json", nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("jwks: got %s, want 200", r)
	}
	raw, _ := r.body["keys"].([]any)
	keys := make([]map[string]any, 0, len(raw))
	for _, k := range raw {
		m, _ := k.(map[string]any)
		keys = append(keys, m)
	}
	return keys
}

func kids(keys []map[string]any) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		kid, _ := k["kid"].(string)
		out = append(out, kid)
	}
	return out
}

// unixClaim reads a NumericDate claim.
func unixClaim(t *testing.T, claims map[string]any, name string) int64 {
	t.Helper()
	v, ok := claims[name].(float64)
	if !ok {
		t.Fatalf("claim %s: got %#v, want a number", name, claims[name])
	}
	return int64(v)
}

// wantRecent asserts that a NumericDate claim lies within five minutes of now.
func wantRecent(t *testing.T, claims map[string]any, name string) {
	t.Helper()
	got := time.Unix(unixClaim(t, claims, name), 0)
	if d := time.Since(got); d > 5*time.Minute || d < -5*time.Minute {
		t.Errorf("%s: got %v, want within 5 minutes of now", name, got)
	}
}

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// secondAfter sleeps until the wall clock has moved into a later second than now, so a new
// login gets a later auth_time (NumericDate has whole seconds).
func secondAfter() {
	time.Sleep(1100 * time.Millisecond)
}
