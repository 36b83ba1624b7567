package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/net/html"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/internal/browsertest"
	"github.com/gatehouse-id/gatehouse/internal/testlog"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
)

// These tests build the real binary and drive it as an operator and a relying party would:
// administer it through its subcommands, serve it as a subprocess, sign in through the
// hosted pages with golang.org/x/oauth2 and coreos/go-oidc, and stop it with SIGTERM.

const (
	testSecret   = "an example system secret of forty-one bytes"
	testEmail    = "ada@example.com"
	testPassword = "correct horse battery staple"
	testName     = "Ada Lovelace"
	testScopes   = "openid profile email offline_access"
)

// binDir holds the binary built by buildServer; TestMain removes it.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gatehouse-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildServer builds examples/server once per test binary and returns the binary's path.
// When the tests run under the race detector the binary is built with it too, so a data
// race in the served process makes it exit non-zero.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "gatehouse")
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		args := []string{"build", "-o", bin}
		if raceEnabled() {
			args = append(args, "-race")
		}
		args = append(args, "./examples/server")
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// moduleRoot is the nearest directory above the working directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// gatehouse is a fresh SQLite database administered and served by the built binary.
type gatehouse struct {
	bin, dsn string
}

// newGatehouse builds the binary and migrates a new database in t.TempDir().
func newGatehouse(t *testing.T) *gatehouse {
	t.Helper()
	gh := &gatehouse{bin: buildServer(t), dsn: "sqlite:" + filepath.Join(t.TempDir(), "gh.db")}
	gh.run(t, "migrate", "--dsn", gh.dsn)
	return gh
}

// run runs the binary with args, fails the test unless it exits 0, and returns its stdout.
func (gh *gatehouse) run(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gh.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gatehouse %s: %v\nstderr:\n%s", strings.Join(args, " "), err, &stderr)
	}
	return stdout.Bytes()
}

// admin runs an administration subcommand against the database with the test secret.
func (gh *gatehouse) admin(t *testing.T, args ...string) []byte {
	t.Helper()
	return gh.run(t, append(args, "--dsn", gh.dsn, "--secret", testSecret)...)
}

// createClient registers a confidential client with one redirect URI and returns it.
func (gh *gatehouse) createClient(t *testing.T, id, redirectURI string) clientInfo {
	t.Helper()
	out := gh.admin(t, "client", "create", "--id", id, "--name", "Demo RP",
		"--redirect-uri", redirectURI, "--scope", testScopes)
	var c clientInfo
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("client create printed %q: %v", out, err)
	}
	if c.ClientID != id || c.ClientSecret == "" {
		t.Fatalf("client create printed client_id %q and client_secret %q, want %q and a secret", c.ClientID, c.ClientSecret, id)
	}
	return c
}

// createUser creates the test user with the extra flags of "user create".
func (gh *gatehouse) createUser(t *testing.T, extra ...string) {
	t.Helper()
	out := gh.admin(t, append([]string{"user", "create", "--email", testEmail, "--password", testPassword, "--name", testName}, extra...)...)
	var u struct {
		ID    string `json:"id"`
		Email string `json:"email"`
	}
	if err := json.Unmarshal(out, &u); err != nil {
		t.Fatalf("user create printed %q: %v", out, err)
	}
	if u.ID == "" || u.Email != testEmail {
		t.Fatalf("user create printed id %q, email %q; want an id and %q", u.ID, u.Email, testEmail)
	}
}

type clientInfo struct {
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Name         string   `json:"name"`
	RedirectURIs []string `json:"redirect_uris"`
	Scopes       []string `json:"scopes"`
}

// serverProcess is a running "gatehouse serve".
type serverProcess struct {
	issuer  string
	cmd     *exec.Cmd
	stderr  *testlog.Buffer
	exited  chan struct{} // closed once the process has exited
	waitErr error         // the process's exit, set before exited is closed
}

