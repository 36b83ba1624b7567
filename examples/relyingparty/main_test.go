package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/gatehouse-id/gatehouse/provider"
	// The test provider keeps its data in SQLite: link its driver.
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
)

// The test runs the application against a real Gatehouse on 127.0.0.1 and walks it as a
// browser would (an http.Client with a cookie jar): log in, find the access request
// pending, get approved and promoted by the application's client token, lose access and
// the tokens with it, log in again and ask anew. (It imports the provider to start
// Gatehouse; the application itself imports nothing of Gatehouse.)

const password = "correct horse battery staple"

func TestRelyingPartyAgainstGatehouse(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	gatehouse := httptest.NewUnstartedServer(nil)
	issuer := "http://" + gatehouse.Listener.Addr().String()
	p, err := provider.New(provider.Config{
		Issuer: issuer, DSN: "sqlite:" + filepath.Join(t.TempDir(), "gatehouse.db"),
		Secret: []byte("relying party example test secret, 32+ bytes"), JanitorInterval: -1,
	}, provider.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	gatehouse.Config.Handler = p
	gatehouse.Start()
	t.Cleanup(func() { gatehouse.Close(); _ = p.Close() })

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + listener.Addr().String()
	client, err := p.CreateClient(ctx, provider.ClientSpec{
		ID: "relyingparty", Name: "Relying party demo", RedirectURIs: []string{base + "/callback"}, FirstParty: true,
		Scopes:     []string{"openid", "profile", "email", "offline_access", "manage_permissions"},
		GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"},
	})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := p.CreateUser(ctx, provider.UserSpec{Email: "alice@example.com", Password: password, Name: "Alice Example", Verified: true})
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := parseConfig([]string{"--issuer", issuer, "--client-id", client.ClientID, "--addr", listener.Addr().String()},
		envOf(map[string]string{"RELYINGPARTY_CLIENT_SECRET": client.ClientSecret}))
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(ctx, cfg, &http.Client{Timeout: 10 * time.Second}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httptest.Server{Listener: listener, Config: &http.Server{Handler: a.routes()}}
	rp.Start()
	t.Cleanup(rp.Close)

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	// logIn goes through the application's /login: Gatehouse shows its login form unless
	// the browser still has a Gatehouse session.
	logIn := func() string {
		t.Helper()
		page := fetch(t, browser, http.MethodGet, base+"/login", nil)
		if strings.HasPrefix(page.url, issuer+"/login") {
			form := url.Values{"email": {alice.Email}, "password": {password}}
			for _, name := range []string{"csrf_token", "request"} {
				m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page.body)
				if m == nil {
					t.Fatalf("Gatehouse's login form has no %s:\n%s", name, page.body)
				}
				form.Set(name, m[1])
			}
			page = fetch(t, browser, http.MethodPost, issuer+"/login", form)
		}
		if page.url != base+"/" {
			t.Fatalf("the login ended at %s, want the application's home page", page.url)
		}
		return page.body
	}
	manager := (&clientcredentials.Config{ClientID: client.ClientID, ClientSecret: client.ClientSecret,
		TokenURL: issuer + "/api/oauth/token", Scopes: []string{"manage_permissions"}, AuthStyle: oauth2.AuthStyleInHeader})
	manage := func(method, body string) {
		t.Helper()
		tok, err := manager.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(method, issuer+"/api/users/"+alice.ID+"/apps/"+client.ClientID+"/permissions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		tok.SetAuthHeader(req)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s permission: got %d, want 200", method, res.StatusCode)
		}
	}
	home := func() string { t.Helper(); return fetch(t, browser, http.MethodGet, base+"/", nil).body }

	wantShown(t, home(), `id="login"`)
	if login := fetch(t, browser, http.MethodGet, base+"/login", nil); !strings.HasPrefix(login.url, issuer+"/login") {
		t.Fatalf("/login ended at %s, want Gatehouse's login page", login.url)
	}
	page := logIn()
	wantShown(t, page, `<strong id="name">Alice Example</strong>`, `id="status">pending<`, `id="role">none<`, `id="access">not granted<`, `id="requested"`)
	wantShown(t, home(), `id="status">pending<`) // asked once; now it only reads

	manage(http.MethodPut, `{"status": "approved", "role": "user"}`)
	wantShown(t, home(), `id="status">approved<`, `id="role">user<`, `id="access">granted<`)
	manage(http.MethodPut, `{"status": "approved", "role": "admin"}`)
	wantShown(t, home(), `id="role">admin<`)

	// Revoking the permission revokes her tokens: the application must log her in again,
	// after which it asks for access anew.
	manage(http.MethodDelete, "")
	wantShown(t, home(), "has ended; log in again", `id="login"`)
	wantShown(t, logIn(), `id="status">pending<`, `id="role">none<`, `id="requested"`)
}

func TestParseConfig(t *testing.T) {
	cfg, err := parseConfig([]string{"--client-secret", "s3cret"}, envOf(map[string]string{
		"RELYINGPARTY_ISSUER": "https://id.example.com/", "RELYINGPARTY_ADDR": ":7000"}))
	if err != nil {
		t.Fatal(err)
	}
	want := config{Issuer: "https://id.example.com", ClientID: "relyingparty", ClientSecret: "s3cret", Addr: ":7000", BaseURL: "http://:7000"}
	if cfg != want {
		t.Errorf("got %+v, want %+v", cfg, want)
	}
	if _, err := parseConfig(nil, envOf(nil)); err == nil || !strings.Contains(err.Error(), "client-secret") {
		t.Errorf("without a secret: got %v, want an error naming --client-secret", err)
	}
}

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// response is where a browser request ended and what it showed.
type response struct {
	url, body string
}

// fetch sends a GET, or a form POST when form is not nil, following redirects.
func fetch(t *testing.T, c *http.Client, method, target string, form url.Values) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s ended at %s with %d:\n%s", method, target, res.Request.URL, res.StatusCode, b)
	}
	return response{url: res.Request.URL.String(), body: string(b)}
}

// wantShown asserts that page contains every fragment.
func wantShown(t *testing.T, page string, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		if !strings.Contains(page, f) {
			t.Errorf("page lacks %s:\n%s", f, page)
		}
	}
}
