package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// A provider mounted under the issuer's path, as a company embeds it: the issuer is
// http://127.0.0.1:PORT/auth and the company's mux hands /auth/ to the provider
// (newEnvAt), answering every other path itself with companyStatus. Each flow runs in a
// watched browser, which fails the test on any redirect, link, form action, stylesheet or
// cookie Path of the provider that leaves /auth/, and on any request that reaches the
// company's own routes.

const mountPath = "/auth"

// mountedEnv is a provider under mountPath that mails through an SMTP test server and
// offers a fake Google.
type mountedEnv struct {
	*env
	mail   *smtptest.Server
	google *fakeUpstream
}

func newMountedEnv(t *testing.T, b storagetest.Backend) *mountedEnv {
	t.Helper()
	mail := smtptest.Start(t)
	g := newFakeUpstream(t, "google")
	e := newEnvAt(t, b.Open(t), mountPath, func(string) provider.Config {
		return provider.Config{
			PublicAuth: provider.PublicAuthConfig{SMTPURL: mail.URL(), MailFrom: "Gatehouse <no-reply@example.com>"},
			Social:     provider.SocialConfig{Google: g.config()},
		}
	})
	return &mountedEnv{env: e, mail: mail, google: g}
}

// mountWatch is a browser's transport that checks every answer of the provider's host
// against the mount path.
type mountWatch struct {
	t          *testing.T
	host, base string
	next       http.RoundTripper

	mu       sync.Mutex
	answers  int
	problems []string
}

// watch makes b's requests go through a mountWatch, whose findings fail t when it ends.
func (e *env) watch(t *testing.T, b *browser) *browser {
	t.Helper()
	w := &mountWatch{t: t, host: e.srv.Listener.Addr().String(), base: e.base, next: http.DefaultTransport}
	b.client.Transport = w
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.answers == 0 {
			t.Error("the watched browser saw no answer of the provider")
		}
		for _, p := range w.problems {
			t.Error(p)
		}
	})
	return b
}

