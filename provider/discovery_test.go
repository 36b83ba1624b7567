package provider_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// issuerPlaceholder stands for the test server's URL in golden files.
const issuerPlaceholder = "{{issuer}}"

func TestDiscovery(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		r := e.call(t, http.MethodGet, "/.well-known/openid-configuration", nil, nil)
		if r.status != http.StatusOK {
			t.Fatalf("discovery: got %s, want 200", r)
		}
		if got := r.header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
			t.Errorf("Content-Type: got %q, want application/json", got)
		}
		doc := r.body

		t.Run("endpoints are under the issuer", func(t *testing.T) {
			for name, path := range map[string]string{
				"issuer":                        "",
				"authorization_endpoint":        "/api/oauth/authorize",
				"token_endpoint":                "/api/oauth/token",
				"userinfo_endpoint":             "/api/oauth/userinfo",
				"jwks_uri":                      "/.well-known/jwks.json",
				"revocation_endpoint":           "/api/oauth/revoke",
				"introspection_endpoint":        "/api/oauth/introspect",
				"end_session_endpoint":          "/api/oauth/logout",
				"device_authorization_endpoint": "/api/oauth/device/code",
			} {
				if got, want := doc[name], e.issuer+path; got != want {
					t.Errorf("%s: got %v, want %q", name, got, want)
				}
			}
		})

		t.Run("advertises what works", func(t *testing.T) {
			for _, tc := range []struct {
				field string
				want  []string
				exact bool
			}{
				{field: "response_types_supported", want: []string{"code"}},
				{field: "subject_types_supported", want: []string{"public"}},
				{field: "id_token_signing_alg_values_supported", want: []string{"RS256", "ES256"}},
				{field: "code_challenge_methods_supported", want: []string{"S256"}, exact: true},
				{field: "token_endpoint_auth_methods_supported", want: []string{"client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"}, exact: true},
				{field: "revocation_endpoint_auth_methods_supported", want: []string{"client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"}, exact: true},
				{field: "introspection_endpoint_auth_methods_supported", want: []string{"client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"}, exact: true},
				{field: "token_endpoint_auth_signing_alg_values_supported", want: []string{"ES256", "RS256", "PS256", "EdDSA", "HS256"}},
				{field: "introspection_endpoint_auth_signing_alg_values_supported", want: []string{"ES256", "RS256", "HS256"}},
				{field: "revocation_endpoint_auth_signing_alg_values_supported", want: []string{"ES256", "RS256", "HS256"}},
				{field: "request_object_signing_alg_values_supported", want: []string{"ES256", "RS256", "PS256"}},
				{field: "scopes_supported", want: []string{"openid", "profile", "email", "offline_access", "manage_permissions"}},
				{field: "grant_types_supported", want: []string{"authorization_code", "refresh_token", "client_credentials",
					"urn:ietf:params:oauth:grant-type:device_code"}},
				{field: "response_modes_supported", want: []string{"query", "form_post"}},
				{field: "claims_supported", want: []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce",
					"at_hash", "azp", "email", "email_verified", "name"}},
			} {
				got := stringList(t, doc, tc.field)
				for _, w := range tc.want {
					if !slices.Contains(got, w) {
						t.Errorf("%s: got %v, want it to contain %q", tc.field, got, w)
					}
				}
				if tc.exact && !slices.Equal(got, tc.want) {
					t.Errorf("%s: got %v, want exactly %v", tc.field, got, tc.want)
				}
			}
			if got := doc["authorization_response_iss_parameter_supported"]; got != true {
				t.Errorf("authorization_response_iss_parameter_supported: got %v, want true", got)
			}
			if got := doc["request_parameter_supported"]; got != true {
				t.Errorf("request_parameter_supported: got %v, want true", got)
			}
			if got := doc["request_uri_parameter_supported"]; got == true {
				t.Errorf("request_uri_parameter_supported: got true, want it not advertised (only PAR's request_uri values are accepted)")
			}
			for _, field := range []string{"request_object_signing_alg_values_supported", "token_endpoint_auth_signing_alg_values_supported"} {
				if got := stringList(t, doc, field); slices.Contains(got, "none") {
					t.Errorf("%s: got %v, want no none", field, got)
				}
			}
		})

		t.Run("go-oidc accepts the document", func(t *testing.T) {
			op, err := oidc.NewProvider(e.ctx, e.issuer)
			if err != nil {
				t.Fatalf("oidc.NewProvider: %v", err)
			}
			if got, want := op.Endpoint().TokenURL, e.issuer+"/api/oauth/token"; got != want {
				t.Errorf("token URL: got %q, want %q", got, want)
			}
		})

		t.Run("matches the golden file", func(t *testing.T) {
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, []byte(strings.ReplaceAll(r.raw, e.issuer, issuerPlaceholder)), "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			golden(t, "discovery.golden.json", pretty.Bytes())
		})

		t.Run("JWKS publishes unique public keys", func(t *testing.T) {
			keys := e.jwks(t)
			seen := map[string]bool{}
			algs := map[string]bool{}
			for _, k := range keys {
				kid, _ := k["kid"].(string)
				if kid == "" || seen[kid] {
					t.Errorf("kid %q: want a unique, non-empty kid", kid)
				}
				seen[kid] = true
				alg, _ := k["alg"].(string)
				algs[alg] = true
				if got := k["use"]; got != "sig" {
					t.Errorf("key %s use: got %v, want sig", kid, got)
				}
				for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
					if _, ok := k[private]; ok {
						t.Errorf("key %s publishes the private member %q", kid, private)
					}
				}
			}
			for _, alg := range []string{"RS256", "ES256"} {
				if !algs[alg] {
					t.Errorf("JWKS: got algorithms %v, want one %s key", algs, alg)
				}
			}
		})
	})
}

// stringList reads a JSON array of strings from doc.
func stringList(t *testing.T, doc map[string]any, field string) []string {
	t.Helper()
	raw, ok := doc[field].([]any)
	if !ok {
		t.Fatalf("%s: got %#v, want an array", field, doc[field])
	}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("%s: got %#v, want strings", field, raw)
		}
		out = append(out, s)
	}
	return out
}

// fixtures is the repository's testdata folder, shared by every package's tests.
const fixtures = "../testdata"

// golden compares got with the fixture name, or rewrites the file under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(fixtures, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the served document (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
