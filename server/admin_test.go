package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// decodeJSON decodes a command's stdout.
func decodeJSON(t *testing.T, stdout string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("stdout is not the expected JSON: %v\n%s", err, stdout)
	}
}

// mustRun runs the command line and fails the test unless it exits 0.
func mustRun(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	code, stdout, stderr := runMain(t, env, args...)
	if code != 0 {
		t.Fatalf("%s: exit code %d, want 0; stderr:\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

type clientJSON struct {
	ClientID               string   `json:"client_id"`
	ClientSecret           *string  `json:"client_secret"`
	Name                   string   `json:"name"`
	RedirectURIs           []string `json:"redirect_uris"`
	PostLogoutRedirectURIs []string `json:"post_logout_redirect_uris"`
	Scopes                 []string `json:"scopes"`
	GrantTypes             []string `json:"grant_types"`
	Audience               []string `json:"audience"`
	Public                 bool     `json:"public"`
	FirstParty             bool     `json:"first_party"`
	ResourceServer         bool     `json:"resource_server"`
	IDTokenAlg             string   `json:"id_token_signed_response_alg"`
	RequireDPoP            bool     `json:"dpop_bound_access_tokens"`
}

func TestAdminCommands(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dsn := b.DSN(t)
			env := map[string]string{"GATEHOUSE_DSN": dsn}
			if _, isFile := sqlitePath(dsn); !isFile {
				env["GATEHOUSE_SECRET"] = strings.Repeat("k", 32)
			}
			testAdminCommands(t, dsn, env)
		})
	}
}