func (w *mountWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := w.next.RoundTrip(req)
	if err != nil || req.URL.Host != w.host {
		return res, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answers++
	where := req.Method + " " + req.URL.String()
	if res.StatusCode == companyStatus {
		w.problems = append(w.problems, where+" reached the company's own routes, outside the mount path")
	}
	if loc := res.Header.Get("Location"); loc != "" {
		w.check(req.URL, where, "Location", loc)
	}
	for _, c := range res.Cookies() {
		if !strings.HasPrefix(c.Path, w.base+"/") {
			w.problems = append(w.problems, where+" set cookie "+c.Name+" with Path="+c.Path+", outside the mount path")
		}
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			return nil, err
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		doc, err := html.Parse(bytes.NewReader(body))
		if err != nil {
			w.problems = append(w.problems, where+": "+err.Error())
			return res, nil
		}
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			for _, a := range n.Attr {
				if a.Key == "href" || a.Key == "action" || a.Key == "src" {
					w.check(req.URL, where, n.Data+" "+a.Key, a.Val)
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(doc)
	}
	return res, nil
}

// check records ref, found in what of the answer to from, when it leads to the provider's
// host outside the mount path.
func (w *mountWatch) check(from *url.URL, where, what, ref string) {
	u, err := from.Parse(ref)
	if err != nil {
		w.problems = append(w.problems, where+": unreadable "+what+" "+ref)
		return
	}
	if u.Host == w.host && !strings.HasPrefix(u.Path, w.base+"/") {
		w.problems = append(w.problems, where+": "+what+" "+ref+" leaves the mount path")
	}
}

// postJSON posts v as JSON to the provider's path in browser b.
func (b *browser) postJSON(t *testing.T, rawURL string, v any) page {
	t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return b.do(t, req)
}

func TestMountedUnderIssuerPath(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newMountedEnv(t, b)
		if want := "http://" + e.srv.Listener.Addr().String() + mountPath; e.issuer != want {
			t.Fatalf("issuer %s, want %s", e.issuer, want)
		}
		firstParty := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true, PostLogoutRedirectURIs: []string{rpLogoutURI}})
		thirdParty := e.client(t, provider.ClientSpec{ID: "thirdparty"})
		manager := e.client(t, provider.ClientSpec{ID: "manager", FirstParty: true,
			Scopes:     []string{"openid", "manage_permissions"},
			GrantTypes: []string{"authorization_code", "client_credentials"}})

		for _, tc := range []struct {
			name string
			run  func(t *testing.T)
		}{
			{"discovery names endpoints under the issuer's path", func(t *testing.T) {
				d := e.call(t, http.MethodGet, "/.well-known/openid-configuration", nil, nil)
				if d.status != http.StatusOK || d.body["issuer"] != e.issuer {
					t.Fatalf("discovery: got %s, want 200 with issuer %s", d, e.issuer)
				}
				n := 0
				for key, v := range d.body {
					s, ok := v.(string)
					if !ok || key == "issuer" || !(strings.HasSuffix(key, "_endpoint") || strings.HasSuffix(key, "_uri")) {
						continue
					}
					n++
					if !strings.HasPrefix(s, e.issuer+"/") {
						t.Errorf("%s: got %s, want a URL under %s/", key, s, e.issuer)
					}
					if key == "jwks_uri" {
						if r := e.call(t, http.MethodGet, strings.TrimPrefix(s, e.issuer), nil, nil); r.status != http.StatusOK {
							t.Errorf("jwks_uri: got %s, want 200", r)
						}
					}
				}
				if n < 7 {
					t.Errorf("discovery named %d endpoints, want the 7 of the provider", n)
				}
			}},
			{"code flow with PKCE through the hosted login and consent pages", func(t *testing.T) {
				user := e.user(t, "consent@example.com", "Consent User")
				rp := e.relyingParty(t, thirdParty)
				br := e.watch(t, e.browser(t))
				ar := rp.start()
				p := br.get(t, ar.String())
				p = br.login(t, p, user.Email) // asserts /auth/login
				p = br.consent(t, p, "allow")  // asserts /auth/consent
				tok := finishFlow(t, e.env, rp, ar, p, user)
				if r := e.userinfo(t, tok.AccessToken); r.status != http.StatusOK || r.body["sub"] != user.ID {
					t.Errorf("userinfo: got %s, want 200 for %s", r, user.ID)
				}
				if r := e.refresh(t, thirdParty, tok.RefreshToken); r.status != http.StatusOK {
					t.Errorf("refresh: got %s, want 200", r)
				}
				// The signed-in page outside any flow, and its way out, are mounted too.
				if p := br.get(t, e.issuer+"/signed-in"); p.status != http.StatusOK || !strings.Contains(p.body, user.Email) {
					t.Errorf("signed-in page: got %s", p)
				}
			}},
			{"the JSON API's session opens the flow", func(t *testing.T) {
				user := e.user(t, "json@example.com", "JSON User")
				br := e.watch(t, e.browser(t))
				if p := br.postJSON(t, e.issuer+"/api/public/login", map[string]string{"email": user.Email, "password": testPassword}); p.status != http.StatusOK {
					t.Fatalf("JSON login: got %s, want 200", p)
				}
				if s := e.publicSession(t, br); s["isValid"] != true {
					t.Fatalf("session under the mount path: got %v", s)
				}
				rp := e.relyingParty(t, firstParty)
				ar := rp.start()
				finishFlow(t, e.env, rp, ar, br.get(t, ar.String()), user)
			}},
			{"a mailed magic link opens under the mount path and resumes the flow", func(t *testing.T) {
				user := e.user(t, "magic@example.com", "Magic User")
				rp := e.relyingParty(t, firstParty)
				br := e.watch(t, e.browser(t))
				ar := rp.start()
				link, _ := br.magicLinkInFlow(t, e.env, e.mail, ar, user.Email) // asserts the link opens /auth/…
				finishFlow(t, e.env, rp, ar, br.openMagicLink(t, e.env, link), user)
			}},
			{"a mailed verification link opens under the mount path", func(t *testing.T) {
				const addr = "verify@example.com"
				br := e.watch(t, e.browser(t))
				f := br.get(t, e.issuer+"/register").form(t)
				f.fields.Set("email", addr)
				f.fields.Set("name", "Verify User")
				f.fields.Set("password", testPassword)
				if p := br.post(t, f.action, f.fields); p.status != http.StatusOK {
					t.Fatalf("register: got %s, want the signed-in page", p)
				}
				link := e.mailedLink(t, e.mail, addr, publicauth.PathVerifyEmail)
				vf := br.get(t, link).form(t)
				vf.fields.Set("password", testPassword)
				if p := br.post(t, vf.action, vf.fields); p.status != http.StatusOK || !strings.Contains(p.body, "Email verified") {
					t.Fatalf("got %s, want the email-verified page", p)
				}
			}},
			{"a mailed password-reset link opens under the mount path", func(t *testing.T) {
				user := e.user(t, "reset@example.com", "Reset User")
				br := e.watch(t, e.browser(t))
				f := br.get(t, e.issuer+"/forgot-password").form(t)
				f.fields.Set("email", user.Email)
				if p := br.post(t, f.action, f.fields); p.status != http.StatusOK || !strings.Contains(p.body, "Check your email") {
					t.Fatalf("got %s, want the check-your-email page", p)
				}
				rf := br.get(t, e.mailedLink(t, e.mail, user.Email, publicauth.PathResetPassword)).form(t)
				rf.fields.Set("password", "a brand new passphrase for gatehouse")
				if p := br.post(t, rf.action, rf.fields); p.status != http.StatusOK || !strings.Contains(p.body, "Password changed") {
					t.Fatalf("got %s, want the password-changed page", p)
				}
			}},
			{"social login calls back under the mount path", func(t *testing.T) {
				e.google.signIn(fakeProfile{Sub: "g-mounted", Email: "social@example.com", Name: "Social User", Verified: true})
				rp := e.relyingParty(t, firstParty)
				ar := rp.start()
				br := e.watch(t, socialBrowser(t, e.env, e.google.srv.URL))
				href := socialButtons(t, br.get(t, ar.String()))["Google"]
				if !strings.HasPrefix(href, mountPath+"/api/auth/google/login?request=") {
					t.Fatalf("Google button: got %q, want a path under %s", href, mountPath)
				}
				// The start of the login, seen without following it: the callback Google is
				// given, and the state cookie's Path.
				start := e.call(t, http.MethodGet, strings.TrimPrefix(href, mountPath), nil, nil)
				to, err := url.Parse(start.header.Get("Location"))
				if start.status != http.StatusFound || err != nil {
					t.Fatalf("social login start: got %s, want a 302 to Google", start)
				}
				if got, want := to.Query().Get("redirect_uri"), e.issuer+"/api/auth/google/callback"; got != want {
					t.Errorf("callback URL given to Google: got %s, want %s", got, want)
				}
				for _, c := range (&http.Response{Header: start.header}).Cookies() {
					if c.Path != mountPath+"/api/auth/" {
						t.Errorf("cookie %s: Path %s, want %s/api/auth/", c.Name, c.Path, mountPath)
					}
				}
				p := br.get(t, e.issuer+strings.TrimPrefix(href, mountPath))
				tok := rp.exchange(t, ar, wantCode(t, e.env, ar, callback(t, p, rpRedirectURI)))
				if tok.claims["email"] != "social@example.com" {
					t.Errorf("ID token email: got %v", tok.claims["email"])
				}
			}},
			{"a social return path outside the mount path is refused", func(t *testing.T) {
				origin := "http://" + e.srv.Listener.Addr().String()
				for _, returnTo := range []string{
					"/login", "/authx/login", mountPath + "/../login", mountPath + "/%2e%2e/login", mountPath + `/..\login`,
					origin + "/login", origin + mountPath + "/../login", "//evil.example.net" + mountPath + "/",
				} {
					r := e.call(t, http.MethodGet, "/api/auth/google/login", url.Values{"return_to": {returnTo}}, nil)
					if r.status != http.StatusBadRequest || r.header.Get("Location") != "" {
						t.Errorf("return_to %s: got %s, want 400 and no redirect", returnTo, r)
					}
				}
				// A path under the mount path is one.
				e.google.signIn(fakeProfile{Sub: "g-return", Email: "return@example.com", Name: "Return User", Verified: true})
				br := e.watch(t, socialBrowser(t, e.env, e.google.srv.URL))
				p := br.get(t, e.issuer+"/api/auth/google/login?"+url.Values{"return_to": {mountPath + "/api/public/session"}}.Encode())
				if p.status != http.StatusOK || p.url.Path != mountPath+"/api/public/session" || !strings.Contains(p.body, `"isValid":true`) {
					t.Fatalf("got %s, want the session document", p)
				}
			}},
			{"logout with and without confirmation", func(t *testing.T) {
				user := e.user(t, "logout@example.com", "Logout User")
				rp := e.relyingParty(t, firstParty)
				br := e.watch(t, e.browser(t))
				_, tok := rp.signIn(t, e.env, br, user.Email)
				p := br.get(t, e.issuer+"/api/oauth/logout?"+url.Values{"id_token_hint": {tok.rawIDToken}, "post_logout_redirect_uri": {rpLogoutURI}}.Encode())
				wantLoggedOut(t, e.env, rp, br, p, rpLogoutURI)

				rp.signIn(t, e.env, br, user.Email)
				f := wantLogoutConfirmation(t, e.env, rp, br, br.get(t, e.issuer+"/api/oauth/logout"))
				if f.action != e.issuer+"/logout" {
					t.Errorf("confirmation form posts to %s, want %s/logout", f.action, e.issuer)
				}
				wantLoggedOut(t, e.env, rp, br, br.post(t, f.action, f.fields), "")
			}},
			{"admin and permission routes", func(t *testing.T) {
				alice := e.user(t, "alice@example.com", "Alice")
				if _, err := e.p.CreateUser(context.Background(), provider.UserSpec{
					Email: "root@example.com", Password: testPassword, Name: "Root", Role: "admin", Verified: true}); err != nil {
					t.Fatal(err)
				}
				br := e.watch(t, e.browser(t))
				if p := br.postJSON(t, e.issuer+"/api/admin/login", map[string]string{"email": "root@example.com", "password": testPassword}); p.status != http.StatusOK {
					t.Fatalf("admin login: got %s, want 200", p)
				}
				req, err := http.NewRequest(http.MethodPut, e.issuer+"/api/admin/users/"+alice.ID+"/apps/manager/permissions",
					strings.NewReader(`{"status": "approved", "role": "admin"}`))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				if p := br.do(t, req); p.status != http.StatusCreated {
					t.Fatalf("admin permission PUT: got %s, want 201", p)
				}
				cc := clientcredentials.Config{ClientID: manager.ClientID, ClientSecret: manager.ClientSecret,
					TokenURL: e.issuer + "/api/oauth/token", Scopes: []string{"manage_permissions"}, AuthStyle: oauth2.AuthStyleInHeader}
				tok, err := cc.Token(e.ctx)
				if err != nil {
					t.Fatalf("client_credentials: %v", err)
				}
				r := e.call(t, http.MethodGet, "/api/users/"+alice.ID+"/apps/manager/permissions", nil, bearer(tok.AccessToken))
				if r.status != http.StatusOK || r.body["role"] != "admin" {
					t.Errorf("permission GET: got %s, want 200 with role admin", r)
				}
			}},
			{"requests outside the mount path get the JSON 404", func(t *testing.T) {
				// What an http.StripPrefix would pass on, and root paths a company's mux might
				// route to the provider: none is the provider's.
				for _, path := range []string{"/login", "/api/oauth/authorize", "/.well-known/openid-configuration", "/api/public/session", "/authx/login", mountPath} {
					w := httptest.NewRecorder()
					e.p.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
					var body map[string]any
					if w.Code != http.StatusNotFound || json.Unmarshal(w.Body.Bytes(), &body) != nil || body["error"] != "Not Found" {
						t.Errorf("GET %s: got %d %s, want the JSON 404", path, w.Code, w.Body)
					}
				}
				if r := e.call(t, http.MethodGet, "/no-such-endpoint", nil, nil); r.status != http.StatusNotFound || r.body["error"] != "Not Found" {
					t.Errorf("unknown path under the mount path: got %s, want the JSON 404", r)
				}
				if r := e.call(t, http.MethodGet, "/api/oauth/token", nil, nil); r.status != http.StatusMethodNotAllowed {
					t.Errorf("GET of the token endpoint: got %s, want the JSON 405", r)
				}
			}},
		} {
			t.Run(tc.name, tc.run)
		}
	})
}

