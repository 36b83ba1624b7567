package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Cookie names of the application's own sessions.
const (
	sessionCookie = "rp-session"
	flowCookie    = "rp-login-flow"
)

// app is the relying party: its OAuth 2.0 configuration, the ID token verifier and the
// logged-in users' sessions (in memory: this is a demo of one process).
type app struct {
	cfg      config
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	client   *http.Client // for Gatehouse's APIs
	logger   *slog.Logger

	mu       sync.Mutex
	flows    map[string]*loginFlow   // by the flow cookie
	sessions map[string]*userSession // by the session cookie
}

// loginFlow is what /login keeps for /callback: state, nonce and the PKCE verifier.
type loginFlow struct {
	state, nonce, verifier string
	started                time.Time
}

// userSession is a logged-in user with the tokens Gatehouse issued for them.
type userSession struct {
	UserID, Name, Email string // exported for the page template
	token               *oauth2.Token
}

// permission is the part of Gatehouse's permission record the application uses.
type permission struct {
	Status    string `json:"status"`
	Role      string `json:"role"`
	HasAccess bool   `json:"hasAccess"`
	AppName   string `json:"appName"`
}

// newApp discovers the issuer and returns the application. client makes every call to
// Gatehouse.
func newApp(ctx context.Context, cfg config, client *http.Client, logger *slog.Logger) (*app, error) {
	ctx = oidc.ClientContext(ctx, client)
	op, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", cfg.Issuer, err)
	}
	endpoint := op.Endpoint()
	endpoint.AuthStyle = oauth2.AuthStyleInHeader
	return &app{
		cfg: cfg,
		oauth: oauth2.Config{
			ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: endpoint,
			RedirectURL: cfg.BaseURL + "/callback",
			Scopes:      []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess},
		},
		verifier: op.Verifier(&oidc.Config{ClientID: cfg.ClientID}),
		client:   client,
		logger:   logger,
		flows:    map[string]*loginFlow{},
		sessions: map[string]*userSession{},
	}, nil
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.home)
	mux.HandleFunc("GET /login", a.login)
	mux.HandleFunc("GET /callback", a.callback)
	mux.HandleFunc("POST /logout", a.logout)
	return mux
}

// login starts the authorization code flow with PKCE (S256), a state and a nonce.
func (a *app) login(w http.ResponseWriter, r *http.Request) {
	flow := &loginFlow{state: randomString(), nonce: randomString(), verifier: oauth2.GenerateVerifier(), started: time.Now()}
	id := randomString()
	a.mu.Lock()
	for k, f := range a.flows { // forget abandoned logins
		if time.Since(f.started) > 10*time.Minute {
			delete(a.flows, k)
		}
	}
	a.flows[id] = flow
	a.mu.Unlock()
	a.setCookie(w, flowCookie, id, 600)
	http.Redirect(w, r, a.oauth.AuthCodeURL(flow.state, oidc.Nonce(flow.nonce), oauth2.S256ChallengeOption(flow.verifier)), http.StatusFound)
}

// callback finishes the login: it checks the state, redeems the code with the PKCE
// verifier, verifies the ID token and its nonce, and starts a session.
func (a *app) callback(w http.ResponseWriter, r *http.Request) {
	flow := a.takeFlow(r)
	a.setCookie(w, flowCookie, "", -1)
	q := r.URL.Query()
	switch {
	case flow == nil || q.Get("state") != flow.state:
		http.Error(w, "login expired or state mismatch; start again at /login", http.StatusBadRequest)
		return
	case q.Get("error") != "":
		http.Error(w, "login failed: "+q.Get("error")+" "+q.Get("error_description"), http.StatusForbidden)
		return
	}
	ctx := oidc.ClientContext(context.WithValue(r.Context(), oauth2.HTTPClient, a.client), a.client)
	tok, err := a.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(flow.verifier))
	if err != nil {
		a.fail(w, "exchange the authorization code", err)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := a.verifier.Verify(ctx, raw)
	if err == nil && idt.Nonce != flow.nonce {
		err = errors.New("nonce mismatch")
	}
	if err != nil {
		a.fail(w, "verify the ID token", err)
		return
	}
	var claims struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	if err := idt.Claims(&claims); err != nil {
		a.fail(w, "read the ID token", err)
		return
	}
	id := randomString()
	a.mu.Lock()
	a.sessions[id] = &userSession{UserID: idt.Subject, Name: claims.Name, Email: claims.Email, token: tok}
	a.mu.Unlock()
	a.setCookie(w, sessionCookie, id, 0)
	http.Redirect(w, r, "/", http.StatusFound)
}