// serve starts "gatehouse serve" with the extra flags on a free port of 127.0.0.1 and waits until /readyz
// answers 200. Unless the test stops it, it is stopped (SIGTERM, then SIGKILL) at cleanup.
func (gh *gatehouse) serve(t *testing.T, extra ...string) *serverProcess {
	t.Helper()
	addr := freeAddr(t)
	s := &serverProcess{issuer: "http://" + addr, stderr: &testlog.Buffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(gh.bin, append([]string{"serve", "--addr", addr, "--issuer", s.issuer,
		"--dsn", gh.dsn, "--secret", testSecret}, extra...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.stderr, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(25 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("gatehouse serve output:\n%s", s.stderr)
		}
	})

	hc := &http.Client{Timeout: time.Second}
	for range 100 {
		select {
		case <-s.exited:
			t.Fatalf("gatehouse serve exited before it was ready: %v\n%s", s.waitErr, s.stderr)
		default:
		}
		resp, err := hc.Get(s.issuer + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("gatehouse serve not ready at %s/readyz after 10s\n%s", s.issuer, s.stderr)
	return nil
}

// stop sends SIGTERM and fails the test unless the process exits 0 within 25s.
func (s *serverProcess) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(25 * time.Second):
		t.Fatalf("gatehouse serve still running 25s after SIGTERM\n%s", s.stderr)
	}
	if s.waitErr != nil {
		t.Fatalf("gatehouse serve exited with %v after SIGTERM, want exit status 0\n%s", s.waitErr, s.stderr)
	}
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// relyingParty is the OAuth configuration of the test client against a served provider.
func relyingParty(t *testing.T, ctx context.Context, s *serverProcess, c clientInfo, redirectURI string) (*oidc.Provider, *oauth2.Config) {
	t.Helper()
	op, err := oidc.NewProvider(ctx, s.issuer)
	if err != nil {
		t.Fatalf("discovery at %s: %v", s.issuer, err)
	}
	return op, &oauth2.Config{
		ClientID:     c.ClientID,
		ClientSecret: c.ClientSecret,
		Endpoint:     op.Endpoint(),
		RedirectURL:  redirectURI,
		Scopes:       strings.Fields(testScopes),
	}
}

// idClaims are the ID token claims the tests check.
type idClaims struct {
	Email string `json:"email"`
	Name  string `json:"name"`
}

// verifyIDToken verifies the ID token of tok for clientID and checks its nonce.
func verifyIDToken(ctx context.Context, op *oidc.Provider, clientID string, tok *oauth2.Token, nonce string) (idClaims, error) {
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return idClaims{}, errors.New("token response has no id_token")
	}
	idt, err := op.Verifier(&oidc.Config{ClientID: clientID}).Verify(ctx, raw)
	if err != nil {
		return idClaims{}, fmt.Errorf("verify ID token: %w", err)
	}
	if idt.Nonce != nonce {
		return idClaims{}, fmt.Errorf("ID token nonce %q, want %q", idt.Nonce, nonce)
	}
	var cl idClaims
	if err := idt.Claims(&cl); err != nil {
		return idClaims{}, err
	}
	return cl, nil
}

// hostedForm is a form of a hosted page.
type hostedForm struct {
	action  *url.URL
	method  string
	fields  url.Values // every named input with its value
	buttons url.Values // every named submit button with its value
}

// parseForm finds the single form of the page at page that posts to the path action (the
// login page also has the magic-link form).
func parseForm(t *testing.T, page *url.URL, body []byte, action string) hostedForm {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var forms []hostedForm
	var walk func(n *html.Node, f *hostedForm)
	walk = func(n *html.Node, f *hostedForm) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "form":
				action, err := page.Parse(attr(n, "action"))
				if err != nil {
					t.Fatalf("form action %q: %v", attr(n, "action"), err)
				}
				forms = append(forms, hostedForm{action: action, method: strings.ToUpper(attr(n, "method")),
					fields: url.Values{}, buttons: url.Values{}})
				f = &forms[len(forms)-1]
			case "input":
				if f != nil && attr(n, "name") != "" {
					f.fields.Add(attr(n, "name"), attr(n, "value"))
				}
			case "button":
				if f != nil && attr(n, "name") != "" {
					f.buttons.Add(attr(n, "name"), attr(n, "value"))
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, f)
		}
	}
	walk(doc, nil)
	forms = slices.DeleteFunc(forms, func(f hostedForm) bool { return f.action.Path != action })
	if len(forms) != 1 {
		t.Fatalf("page %s has %d forms posting to %s, want 1:\n%s", page, len(forms), action, body)
	}
	return forms[0]
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// submit posts the form with the given fields set, and returns the response with its body.
func (f hostedForm) submit(t *testing.T, hc *http.Client, set url.Values) (*http.Response, []byte) {
	t.Helper()
	if f.method != http.MethodPost {
		t.Fatalf("form to %s has method %q, want POST", f.action, f.method)
	}
	form := url.Values{}
	for k, v := range f.fields {
		form[k] = v
	}
	for k, v := range set {
		form[k] = v
	}
	resp, err := hc.PostForm(f.action.String(), form)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readBody(t, resp)
}