// An issuer's path is a mount point only when it reads the same in a route, an HTML
// attribute and a cookie's Path; New refuses any other.
func TestIssuerPathMustBePlain(t *testing.T) {
	for _, issuer := range []string{"https://acme.example/a%20b", "https://acme.example/a/../b", "https://acme.example//auth", "https://acme.example/a;b"} {
		t.Run(issuer, func(t *testing.T) {
			_, err := provider.New(provider.Config{Issuer: issuer, DSN: "sqlite:" + filepath.Join(t.TempDir(), "g.db"), Secret: testSecret})
			if err == nil || !strings.Contains(err.Error(), "must be plain") {
				t.Errorf("got %v, want an error saying the issuer path must be plain", err)
			}
		})
	}
}

// TestMountedPagesKeepTheirGuards: under a mount path the hosted pages keep every header of
// a hosted page, and the state-changing JSON routes still refuse a cross-site Origin.
func TestMountedPagesKeepTheirGuards(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnvAt(t, b.Open(t), mountPath, func(string) provider.Config { return provider.Config{} })
		p := e.browser(t).get(t, e.issuer+"/login")
		if p.status != http.StatusOK || p.url.Path != mountPath+"/login" {
			t.Fatalf("GET %s/login: %d at %s", mountPath, p.status, p.url)
		}
		wantHostedPageHeaders(t, p)

		// A signed-in user's session, which a cross-site logout must not end.
		alice := e.user(t, "alice@example.com", "Alice Example")
		post := func(path, body, origin string, cookie *http.Cookie) jsonResponse {
			t.Helper()
			req, err := http.NewRequest(http.MethodPost, e.issuer+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if origin != "" {
				req.Header.Set("Origin", origin)
			}
			if cookie != nil {
				req.AddCookie(cookie)
			}
			return e.send(t, req)
		}
		login := post("/api/public/login", fmt.Sprintf(`{"email": %q, "password": %q}`, alice.Email, testPassword), e.issuer[:len(e.issuer)-len(mountPath)], nil)
		var session *http.Cookie
		for _, c := range (&http.Response{Header: login.header}).Cookies() {
			if c.Name == "public-session" {
				session = &http.Cookie{Name: c.Name, Value: c.Value}
			}
		}
		if login.status != http.StatusOK || session == nil {
			t.Fatalf("login under %s: got %s and no public-session cookie", mountPath, login)
		}
		if r := post("/api/public/logout", "", "https://evil.example.net", session); r.status != http.StatusForbidden || r.body["error"] != "Forbidden" {
			t.Errorf("cross-site POST %s/api/public/logout: got %s, want 403 in the JSON error shape", mountPath, r)
		}
		req, err := http.NewRequest(http.MethodGet, e.issuer+"/api/public/session", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.AddCookie(session)
		if r := e.send(t, req); r.status != http.StatusOK {
			t.Errorf("the session after the refused logout: got %s, want 200", r)
		}
	})
}