// home shows the user and their permission for this application. When the record is
// missing or revoked it asks Gatehouse for access first, so the page then shows the
// pending request.
func (a *app) home(w http.ResponseWriter, r *http.Request) {
	sess := a.session(r)
	if sess == nil {
		a.render(w, pageData{})
		return
	}
	ctx := context.WithValue(r.Context(), oauth2.HTTPClient, a.client)
	perm, status, err := a.permissionCall(ctx, sess, http.MethodGet, "permissions", nil)
	requested := false
	if err == nil && (status == http.StatusNotFound || (perm != nil && perm.Status == "revoked")) {
		body := map[string]string{"email": sess.Email, "name": sess.Name}
		var res struct {
			Permission permission `json:"permission"`
		}
		status, err = a.callJSON(ctx, sess, http.MethodPost, "request-access", body, &res)
		switch {
		case err == nil && status < 300:
			perm, requested = &res.Permission, status == http.StatusCreated
		case err == nil && status == http.StatusConflict: // approved meanwhile: read it again
			perm, status, err = a.permissionCall(ctx, sess, http.MethodGet, "permissions", nil)
		}
	}
	if err == nil && perm == nil {
		err = fmt.Errorf("gatehouse answered %d", status)
	}
	if errors.Is(err, errLoggedOut) {
		a.forget(w, r)
		a.render(w, pageData{Notice: "Your Gatehouse session for this application has ended; log in again."})
		return
	}
	if err != nil {
		a.fail(w, "read the permission", err)
		return
	}
	a.render(w, pageData{User: sess, Permission: perm, Requested: requested})
}

// logout forgets the session here (Gatehouse's own session stays).
func (a *app) logout(w http.ResponseWriter, r *http.Request) {
	a.forget(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// errLoggedOut: Gatehouse no longer accepts the session's tokens (revoked or expired
// beyond refresh); the user must log in again.
var errLoggedOut = errors.New("tokens no longer accepted")

// permissionCall reads or writes this user's permission resource; what is
// "permissions" or "request-access". It returns the record (when the answer carries one)
// and the status.
func (a *app) permissionCall(ctx context.Context, sess *userSession, method, what string, body any) (*permission, int, error) {
	var p permission
	status, err := a.callJSON(ctx, sess, method, what, body, &p)
	if err != nil || status >= 400 {
		return nil, status, err
	}
	return &p, status, nil
}

// callJSON calls /api/users/{sub}/apps/{clientId}/{what} with the user's access token,
// refreshed when it has expired, and decodes a 2xx answer into out.
func (a *app) callJSON(ctx context.Context, sess *userSession, method, what string, body, out any) (int, error) {
	a.mu.Lock()
	src := a.oauth.TokenSource(ctx, sess.token)
	a.mu.Unlock()
	tok, err := src.Token()
	if err != nil {
		return 0, errLoggedOut
	}
	a.mu.Lock()
	sess.token = tok
	a.mu.Unlock()
	target := a.cfg.Issuer + "/api/users/" + url.PathEscape(sess.UserID) + "/apps/" + url.PathEscape(a.cfg.ClientID) + "/" + what
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		reader = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	tok.SetAuthHeader(req)
	res, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusUnauthorized {
		return res.StatusCode, errLoggedOut
	}
	if res.StatusCode >= 300 {
		return res.StatusCode, nil
	}
	return res.StatusCode, json.NewDecoder(res.Body).Decode(out)
}

// pageData is what the page shows.
type pageData struct {
	User       *userSession
	Permission *permission
	Requested  bool
	Notice     string
}

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Relying party demo</title></head>
<body>
<h1>Relying party demo</h1>
{{with .Notice}}<p>{{.}}</p>{{end}}
{{if .User}}
<p>Signed in as <strong id="name">{{.User.Name}}</strong> (<span id="email">{{.User.Email}}</span>).</p>
{{with .Permission}}
<p>Application: <span id="app">{{.AppName}}</span></p>
<p>Status: <strong id="status">{{.Status}}</strong></p>
<p>Role: <strong id="role">{{.Role}}</strong></p>
<p>Access: <strong id="access">{{if .HasAccess}}granted{{else}}not granted{{end}}</strong></p>
{{end}}
{{if .Requested}}<p id="requested">Access requested; an administrator of this application will decide.</p>{{end}}
<form method="post" action="/logout"><button>Log out</button></form>
{{else}}
<p><a id="login" href="/login">Log in with Gatehouse</a></p>
{{end}}
</body></html>
`))

func (a *app) render(w http.ResponseWriter, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := page.Execute(w, d); err != nil {
		a.logger.Error("render page", "error", err)
	}
}

func (a *app) fail(w http.ResponseWriter, what string, err error) {
	a.logger.Error("relyingparty: could not "+what, "error", err)
	http.Error(w, "could not "+what+"; see the application's log", http.StatusBadGateway)
}

func (a *app) session(r *http.Request) *userSession {
	return fromCookie(a, r, sessionCookie, a.sessions, false)
}

func (a *app) forget(w http.ResponseWriter, r *http.Request) {
	fromCookie(a, r, sessionCookie, a.sessions, true)
	a.setCookie(w, sessionCookie, "", -1)
}

func (a *app) takeFlow(r *http.Request) *loginFlow {
	return fromCookie(a, r, flowCookie, a.flows, true)
}

// fromCookie returns the entry of m that r's cookie names (nil without one), removing it
// when take is true.
func fromCookie[T any](a *app, r *http.Request, cookie string, m map[string]*T, take bool) *T {
	c, err := r.Cookie(cookie)
	if err != nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	v := m[c.Value]
	if take {
		delete(m, c.Value)
	}
	return v
}

// setCookie sets an HttpOnly, SameSite=Lax cookie (Secure when the app runs on https);
// maxAge 0 is a browser-session cookie, -1 deletes it.
func (a *app) setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(a.cfg.BaseURL, "https://")})
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}