// testAdminCommands runs every administration command against one fresh database; env names
// it (and its secret, except for SQLite, where the secret file is generated).
func testAdminCommands(t *testing.T, dsn string, env map[string]string) {
	pubEnv := map[string]string{"GATEHOUSE_SECRET": env["GATEHOUSE_SECRET"]}

	mustRun(t, env, "migrate")

	var conf clientJSON
	decodeJSON(t, mustRun(t, env, "client", "create", "--id", "my-app", "--name", "My app",
		"--redirect-uri", "https://app.example.com/callback", "--redirect-uri", "https://app.example.com/cb2",
		"--post-logout-redirect-uri", "https://app.example.com/", "--scope", "openid email",
		"--first-party", "--id-token-alg", "ES256", "--resource-server",
		"--audience", "https://api.example.com", "--audience", "orders-api"), &conf)
	if conf.ClientID != "my-app" || conf.Name != "My app" || conf.Public || !conf.FirstParty || conf.IDTokenAlg != "ES256" || !conf.ResourceServer {
		t.Errorf("confidential client: got %+v", conf)
	}
	if conf.ClientSecret == nil || len(*conf.ClientSecret) < 32 {
		t.Errorf("confidential client secret: got %v, want a generated secret printed once", conf.ClientSecret)
	}
	if !slices.Equal(conf.RedirectURIs, []string{"https://app.example.com/callback", "https://app.example.com/cb2"}) ||
		!slices.Equal(conf.PostLogoutRedirectURIs, []string{"https://app.example.com/"}) {
		t.Errorf("redirect URIs: got %v and %v", conf.RedirectURIs, conf.PostLogoutRedirectURIs)
	}
	if !slices.Equal(conf.Scopes, []string{"openid", "email"}) {
		t.Errorf("scopes: got %v, want [openid email]", conf.Scopes)
	}
	if !slices.Equal(conf.Audience, []string{"https://api.example.com", "orders-api"}) {
		t.Errorf("audience: got %v, want [https://api.example.com orders-api]", conf.Audience)
	}

	var pub clientJSON
	decodeJSON(t, mustRun(t, pubEnv, "client", "create", "--dsn", dsn, "--public", "--name", "SPA",
		"--redirect-uri", "http://localhost:3000/callback", "--grant-type", "authorization_code", "--require-dpop"), &pub)
	if pub.ClientID == "" || !pub.Public || pub.ClientSecret != nil || pub.ResourceServer || !pub.RequireDPoP {
		t.Errorf("public client: got %+v, want a generated id and no secret", pub)
	}
	if !slices.Equal(pub.GrantTypes, []string{"authorization_code"}) {
		t.Errorf("public client grant types: got %v", pub.GrantTypes)
	}

	code, _, stderr := runMain(t, env, "client", "create", "--id", "my-app", "--redirect-uri", "https://x.example.com/cb")
	if code != 1 || stderr == "" {
		t.Errorf("creating a client twice: got exit %d, stderr %q; want 1 and a message", code, stderr)
	}

	var list []clientJSON
	decodeJSON(t, mustRun(t, env, "client", "list"), &list)
	if len(list) != 2 {
		t.Fatalf("client list: got %d clients, want 2", len(list))
	}
	for _, c := range list {
		if c.ClientSecret != nil {
			t.Errorf("client list shows the secret of %s", c.ClientID)
		}
	}

	// client update changes only the settings given; a list flag with an empty value empties it.
	var changed clientJSON
	decodeJSON(t, mustRun(t, env, "client", "update", "--id", "my-app", "--name", "Renamed", "--first-party=false",
		"--post-logout-redirect-uri=", "--scope", "openid profile", "--id-token-alg", "rs256", "--audience", "billing-api"), &changed)
	if changed.Name != "Renamed" || changed.FirstParty || len(changed.PostLogoutRedirectURIs) != 0 ||
		!slices.Equal(changed.Scopes, []string{"openid", "profile"}) || changed.IDTokenAlg != "RS256" || changed.ClientSecret != nil {
		t.Errorf("client update: got %+v, want the new name, scopes and algorithm, no post-logout URIs, not first-party, no secret", changed)
	}
	if conf.RequireDPoP || changed.RequireDPoP {
		t.Errorf("a client created without --require-dpop requires DPoP")
	}
	var dpopOff clientJSON
	decodeJSON(t, mustRun(t, env, "client", "update", "--id", pub.ClientID, "--require-dpop=false"), &dpopOff)
	if dpopOff.RequireDPoP || dpopOff.Name != "SPA" {
		t.Errorf("client update --require-dpop=false: got %+v, want DPoP no longer required, the rest kept", dpopOff)
	}
	if !slices.Equal(changed.Audience, []string{"billing-api"}) {
		t.Errorf("client update audience: got %v, want [billing-api]", changed.Audience)
	}
	if !slices.Equal(changed.RedirectURIs, conf.RedirectURIs) || !changed.ResourceServer || !slices.Equal(changed.GrantTypes, conf.GrantTypes) {
		t.Errorf("client update: got %+v, want the settings not given kept", changed)
	}
	// --id-token-alg takes EdDSA in any case.
	decodeJSON(t, mustRun(t, env, "client", "update", "--id", "my-app", "--id-token-alg", "eddsa"), &changed)
	if changed.IDTokenAlg != "EdDSA" {
		t.Errorf("client update --id-token-alg eddsa: got %q, want EdDSA", changed.IDTokenAlg)
	}
	for _, tc := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"client", "update", "--id", "my-app", "--id-token-alg", "HS256"}, 2, "--id-token-alg"},
		{[]string{"client", "update", "--id", "my-app", "--redirect-uri", "/relative"}, 1, "/relative"},
		{[]string{"client", "update", "--id", "nope", "--name", "x"}, 1, "nope"},
		{[]string{"client", "update", "--id", "my-app"}, 2, "at least one setting"},
		{[]string{"client", "update", "--name", "x"}, 2, "--id"},
		{[]string{"client", "update", "--id", "my-app", "--first-party", "maybe"}, 2, "--first-party"},
		{[]string{"client", "rotate-secret", "--id", pub.ClientID}, 1, "public client"},
		{[]string{"client", "rotate-secret", "--id", "nope"}, 1, "nope"},
		{[]string{"client", "rotate-secret"}, 2, "--id"},
	} {
		code, stdout, stderr := runMain(t, env, tc.args...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.mention) {
			t.Errorf("%s: got exit %d, stdout %q, stderr %q; want %d and a message with %q",
				strings.Join(tc.args, " "), code, stdout, stderr, tc.code, tc.mention)
		}
	}

	// client rotate-secret prints a new secret, once.
	var rotated map[string]string
	decodeJSON(t, mustRun(t, env, "client", "rotate-secret", "--id", "my-app"), &rotated)
	if rotated["client_id"] != "my-app" || len(rotated["client_secret"]) < 43 || rotated["client_secret"] == *conf.ClientSecret {
		t.Errorf("client rotate-secret: got %v, want my-app with a new 256-bit secret", rotated)
	}

	var deleted map[string]any
	decodeJSON(t, mustRun(t, env, "client", "delete", "--id", "my-app"), &deleted)
	if deleted["client_id"] != "my-app" || deleted["deleted"] != true {
		t.Errorf("client delete: got %v", deleted)
	}
	code, stdout, stderr := runMain(t, env, "client", "delete", "--id", "my-app")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "my-app") {
		t.Errorf("deleting a missing client: got exit %d, stdout %q, stderr %q; want 1 and a message", code, stdout, stderr)
	}
	decodeJSON(t, mustRun(t, env, "client", "list"), &list)
	if len(list) != 1 || list[0].ClientID != pub.ClientID {
		t.Errorf("client list after delete: got %+v, want only %s", list, pub.ClientID)
	}

	// A client may be allowed manage_permissions, the scope of the permission routes.
	var manager clientJSON
	decodeJSON(t, mustRun(t, env, "client", "create", "--id", "manager", "--grant-type", "client_credentials",
		"--scope", "manage_permissions"), &manager)
	if !slices.Equal(manager.Scopes, []string{"manage_permissions"}) || !slices.Equal(manager.GrantTypes, []string{"client_credentials"}) {
		t.Errorf("manager client: got scopes %v and grant types %v", manager.Scopes, manager.GrantTypes)
	}

	var user map[string]any
	decodeJSON(t, mustRun(t, env, "user", "create", "--email", "Admin@Example.com", "--password", "correct horse battery staple",
		"--name", "Ada Admin", "--role", "admin", "--verified"), &user)
	if id, _ := user["id"].(string); id == "" || user["name"] != "Ada Admin" || user["role"] != "admin" || user["emailVerified"] != true {
		t.Errorf("user create: got %v", user)
	}
	if _, ok := user["password"]; ok {
		t.Errorf("user create prints a password field: %v", user)
	}

	// The PIN gate of one user: on at creation, off and on again with user update (by email
	// or id); a bad value or an unknown user is refused.
	var pinUser map[string]any
	decodeJSON(t, mustRun(t, env, "user", "create", "--email", "pin@example.com", "--password", "correct horse battery staple",
		"--name", "Pat Pin", "--require-pin"), &pinUser)
	if pinUser["requirePin"] != true {
		t.Errorf("user create --require-pin: got %v, want requirePin true", pinUser)
	}
	var updated map[string]any
	decodeJSON(t, mustRun(t, env, "user", "update", "--user", "PIN@example.com", "--require-pin=false"), &updated)
	if updated["id"] != pinUser["id"] || updated["requirePin"] != false {
		t.Errorf("user update --require-pin=false: got %v, want %v with requirePin false", updated, pinUser["id"])
	}
	decodeJSON(t, mustRun(t, env, "user", "update", "--user", pinUser["id"].(string), "--require-pin", "true"), &updated)
	if updated["requirePin"] != true {
		t.Errorf("user update --require-pin true: got %v, want requirePin true", updated)
	}
	if user["requirePin"] != false {
		t.Errorf("user create without --require-pin: got %v, want requirePin false", user)
	}
	// --disabled disables the account and enables it again, together with --require-pin.
	decodeJSON(t, mustRun(t, env, "user", "update", "--user", "pin@example.com", "--disabled=true", "--require-pin=false"), &updated)
	if updated["status"] != "disabled" || updated["requirePin"] != false {
		t.Errorf("user update --disabled=true --require-pin=false: got %v, want status disabled and requirePin false", updated)
	}
	decodeJSON(t, mustRun(t, env, "user", "update", "--user", "pin@example.com", "--disabled=false"), &updated)
	if updated["status"] != "active" {
		t.Errorf("user update --disabled=false: got %v, want status active", updated)
	}
	// An operator sets and verifies the phone number, which users cannot verify themselves.
	decodeJSON(t, mustRun(t, env, "user", "update", "--user", "pin@example.com", "--phone-number", "+14155550100",
		"--phone-number-verified=true"), &updated)
	if profile, _ := updated["profile"].(map[string]any); profile["phone_number"] != "+14155550100" || profile["phone_number_verified"] != true {
		t.Errorf("user update --phone-number --phone-number-verified: got %v", updated)
	}
	for _, args := range [][]string{
		{"user", "update", "--user", "pin@example.com", "--phone-number-verified", "maybe"},
		{"user", "update", "--user", "pin@example.com", "--require-pin", "maybe"},
		{"user", "update", "--user", "pin@example.com", "--disabled", "maybe"},
		{"user", "update", "--user", "pin@example.com"},
		{"user", "update", "--require-pin=true"},
	} {
		if code, stdout, stderr := runMain(t, env, args...); code != 2 || stdout != "" || stderr == "" {
			t.Errorf("%s: got exit %d, stdout %q, stderr %q; want 2 and a usage message", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	code, stdout, stderr = runMain(t, env, "user", "update", "--user", "nobody@example.com", "--require-pin=true")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "nobody@example.com") {
		t.Errorf("updating a missing user: got exit %d, stdout %q, stderr %q; want 1 and a message naming it", code, stdout, stderr)
	}

	// user delete by email; then the user is gone and its address free.
	decodeJSON(t, mustRun(t, env, "user", "delete", "--user", "PIN@example.com"), &deleted)
	if deleted["user"] != "PIN@example.com" || deleted["deleted"] != true {
		t.Errorf("user delete: got %v", deleted)
	}
	code, stdout, stderr = runMain(t, env, "user", "delete", "--user", pinUser["id"].(string))
	if code != 1 || stdout != "" || !strings.Contains(stderr, pinUser["id"].(string)) {
		t.Errorf("deleting a missing user: got exit %d, stdout %q, stderr %q; want 1 and a message naming it", code, stdout, stderr)
	}
	if code, _, stderr := runMain(t, env, "user", "delete"); code != 2 || !strings.Contains(stderr, "--user") {
		t.Errorf("user delete without --user: got exit %d, stderr %q; want 2 and a usage message", code, stderr)
	}
	mustRun(t, env, "user", "create", "--email", "pin@example.com", "--password", "correct horse battery staple")

	var keys []map[string]any
	decodeJSON(t, mustRun(t, env, "keys", "rotate"), &keys)
	active := map[string]int{}
	for _, k := range keys {
		if kid, _ := k["kid"].(string); kid == "" {
			t.Errorf("key without kid: %v", k)
		}
		if _, retired := k["retired_at"]; !retired {
			active[k["alg"].(string)]++
		}
	}
	if active["RS256"] != 1 || active["ES256"] != 1 || active["EdDSA"] != 1 || len(keys) < 6 {
		t.Errorf("keys rotate: got %v, want one active key of each algorithm beside the retired ones", keys)
	}
}

// migrate with a secret proves the secret opens the stored keys: a wrong one fails before a
// server is ever started with it.
func TestMigrateChecksSecret(t *testing.T) {
	dsn := "sqlite:" + t.TempDir() + "/gh.db"
	right, wrong := strings.Repeat("r", 32), strings.Repeat("w", 32)
	if code, _, stderr := runMain(t, nil, "migrate", "--dsn", dsn, "--secret", right); code != 0 {
		t.Fatalf("migrate with the first secret: exit %d, want 0; stderr:\n%s", code, stderr)
	}
	if code, _, stderr := runMain(t, nil, "migrate", "--dsn", dsn, "--secret", right); code != 0 {
		t.Fatalf("migrate again with the same secret: exit %d, want 0; stderr:\n%s", code, stderr)
	}
	code, _, stderr := runMain(t, nil, "migrate", "--dsn", dsn, "--secret", wrong)
	if code != 1 || !strings.Contains(stderr, "cannot be decrypted") {
		t.Errorf("migrate with another secret: exit %d, stderr %q; want exit 1 saying the keys cannot be decrypted", code, stderr)
	}
}
