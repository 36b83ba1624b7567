package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestClientAuthFlags: client create and client update take --auth-method, --jwks FILE,
// --jwks-uri and --request-object-alg; a private_key_jwt client has no secret, and a switch
// to client_secret_jwt prints the new secret.
func TestClientAuthFlags(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dsn := b.DSN(t)
			env := map[string]string{"GATEHOUSE_DSN": dsn}
			if _, isFile := sqlitePath(dsn); !isFile {
				env["GATEHOUSE_SECRET"] = strings.Repeat("k", 32)
			}
			mustRun(t, env, "migrate")
			jwksFile := filepath.Join(t.TempDir(), "jwks.json")
			jwks := `{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"k1","use":"sig"}]}`
			if err := os.WriteFile(jwksFile, []byte(jwks), 0o600); err != nil {
				t.Fatal(err)
			}
			type authJSON struct {
				ClientID         string         `json:"client_id"`
				ClientSecret     *string        `json:"client_secret"`
				AuthMethod       string         `json:"token_endpoint_auth_method"`
				JWKSURI          string         `json:"jwks_uri"`
				JWKS             map[string]any `json:"jwks"`
				RequestObjectAlg string         `json:"request_object_signing_alg"`
			}
			var pk authJSON
			decodeJSON(t, mustRun(t, env, "client", "create", "--id", "pk", "--redirect-uri", "https://pk.example/cb",
				"--auth-method", "private_key_jwt", "--jwks", jwksFile, "--request-object-alg", "ES256"), &pk)
			if pk.AuthMethod != "private_key_jwt" || pk.JWKS == nil || pk.RequestObjectAlg != "ES256" || pk.ClientSecret != nil {
				t.Errorf("client create private_key_jwt: got %+v, want the method, the JWKS, ES256 and no secret", pk)
			}
			var sj authJSON
			decodeJSON(t, mustRun(t, env, "client", "update", "--id", "pk", "--auth-method", "client_secret_jwt", "--jwks=",
				"--jwks-uri", "https://pk.example/jwks.json"), &sj)
			if sj.AuthMethod != "client_secret_jwt" || sj.JWKS != nil || sj.JWKSURI != "https://pk.example/jwks.json" ||
				sj.ClientSecret == nil || len(*sj.ClientSecret) < 32 {
				t.Errorf("client update to client_secret_jwt: got %+v, want the method, the JWKS URI and a new secret", sj)
			}
			var rotated map[string]string
			decodeJSON(t, mustRun(t, env, "client", "rotate-secret", "--id", "pk"), &rotated)
			if len(rotated["client_secret"]) < 32 {
				t.Errorf("rotate-secret of a client_secret_jwt client: got %v, want a secret", rotated)
			}
			for _, tc := range []struct {
				args []string
				code int
				want string
			}{
				{[]string{"client", "create", "--id", "x", "--grant-type", "client_credentials", "--auth-method", "private_key_jwt"}, 1, "JWKS"},
				{[]string{"client", "create", "--id", "x", "--grant-type", "client_credentials", "--jwks", filepath.Join(t.TempDir(), "missing.json")}, 2, "--jwks"},
				{[]string{"client", "update", "--id", "pk", "--auth-method", "none"}, 1, "none"},
			} {
				code, _, stderr := runMain(t, env, tc.args...)
				if code != tc.code || !strings.Contains(stderr, tc.want) {
					t.Errorf("%s: got exit %d and %q, want %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
				}
			}
		})
	}
}
