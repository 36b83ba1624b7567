package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// The openid-client interop test: panva's openid-client (npm, OpenID certified) drives the
// built server, on SQLite and on Postgres, through testdata/interop/interop.mjs. The script
// prints one JSON line per step; a step whose feature discovery does not advertise reports
// itself skipped. The Node project lives under testdata/ because it is this test's input,
// not an example for users: the go tool ignores it, and its pinned package-lock.json is
// what `npm ci` installs, once per lockfile, into the user cache directory.

// requiredSteps must each run and pass; a skipped one fails the test. Every feature of
// interopSteps has landed, so every step is required.
var requiredSteps = []string{
	"discovery",
	"code_flow_client_secret_basic",
	"refresh_client_secret_basic",
	"userinfo_bearer",
	"code_flow_client_secret_post",
	"introspection_client_secret_post",
	"revocation_client_secret_post",
	"code_flow_private_key_jwt",
	"code_flow_client_secret_jwt",
	"code_flow_jar",
	"code_flow_par",
	"code_flow_par_jar",
	"code_flow_dpop",
	"refresh_dpop",
	"userinfo_dpop",
	"end_session",
}

// interopSteps is every step interop.mjs runs, in its order: each must print its line.
var interopSteps = []string{
	"discovery",
	"code_flow_client_secret_basic",
	"refresh_client_secret_basic",
	"userinfo_bearer",
	"code_flow_client_secret_post",
	"introspection_client_secret_post",
	"revocation_client_secret_post",
	"code_flow_private_key_jwt",
	"code_flow_client_secret_jwt",
	"code_flow_jar",
	"code_flow_par",
	"code_flow_par_jar",
	"code_flow_dpop",
	"refresh_dpop",
	"userinfo_dpop",
	"end_session",
}

const (
	// envRequireNode set to "1" (as .ci/run does) makes a missing or too old Node.js a
	// failure instead of a skip.
	envRequireNode = "GATEHOUSE_REQUIRE_NODE"
	// minNodeMajor is the oldest Node.js openid-client 6 runs on (global WebCrypto and
	// fetch).
	minNodeMajor = 20
	interopDir   = "testdata/interop"
)

func TestOpenIDClientInterop(t *testing.T) {
	node := requireNode(t)
	modules := installInteropModules(t)
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			runInterop(t, node, modules, b.DSN(t))
		})
	}
}

// requireNode returns the path of a new enough node, or skips the test (fails it when
// envRequireNode is "1").
func requireNode(t *testing.T) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv(envRequireNode) == "1" {
			t.Fatalf("%s=1 but %s", envRequireNode, msg)
		}
		t.Skip("skipping the openid-client interop test: " + msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not on PATH")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		unavailable("npm is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		unavailable("node --version: %v", err)
	}
	version := strings.TrimSpace(string(out))
	major, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(version, "v"), ".", 2)[0])
	if err != nil || major < minNodeMajor {
		unavailable("node is %s; openid-client 6 needs Node.js %d or newer", version, minNodeMajor)
	}
	t.Logf("Node.js %s", version)
	return node
}