func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// browser is an HTTP client with cookies that follows redirects except to stopAt.
func browser(t *testing.T, stopAt string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if stopAt != "" && strings.HasPrefix(req.URL.String(), stopAt) {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

func TestServerProcess(t *testing.T) {
	gh := newGatehouse(t)
	redirectURI := "http://" + freeAddr(t) + "/callback"
	client := gh.createClient(t, "demo-rp", redirectURI)
	gh.createUser(t)
	srv := gh.serve(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op, conf := relyingParty(t, ctx, srv, client, redirectURI)
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))

	hc := browser(t, redirectURI)
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login" {
		t.Fatalf("authorize ended at %d %s, want 200 /login:\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	login := parseForm(t, resp.Request.URL, body, "/login")
	resp, body = login.submit(t, hc, url.Values{"email": {testEmail}, "password": {testPassword}})
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/consent" {
		t.Fatalf("login ended at %d %s, want 200 /consent:\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	consent := parseForm(t, resp.Request.URL, body, "/consent")
	if got := consent.buttons["decision"]; strings.Join(got, ",") != "allow,deny" {
		t.Fatalf("consent buttons decision=%q, want allow and deny", got)
	}
	resp, body = consent.submit(t, hc, url.Values{"decision": {"allow"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent answered %d, want 303 to the client:\n%s", resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	q := loc.Query()
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirectURI {
		t.Fatalf("redirected to %s, want %s", got, redirectURI)
	}
	if got := q.Get("state"); got != state {
		t.Errorf("state %q, want %q", got, state)
	}
	if got := q.Get("iss"); got != srv.issuer {
		t.Errorf("iss %q, want %q", got, srv.issuer)
	}

	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange code: %v", err)
	}
	claims, err := verifyIDToken(ctx, op, client.ClientID, tok, nonce)
	if err != nil {
		t.Fatal(err)
	}
	if claims.Email != testEmail || claims.Name != testName {
		t.Errorf("ID token email %q, name %q; want %q, %q", claims.Email, claims.Name, testEmail, testName)
	}
	ui, err := op.UserInfo(ctx, conf.TokenSource(ctx, tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	if ui.Email != testEmail {
		t.Errorf("userinfo email %q, want %q", ui.Email, testEmail)
	}

	var clients []clientInfo
	if err := json.Unmarshal(gh.admin(t, "client", "list"), &clients); err != nil {
		t.Fatalf("client list: %v", err)
	}
	if len(clients) != 1 || clients[0].ClientID != "demo-rp" || clients[0].Name != "Demo RP" ||
		strings.Join(clients[0].RedirectURIs, " ") != redirectURI || clients[0].ClientSecret != "" {
		t.Errorf("client list = %+v, want demo-rp alone, named Demo RP, redirecting to %s, without its secret", clients, redirectURI)
	}

	published := publishedKIDs(t, ctx, op)
	var keys []struct {
		KID       string     `json:"kid"`
		Algorithm string     `json:"alg"`
		RetiredAt *time.Time `json:"retired_at"`
	}
	if err := json.Unmarshal(gh.admin(t, "keys", "rotate"), &keys); err != nil {
		t.Fatalf("keys rotate: %v", err)
	}
	var added []string
	for _, k := range keys {
		if !published[k.KID] {
			if k.RetiredAt != nil {
				t.Errorf("new key %s is retired at %v", k.KID, k.RetiredAt)
			}
			added = append(added, k.Algorithm)
		}
	}
	slices.Sort(added)
	if strings.Join(added, ",") != "ES256,EdDSA,RS256" {
		t.Errorf("keys rotate added keys %q, want one each of RS256, ES256 and EdDSA (printed %+v, published before %v)", added, keys, published)
	}

	srv.stop(t)
}

// publishedKIDs reads the key ids of the provider's JWKS.
func publishedKIDs(t *testing.T, ctx context.Context, op *oidc.Provider) map[string]bool {
	t.Helper()
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := op.Claims(&meta); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, meta.JWKSURI, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var jwks struct {
		Keys []struct {
			KID string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(readBody(t, resp), &jwks); err != nil {
		t.Fatalf("jwks: %v", err)
	}
	kids := map[string]bool{}
	for _, k := range jwks.Keys {
		kids[k.KID] = true
	}
	if len(kids) == 0 {
		t.Fatal("the JWKS publishes no keys")
	}
	return kids
}

// pendingLogin is what the browser test's relying party keeps between /start and /callback.
type pendingLogin struct{ nonce, verifier string }

// signedIn is the relying party's page after a successful sign-in.
var signedIn = template.Must(template.New("").Parse(
	`<!doctype html><title>RP</title><p id="signed-in">signed in as {{.}}</p>`))

// newRP returns the handler of a minimal relying party: /start sends the browser to the
// provider with state, nonce and a PKCE challenge kept here; /callback exchanges the code,
// verifies the ID token and shows who signed in.
func newRP(op *oidc.Provider, conf *oauth2.Config) http.Handler {
	var mu sync.Mutex
	pending := map[string]pendingLogin{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /start", func(w http.ResponseWriter, r *http.Request) {
		state, p := rand.Text(), pendingLogin{nonce: rand.Text(), verifier: oauth2.GenerateVerifier()}
		mu.Lock()
		pending[state] = p
		mu.Unlock()
		http.Redirect(w, r, conf.AuthCodeURL(state, oidc.Nonce(p.nonce), oauth2.S256ChallengeOption(p.verifier)), http.StatusSeeOther)
	})
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		p, ok := pending[q.Get("state")]
		delete(pending, q.Get("state"))
		mu.Unlock()
		if !ok {
			http.Error(w, "rp: unknown state; error="+q.Get("error")+" "+q.Get("error_description"), http.StatusBadRequest)
			return
		}
		tok, err := conf.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(p.verifier))
		if err != nil {
			http.Error(w, "rp: exchange: "+err.Error(), http.StatusBadGateway)
			return
		}
		claims, err := verifyIDToken(r.Context(), op, conf.ClientID, tok, p.nonce)
		if err != nil {
			http.Error(w, "rp: "+err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		signedIn.Execute(w, claims.Email)
	})
	return mux
}

// location stores the browser's current URL in dst.
func location(dst *string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
		*dst, err = chromedp.Location()(ctx, tg)
		return err
	})
}

// browserStuck describes where the browser is and what it shows, for a failure message.
func browserStuck(browserCtx context.Context) string {
	dumpCtx, cancelDump := context.WithTimeout(browserCtx, 5*time.Second)
	defer cancelDump()
	at, _ := chromedp.Run(dumpCtx, chromedp.Location())
	page, _ := chromedp.Run(dumpCtx, chromedp.Text(chromedp.CSS("body")))
	return fmt.Sprintf("stuck at %s showing:\n%s", at, page)
}

func TestBrowserLogin(t *testing.T) {
	browsertest.Require(t)
	gh := newGatehouse(t)
	rp := httptest.NewUnstartedServer(nil)
	redirectURI := "http://" + rp.Listener.Addr().String() + "/callback"
	client := gh.createClient(t, "browser-rp", redirectURI)
	gh.createUser(t)
	srv := gh.serve(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	op, conf := relyingParty(t, ctx, srv, client, redirectURI)
	rp.Config.Handler = newRP(op, conf)
	rp.Start()
	defer rp.Close()

	// The hosted login page must refuse to be framed.
	resp, err := browser(t, "").Get(rp.URL + "/start")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.Request.URL.Path != "/login" {
		t.Fatalf("/start ended at %s, want the hosted /login page", resp.Request.URL)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("login page Content-Security-Policy %q, want frame-ancestors 'none'", csp)
	}

	browserCtx := browsertest.Start(t, ctx)
	runCtx, cancelRun := context.WithTimeout(browserCtx, 30*time.Second)
	defer cancelRun()
	var loginURL, consentURL, who, finalURL string
	err = chromedp.Do(runCtx,
		chromedp.Navigate(rp.URL+"/start"),
		chromedp.WaitVisible(chromedp.ID("email")),
		location(&loginURL),
		chromedp.SendKeys(chromedp.ID("email"), testEmail),
		chromedp.SendKeys(chromedp.ID("password"), testPassword),
		chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[name=decision][value=allow]`)),
		location(&consentURL),
		chromedp.Click(chromedp.CSS(`button[name=decision][value=allow]`)),
		chromedp.WaitVisible(chromedp.ID("signed-in")),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
			who, err = chromedp.Text(chromedp.ID("signed-in"))(ctx, tg)
			return err
		}),
		location(&finalURL),
	)
	if err != nil {
		t.Fatalf("browser sign-in: %v\nlogin page %q, consent page %q\n%s", err, loginURL, consentURL, browserStuck(browserCtx))
	}
	if !strings.HasPrefix(loginURL, srv.issuer+"/login?") {
		t.Errorf("login page at %s, want %s/login?request=…", loginURL, srv.issuer)
	}
	if !strings.HasPrefix(consentURL, srv.issuer+"/consent?") {
		t.Errorf("consent page at %s, want %s/consent?request=…", consentURL, srv.issuer)
	}
	if !strings.HasPrefix(finalURL, redirectURI+"?") {
		t.Errorf("browser ended at %s, want %s", finalURL, redirectURI)
	}
	if want := "signed in as " + testEmail; who != want {
		t.Errorf("relying party shows %q, want %q", who, want)
	}
}

// TestBrowserPINLogin signs in through the PIN gate in Chromium: the user, created with
// --require-pin, passes the password, gets a PIN mailed through SMTP to a test server, types
// it on the PIN page, consents and lands signed in at the relying party.
func TestBrowserPINLogin(t *testing.T) {
	browsertest.Require(t)
	mail := smtptest.Start(t)
	gh := newGatehouse(t)
	rp := httptest.NewUnstartedServer(nil)
	redirectURI := "http://" + rp.Listener.Addr().String() + "/callback"
	client := gh.createClient(t, "pin-rp", redirectURI)
	gh.createUser(t, "--require-pin")
	srv := gh.serve(t, "--smtp-url", mail.URL(), "--mail-from", "Gatehouse <no-reply@example.com>")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	op, conf := relyingParty(t, ctx, srv, client, redirectURI)
	rp.Config.Handler = newRP(op, conf)
	rp.Start()
	defer rp.Close()

	browserCtx := browsertest.Start(t, ctx)
	runCtx, cancelRun := context.WithTimeout(browserCtx, 30*time.Second)
	defer cancelRun()
	var pinURL, who, finalURL string
	err := chromedp.Do(runCtx,
		chromedp.Navigate(rp.URL+"/start"),
		chromedp.WaitVisible(chromedp.ID("password")),
		chromedp.SendKeys(chromedp.ID("email"), testEmail),
		chromedp.SendKeys(chromedp.ID("password"), testPassword),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("pin")),
		location(&pinURL),
	)
	if err != nil {
		t.Fatalf("browser password step: %v\n%s", err, browserStuck(browserCtx))
	}
	if pinURL != srv.issuer+"/login" {
		t.Errorf("PIN page at %s, want the answer to the login form, %s/login", pinURL, srv.issuer)
	}
	pin := smtptest.PIN(t, mail.WaitFor(t, testEmail))

	err = chromedp.Do(runCtx,
		chromedp.SendKeys(chromedp.ID("pin"), pin),
		chromedp.Click(chromedp.CSS(`form[action="/pin"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[name=decision][value=allow]`)),
		chromedp.Click(chromedp.CSS(`button[name=decision][value=allow]`)),
		chromedp.WaitVisible(chromedp.ID("signed-in")),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
			who, err = chromedp.Text(chromedp.ID("signed-in"))(ctx, tg)
			return err
		}),
		location(&finalURL),
	)
	if err != nil {
		t.Fatalf("browser PIN step: %v\n%s", err, browserStuck(browserCtx))
	}
	if !strings.HasPrefix(finalURL, redirectURI+"?") {
		t.Errorf("browser ended at %s, want %s", finalURL, redirectURI)
	}
	if want := "signed in as " + testEmail; who != want {
		t.Errorf("relying party shows %q, want %q", who, want)
	}
}
