package server

import (
	"context"
	"crypto/rand"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/testlog"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// startServer runs serve on a loopback listener with args and returns its base URL, its
// logs and a stop function that cancels the context and returns the exit code.
func startServer(t *testing.T, args ...string) (string, *testlog.Buffer, func() int) {
	t.Helper()
	return startServerAt(t, "", args...)
}

// startServerAt is startServer with an issuer whose path is mount ("" for none): the base
// URL it returns is the issuer, the listener's URL plus mount. The probes stay at the root.
func startServerAt(t *testing.T, mount string, args ...string) (string, *testlog.Buffer, func() int) {
	t.Helper()
	return startServerEnv(t, mount, nil, args...)
}

// startServerEnv is startServerAt with the environment variables env.
func startServerEnv(t *testing.T, mount string, env map[string]string, args ...string) (string, *testlog.Buffer, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // in case serve fails before it owns the listener
	origin := "http://" + ln.Addr().String()
	base := origin + mount
	logs := &testlog.Buffer{}
	c := &cli{stdout: io.Discard, stderr: logs, lookupEnv: envOf(env), random: rand.Reader, listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- c.run(ctx, append([]string{"serve", "--issuer", base}, args...)) }()
	stopped := false
	stop := func() int {
		stopped = true
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop within 30s")
			return -1
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(origin + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, logs, stop
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d before it was healthy; logs:\n%s", code, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not healthy within 20s; logs:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var hiddenInput = regexp.MustCompile(`name="(csrf_token|request)" value="([^"]*)"`)

func TestServeDemoLoginEndToEnd(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dsn := b.DSN(t)
			store := []string{"--dsn", dsn}
			if _, isFile := sqlitePath(dsn); !isFile {
				store = append(store, "--secret", strings.Repeat("k", 32))
			}
			testServeDemoLogin(t, "", store)
		})
	}
}

// testServeDemoLogin creates a user, serves with the demo on the database of storeArgs,
// under the issuer's path mount ("" for the root), and logs in and out through the demo
// relying party in a cookie-keeping client.
func testServeDemoLogin(t *testing.T, mount string, storeArgs []string) {
	mustRun(t, nil, append([]string{"user", "create", "--email", "ann@example.com", "--password", "correct horse battery staple", "--name", "Ann", "--verified"}, storeArgs...)...)
	base, logs, stop := startServerAt(t, mount, append([]string{"--demo", "--janitor-interval=-1s"}, storeArgs...)...)
	origin := strings.TrimSuffix(base, mount)

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	get := func(u string) (*http.Response, string) {
		t.Helper()
		resp, err := browser.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	// The demo sends the browser through the authorization endpoint to the login page.
	resp, page := get(base + "/demo/login")
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != mount+"/login" {
		t.Fatalf("after /demo/login: got %d at %s, want the login page", resp.StatusCode, resp.Request.URL)
	}
	form := url.Values{"email": {"ann@example.com"}, "password": {"correct horse battery staple"}}
	for _, m := range hiddenInput.FindAllStringSubmatch(page, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if form.Get("csrf_token") == "" {
		t.Fatalf("login page has no csrf_token:\n%s", page)
	}

	// Logging in resumes the flow (first-party: no consent) and lands on the callback, which
	// exchanges the code and verifies the ID token.
	post, err := browser.PostForm(resp.Request.URL.String(), form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(post.Body)
	post.Body.Close()
	if post.StatusCode != http.StatusOK || post.Request.URL.Path != mount+"/demo/callback" {
		t.Fatalf("after login: got %d at %s, want the demo callback page:\n%s\nlogs:\n%s", post.StatusCode, post.Request.URL, body, logs.String())
	}
	result := html.UnescapeString(string(body))
	for _, want := range []string{`"email": "ann@example.com"`, `"name": "Ann"`, `"aud": "gatehouse-demo"`, `"iss": "` + base + `"`, "Refresh token</dt><dd>received"} {
		if !strings.Contains(result, want) {
			t.Errorf("callback page lacks %q:\n%s", want, result)
		}
	}

	// The logout link ends the session and comes back to the demo.
	m := regexp.MustCompile(`href="([^"]*/api/oauth/logout[^"]*)"`).FindStringSubmatch(string(body))
	if m == nil {
		t.Fatalf("no logout link on the callback page:\n%s", body)
	}
	resp, page = get(html.UnescapeString(m[1]))
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != mount+"/demo" || !strings.Contains(page, "You have been logged out") {
		t.Errorf("after logout: got %d at %s, want the demo page saying so:\n%s", resp.StatusCode, resp.Request.URL, page)
	}

	// Under an issuer's path, the provider and the demo are there and nowhere else.
	for _, path := range []string{"/.well-known/openid-configuration", "/login", "/demo"} {
		if mount == "" {
			break
		}
		if resp, _ := get(origin + path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s outside the issuer's path %s: got %d, want 404", path, mount, resp.StatusCode)
		}
	}

	// Probes, request ids and metrics around the provider.
	resp, page = get(origin + "/readyz")
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(page) != `{"status":"ok"}` {
		t.Errorf("readyz: got %d %q", resp.StatusCode, page)
	}
	if id := resp.Header.Get(RequestIDHeader); id == "" {
		t.Error("readyz: no X-Request-Id on the response")
	}
	resp, page = get(origin + "/metrics")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `gatehouse_http_requests_total{code="200",method="POST"}`) {
		t.Errorf("metrics: got %d:\n%s", resp.StatusCode, page)
	}

	if code := stop(); code != 0 {
		t.Errorf("exit code after shutdown: got %d, want 0; logs:\n%s", code, logs.String())
	}
	for _, msg := range []string{"gatehouse listening", "shutting down", "stopped"} {
		if findLog(t, logs, msg) == nil {
			t.Errorf("no %q log line in:\n%s", msg, logs.String())
		}
	}
	if l := findLog(t, logs, "demo mode: try a login at "+base+"/demo"); l == nil || l["client_id"] != demoClientID {
		t.Errorf("start-up log of the demo client: got %v", l)
	}
}

// With an issuer that has a path, the server serves the provider and the demo under it, and
// keeps its probes at the root: `serve --issuer http://HOST/auth`.
func TestServeUnderIssuerPath(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "gatehouse.db")
	testServeDemoLogin(t, "/auth", []string{"--dsn", dsn})
}

func TestServeWithoutDemoHasNoDemoRoutes(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "gatehouse.db")
	base, _, stop := startServer(t, "--dsn", dsn, "--demo=false", "--janitor-interval=-1s")
	resp, err := http.Get(base + "/demo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/demo without demo mode: got %d, want 404", resp.StatusCode)
	}
	resp, err = http.Get(base + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("discovery: got %d, want 200", resp.StatusCode)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code: got %d, want 0", code)
	}
}