// installInteropModules runs `npm ci` for testdata/interop into a directory of the user
// cache keyed by the hash of its package.json and package-lock.json, once: a later run with
// the same lockfile finds it there and needs no network. It returns that directory's
// node_modules. The install happens in a scratch directory renamed into place when complete,
// so a failed or concurrent install never leaves a half-filled cache entry.
func installInteropModules(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	var files [][]byte
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(interopDir, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
		files = append(files, b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	parent := filepath.Join(cache, "gatehouse", "openid-client-interop")
	dir := filepath.Join(parent, hex.EncodeToString(h.Sum(nil))[:16])
	modules := filepath.Join(dir, "node_modules")
	installed := func() bool {
		_, err := os.Stat(filepath.Join(modules, "openid-client", "package.json"))
		return err == nil
	}
	if installed() {
		return modules
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	scratch, err := os.MkdirTemp(parent, "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(scratch) // gone once renamed; else the failed install's leftovers
	for i, name := range []string{"package.json", "package-lock.json"} {
		if err := os.WriteFile(filepath.Join(scratch, name), files[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// --ignore-scripts: nothing the registry serves runs at install time.
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = scratch
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", scratch, err, out)
	}
	if err := os.Rename(scratch, dir); err != nil && !installed() {
		t.Fatalf("keep the installed modules: %v", err)
	}
	t.Logf("installed openid-client into %s", dir)
	return modules
}

// interopDiscovery is the part of the discovery document that decides which clients the
// test registers (the script decides which steps run from the same document).
type interopDiscovery struct {
	TokenEndpointAuthMethods  []string `json:"token_endpoint_auth_methods_supported"`
	PAREndpoint               string   `json:"pushed_authorization_request_endpoint"`
	RequestParameterSupported bool     `json:"request_parameter_supported"`
	DPoPSigningAlgs           []string `json:"dpop_signing_alg_values_supported"`
}

// interopClient is a client as the script reads it.
type interopClient struct {
	ClientID     string          `json:"client_id"`
	ClientSecret string          `json:"client_secret,omitempty"`
	JWK          json.RawMessage `json:"jwk,omitempty"`
}

// interopConfig is the script's input.
type interopConfig struct {
	Issuer                string                   `json:"issuer"`
	Cookie                string                   `json:"cookie"`
	RedirectURI           string                   `json:"redirect_uri"`
	PostLogoutRedirectURI string                   `json:"post_logout_redirect_uri"`
	Clients               map[string]interopClient `json:"clients"`
}

// interopResult is one line the script prints.
type interopResult struct {
	Step    string `json:"step"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped"`
	Detail  string `json:"detail"`
}

// runInterop serves a fresh database, registers the clients discovery calls for, signs the
// user in, runs the script and judges its lines.
func runInterop(t *testing.T, node, modules, dsn string) {
	gh := &gatehouse{bin: buildServer(t), dsn: dsn}
	gh.run(t, "migrate", "--dsn", dsn)
	gh.createUser(t)
	srv := gh.serve(t)

	var disc interopDiscovery
	getJSON(t, srv.issuer+"/.well-known/openid-configuration", &disc)

	// The redirect URIs are never visited: the script reads the code from the Location.
	const redirectURI = "http://127.0.0.1:9/callback"
	const postLogoutURI = "http://127.0.0.1:9/signed-out"
	rpKey := newRPKey(t)
	jwksFile := filepath.Join(t.TempDir(), "rp-jwks.json")
	if err := os.WriteFile(jwksFile, rpKey.publicJWKS, 0o600); err != nil {
		t.Fatal(err)
	}
	// Each client registers the one method it authenticates with.
	method := func(m string) []string { return []string{"--auth-method", m} }
	has := func(list []string, v string) bool { return slices.Contains(list, v) }
	clients := []struct {
		name     string
		register bool
		args     []string
		withKey  bool
	}{
		{"basic", true, append(method("client_secret_basic"), "--post-logout-redirect-uri", postLogoutURI), false},
		{"post", true, method("client_secret_post"), false},
		{"private_key_jwt", has(disc.TokenEndpointAuthMethods, "private_key_jwt"),
			[]string{"--auth-method", "private_key_jwt", "--jwks", jwksFile}, true},
		{"client_secret_jwt", has(disc.TokenEndpointAuthMethods, "client_secret_jwt"),
			[]string{"--auth-method", "client_secret_jwt"}, false},
		{"par", disc.PAREndpoint != "", append(method("client_secret_basic"), "--require-par"), false},
		{"par_jar", disc.PAREndpoint != "" && disc.RequestParameterSupported && has(disc.TokenEndpointAuthMethods, "private_key_jwt"),
			[]string{"--auth-method", "private_key_jwt", "--jwks", jwksFile, "--require-par"}, true},
		{"dpop", len(disc.DPoPSigningAlgs) > 0, append(method("client_secret_basic"), "--require-dpop"), false},
	}
	cfg := interopConfig{Issuer: srv.issuer, RedirectURI: redirectURI, PostLogoutRedirectURI: postLogoutURI,
		Clients: map[string]interopClient{}}
	for _, c := range clients {
		if !c.register {
			continue
		}
		args := append([]string{"client", "create", "--id", "interop-" + c.name, "--name", "Interop " + c.name,
			"--redirect-uri", redirectURI, "--scope", testScopes, "--first-party"}, c.args...)
		var info clientInfo
		if out := gh.admin(t, args...); json.Unmarshal(out, &info) != nil || info.ClientID == "" {
			t.Fatalf("gatehouse %s printed %q, want the client as JSON", strings.Join(args, " "), out)
		}
		ic := interopClient{ClientID: info.ClientID, ClientSecret: info.ClientSecret}
		if c.withKey {
			ic.JWK = rpKey.privateJWK
		}
		cfg.Clients[c.name] = ic
	}
	cfg.Cookie = signIn(t, srv.issuer)

	results := runScript(t, node, modules, cfg)
	judge(t, results)
}

// getJSON decodes the 200 answer of a GET.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// signIn logs the test user in through the public login API and returns the
// "public-session=…" cookie it sets.
func signIn(t *testing.T, issuer string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": testEmail, "password": testPassword})
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Post(issuer+"/api/public/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer := readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/public/login: %d %s", resp.StatusCode, answer)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "public-session" && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("POST /api/public/login set no public-session cookie (Set-Cookie: %q)", resp.Header.Values("Set-Cookie"))
	return ""
}

// rpKey is the relying party's ES256 key for private_key_jwt and request objects.
type rpKey struct {
	privateJWK json.RawMessage // for the script
	publicJWKS []byte          // for client create --jwks
}

func newRPKey(t *testing.T) rpKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := key.PublicKey.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	point := raw.Bytes() // 0x04 || X || Y
	b64 := base64.RawURLEncoding.EncodeToString
	pub := map[string]string{"kty": "EC", "crv": "P-256", "kid": "interop-" + rand.Text()[:8], "alg": "ES256", "use": "sig",
		"x": b64(point[1:33]), "y": b64(point[33:])}
	jwks, err := json.Marshal(map[string]any{"keys": []any{pub}})
	if err != nil {
		t.Fatal(err)
	}
	priv := map[string]string{"d": b64(key.D.FillBytes(make([]byte, 32)))}
	for k, v := range pub {
		priv[k] = v
	}
	delete(priv, "use") // WebCrypto imports a signing JWK without it, with "alg"
	privJSON, err := json.Marshal(priv)
	if err != nil {
		t.Fatal(err)
	}
	return rpKey{privateJWK: privJSON, publicJWKS: jwks}
}

// runScript runs interop.mjs on cfg with the installed modules (linked beside a copy of
// the script, where Node's ESM resolution looks) and returns its lines in order.
func runScript(t *testing.T, node, modules string, cfg interopConfig) []interopResult {
	t.Helper()
	work := t.TempDir()
	script, err := os.ReadFile(filepath.Join(interopDir, "interop.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"interop.mjs": script, "config.json": cfgJSON, "package.json": []byte(`{"type":"module"}`)} {
		if err := os.WriteFile(filepath.Join(work, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "interop.mjs", "config.json")
	cmd.Dir = work
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var results []interopResult
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var r interopResult
		if err := json.Unmarshal(line, &r); err != nil || r.Step == "" {
			t.Errorf("the script printed %q, want one JSON step result a line", line)
			continue
		}
		results = append(results, r)
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Errorf("node interop.mjs still running after a minute, killed\nstderr:\n%s", &stderr)
	case runErr != nil:
		t.Errorf("node interop.mjs: %v\nstderr:\n%s", runErr, &stderr)
	case stderr.Len() > 0:
		t.Logf("node interop.mjs stderr:\n%s", &stderr)
	}
	return results
}

// judge logs which steps ran and which were skipped, and fails on a failed step, a
// required step that was skipped or is missing, and a step printed twice or unknown.
func judge(t *testing.T, results []interopResult) {
	t.Helper()
	seen := map[string]interopResult{}
	var ran, skipped []string
	for _, r := range results {
		if _, dup := seen[r.Step]; dup {
			t.Errorf("step %s printed twice", r.Step)
		}
		if !slices.Contains(interopSteps, r.Step) {
			t.Errorf("unknown step %s: add it to interopSteps", r.Step)
		}
		seen[r.Step] = r
		switch {
		case r.Skipped:
			skipped = append(skipped, r.Step)
			t.Logf("SKIP %-34s %s", r.Step, r.Detail)
		case r.OK:
			ran = append(ran, r.Step)
			t.Logf("ok   %-34s %s", r.Step, r.Detail)
		default:
			t.Errorf("FAIL %-34s %s", r.Step, r.Detail)
		}
	}
	for _, step := range interopSteps {
		r, ok := seen[step]
		switch {
		case !ok:
			t.Errorf("step %s printed no result", step)
		case r.Skipped && slices.Contains(requiredSteps, step):
			t.Errorf("required step %s was skipped: %s", step, r.Detail)
		}
	}
	t.Logf("openid-client steps ran: %s", strings.Join(ran, " "))
	t.Logf("openid-client steps skipped (feature not advertised): %s", strings.Join(skipped, " "))
}
